package workload_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/workload"
)

func ptr[T any](v T) *T { return &v }

// issuePaths are the paths of a validation error's issues, as the root's tests read them.
func issuePaths(err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	for _, is := range err.(*accountable.Error).Details["issues"].(accountable.Issues) {
		out = append(out, is.Path)
	}
	return out
}

func studioReq(prompt string, types ...workload.StudioContentType) workload.StudioEstimateRequest {
	return workload.StudioEstimateRequest{Prompt: prompt, ContentTypes: types}
}

func TestStudioEstimateRules(t *testing.T) {
	with := func(f func(*workload.StudioEstimateRequest)) workload.StudioEstimateRequest {
		r := studioReq("Launch week posts", workload.StudioPost)
		f(&r)
		return r
	}
	cases := []struct {
		name string
		req  workload.StudioEstimateRequest
		want []string
	}{
		{"prompt and one type", with(func(*workload.StudioEstimateRequest) {}), nil},
		{"every type", studioReq("x", workload.StudioContentTypes...), nil},
		{"every optional member", with(func(r *workload.StudioEstimateRequest) {
			r.VariantCount, r.BrandURL, r.BrandID, r.Platform = ptr(int64(10)), ptr("https://brand.example/about"), ptr("brand-1"), ptr("instagram")
		}), nil},
		{"no prompt", with(func(r *workload.StudioEstimateRequest) { r.Prompt = "" }), []string{"/prompt"}},
		{"prompt at its maximum", with(func(r *workload.StudioEstimateRequest) { r.Prompt = strings.Repeat("é", 4000) }), nil},
		{"prompt too long", with(func(r *workload.StudioEstimateRequest) { r.Prompt = strings.Repeat("a", 4001) }), []string{"/prompt"}},
		{"no content types", with(func(r *workload.StudioEstimateRequest) { r.ContentTypes = nil }), []string{"/contentTypes"}},
		{"empty content types", with(func(r *workload.StudioEstimateRequest) { r.ContentTypes = []workload.StudioContentType{} }),
			[]string{"/contentTypes"}},
		{"unknown content type", with(func(r *workload.StudioEstimateRequest) {
			r.ContentTypes = []workload.StudioContentType{"post", "novel"}
		}),
			[]string{"/contentTypes/1"}},
		{"repeated content type", with(func(r *workload.StudioEstimateRequest) {
			r.ContentTypes = []workload.StudioContentType{"post", "story", "post"}
		}), []string{"/contentTypes/2"}},
		{"seven content types", with(func(r *workload.StudioEstimateRequest) {
			r.ContentTypes = append(slices.Clone(workload.StudioContentTypes), workload.StudioPost)
		}), []string{"/contentTypes", "/contentTypes/6"}},
		{"zero variants", with(func(r *workload.StudioEstimateRequest) { r.VariantCount = ptr(int64(0)) }), []string{"/variantCount"}},
		{"eleven variants", with(func(r *workload.StudioEstimateRequest) { r.VariantCount = ptr(int64(11)) }), []string{"/variantCount"}},
		{"brandUrl not a URL", with(func(r *workload.StudioEstimateRequest) { r.BrandURL = ptr("brand dot com") }), []string{"/brandUrl"}},
		{"brandUrl without host", with(func(r *workload.StudioEstimateRequest) { r.BrandURL = ptr("https:///about") }), []string{"/brandUrl"}},
		{"brandUrl of another scheme", with(func(r *workload.StudioEstimateRequest) { r.BrandURL = ptr("ftp://brand.example/") }),
			[]string{"/brandUrl"}},
		{"brandUrl empty", with(func(r *workload.StudioEstimateRequest) { r.BrandURL = ptr("") }), []string{"/brandUrl"}},
		{"brandId empty", with(func(r *workload.StudioEstimateRequest) { r.BrandID = ptr("") }), []string{"/brandId"}},
		{"platform too long", with(func(r *workload.StudioEstimateRequest) { r.Platform = ptr(strings.Repeat("p", 101)) }), []string{"/platform"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := issuePaths(c.req.Validate()); !slices.Equal(got, c.want) {
				t.Fatalf("issues at %q, want %q (%v)", got, c.want, c.req.Validate())
			}
		})
	}
}

// Estimates worked out by hand from the credit table documented in studio.go.
func TestStudioEstimate(t *testing.T) {
	type want struct {
		brandRequired bool
		brandCredits  int64
		brandCx       workload.StudioBrandComplexity
		calRounds     int64
		explRounds    int64
		compCx        workload.StudioCompositionComplexity
		compCredits   int64
		multiplier    float64
		outputs       string // type:count×each=subtotal, in the table's order
		total         int64
		price         float64
	}
	cases := []struct {
		name string
		req  workload.StudioEstimateRequest
		want want
	}{
		// One post: outputs 4; calibration 1 round (5); exploration 1 round (3); basic: 0. Total 12.
		{"one post", studioReq("A post", workload.StudioPost),
			want{false, 0, "simple", 1, 1, "basic", 0, 1, "post:1x4=4", 12, 1.2}},
		// Video and post, three variants, asked in the other order: outputs post 12 + video 72 = 84;
		// calibration 5; exploration 3 rounds = 9; 281 characters: standard, ceil(84 × 0.25) = 21. Total 119.
		{"two types, variants, standard prompt", workload.StudioEstimateRequest{Prompt: strings.Repeat("b", 281),
			ContentTypes: []workload.StudioContentType{"video", "post"}, VariantCount: ptr(int64(3))},
			want{false, 0, "moderate", 1, 3, "standard", 21, 1.25, "post:3x4=12 video:3x24=72", 119, 11.9}},
		// A brand to read with four types: complex, 30; calibration 2 rounds (10); exploration 3;
		// outputs carousel 12 + story 5 + banner 6 + thumbnail 3 = 26; 1001 characters: premium,
		// ceil(26 × 0.5) = 13. Total 82.
		{"brand ingestion, premium prompt", workload.StudioEstimateRequest{Prompt: strings.Repeat("c", 1001),
			ContentTypes: []workload.StudioContentType{"thumbnail", "banner", "story", "carousel"}, BrandURL: ptr("https://brand.example")},
			want{true, 30, "complex", 2, 1, "premium", 13, 1.5, "carousel:1x12=12 story:1x5=5 banner:1x6=6 thumbnail:1x3=3", 82, 8.2}},
		// brandId alone names a known brand: no ingestion. Two types: moderate (not charged).
		// Outputs story 10 + banner 12 = 22; calibration 5; exploration 6; 280 characters: basic. Total 33.
		{"brandId alone", workload.StudioEstimateRequest{Prompt: strings.Repeat("d", 280),
			ContentTypes: []workload.StudioContentType{"story", "banner"}, VariantCount: ptr(int64(2)), BrandID: ptr("brand-1"), Platform: ptr("tiktok")},
			want{false, 0, "moderate", 1, 2, "basic", 0, 1, "story:2x5=10 banner:2x6=12", 33, 3.3}},
		// 1000 characters is still standard: outputs 24 × 10 = 240, ceil(240 × 0.25) = 60; a
		// brand for one type: simple 10; calibration 10; exploration 30. Total 350.
		{"ten videos with a brand", workload.StudioEstimateRequest{Prompt: strings.Repeat("e", 1000),
			ContentTypes: []workload.StudioContentType{"video"}, VariantCount: ptr(int64(10)), BrandURL: ptr("http://brand.example/x")},
			want{true, 10, "simple", 2, 10, "standard", 60, 1.25, "video:10x24=240", 350, 35}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.req.Validate(); err != nil {
				t.Fatal(err)
			}
			est, err := c.req.Estimate()
			if err != nil {
				t.Fatal(err)
			}
			b := est.Breakdown
			var outs []string
			for _, o := range b.Outputs {
				outs = append(outs, string(o.Type)+":"+itoa(o.Count)+"x"+itoa(o.CreditsEach)+"="+itoa(o.Subtotal))
			}
			got := want{b.BrandIngestion.Required, b.BrandIngestion.Credits, b.BrandIngestion.Complexity, b.Calibration.Rounds,
				b.Exploration.Rounds, b.Composition.Complexity, b.Composition.Credits, b.Composition.Multiplier, strings.Join(outs, " "),
				est.TotalCredits, est.EstimatedPrice.Amount}
			if got != c.want || b.Calibration.Credits != 5*b.Calibration.Rounds || b.Exploration.Credits != 3*b.Exploration.Rounds ||
				est.EstimatedPrice.Currency != "usd" || est.RequiresAuth || est.ExpiresAt != nil || est.AuthRedirectURL != nil {
				t.Fatalf("estimate %+v\n got %+v\nwant %+v", est, got, c.want)
			}
		})
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// Over every content type and a spread of requests: the total is the sum of the lines,
// the id follows the request (content types in any order are the same request), and the
// same request gives the same bytes.
func TestStudioEstimateInvariants(t *testing.T) {
	idPattern := regexp.MustCompile(`^est_[a-f0-9]{24}$`)
	ids := map[string]string{}
	for i, ct := range workload.StudioContentTypes {
		for _, req := range []workload.StudioEstimateRequest{
			studioReq("p", ct),
			{Prompt: strings.Repeat("q", 500), ContentTypes: workload.StudioContentTypes[:i+1], VariantCount: ptr(int64(10))},
			{Prompt: strings.Repeat("r", 4000), ContentTypes: workload.StudioContentTypes[i:], BrandURL: ptr("https://b.example")},
		} {
			if err := req.Validate(); err != nil {
				t.Fatalf("%+v: %v", req, err)
			}
			est, err := req.Estimate()
			if err != nil {
				t.Fatal(err)
			}
			b := est.Breakdown
			sum := b.BrandIngestion.Credits + b.Calibration.Credits + b.Exploration.Credits + b.Composition.Credits
			for _, o := range b.Outputs {
				if o.Subtotal != o.Count*o.CreditsEach || o.CreditsEach <= 0 {
					t.Fatalf("output %+v", o)
				}
				sum += o.Subtotal
			}
			if sum != est.TotalCredits || !idPattern.MatchString(est.EstimateID) || est.CreditTableVersion != workload.StudioCreditTableVersion ||
				len(est.Showcase) == 0 || len(est.Showcase) > 3 {
				t.Fatalf("estimate %+v", est)
			}
			for _, ex := range est.Showcase {
				if !slices.Contains(req.ContentTypes, ex.ContentType) {
					t.Fatalf("the estimate of %v shows an example of %s", req.ContentTypes, ex.ContentType)
				}
			}
			// Reversed content types: the same request.
			rev := req
			rev.ContentTypes = slices.Clone(req.ContentTypes)
			slices.Reverse(rev.ContentTypes)
			again, _ := rev.Estimate()
			if string(mustJSON(t, est)) != string(mustJSON(t, again)) {
				t.Fatalf("not deterministic:\n%s\n%s", mustJSON(t, est), mustJSON(t, again))
			}
			if prev, ok := ids[est.EstimateID]; ok && prev != string(mustJSON(t, req)) {
				t.Fatalf("two requests share the id %s", est.EstimateID)
			}
			ids[est.EstimateID] = string(mustJSON(t, req))
		}
	}
	// The default variant count is the same request as 1 written out; the platform, which
	// does not change the price, still makes another request.
	a, _ := studioReq("p", workload.StudioPost).Estimate()
	one := studioReq("p", workload.StudioPost)
	one.VariantCount = ptr(int64(1))
	b, _ := one.Estimate()
	other := studioReq("p", workload.StudioPost)
	other.Platform = ptr("linkedin")
	c, _ := other.Estimate()
	if a.EstimateID != b.EstimateID || a.EstimateID == c.EstimateID || a.TotalCredits != c.TotalCredits {
		t.Fatalf("ids %s %s %s", a.EstimateID, b.EstimateID, c.EstimateID)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The showcase ships a dozen examples with unique ids covering every content type; the
// filters select before paging, and pages are exact slices of the selection in order.
func TestStudioShowcase(t *testing.T) {
	page := func(f workload.StudioShowcaseFilter, limit, offset int) workload.StudioShowcase {
		t.Helper()
		p, err := workload.ShowcasePage(f, limit, offset)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	all := page(workload.StudioShowcaseFilter{}, 1000, 0)
	if all.Total < 10 || len(all.Examples) != all.Total || all.HasMore {
		t.Fatalf("showcase: %d of %d, hasMore %v", len(all.Examples), all.Total, all.HasMore)
	}
	types := map[workload.StudioContentType]bool{}
	for _, ex := range all.Examples {
		if ex.Title == "" || ex.Industry == "" || ex.Style == "" || ex.ThumbnailURL != nil || ex.PreviewURLs == nil || ex.QAScores.Overall <= 0 {
			t.Fatalf("example %+v", ex)
		}
		types[ex.ContentType] = true
	}
	if len(types) != len(workload.StudioContentTypes) {
		t.Fatalf("the showcase covers %d of %d content types", len(types), len(workload.StudioContentTypes))
	}
	n := all.Total
	for _, c := range []struct{ limit, offset, want int }{
		{5, 0, 5}, {5, 5, 5}, {5, 10, n - 10}, {n, 0, n}, {n - 1, 1, n - 1}, {1, n - 1, 1}, {1, n, 0}, {6, n + 100, 0}, {0, 0, 0},
	} {
		p := page(workload.StudioShowcaseFilter{}, c.limit, c.offset)
		if len(p.Examples) != c.want || p.Total != n || p.HasMore != (c.offset+len(p.Examples) < n) {
			t.Fatalf("limit %d offset %d: %d examples, total %d, hasMore %v", c.limit, c.offset, len(p.Examples), p.Total, p.HasMore)
		}
		for i, ex := range p.Examples {
			if ex.ID != all.Examples[c.offset+i].ID {
				t.Fatalf("limit %d offset %d: example %d is %s", c.limit, c.offset, i, ex.ID)
			}
		}
	}
	// Each filter against the same selection worked out from the whole showcase.
	video, yes, no := workload.StudioVideo, true, false
	for _, c := range []struct {
		name string
		f    workload.StudioShowcaseFilter
		keep func(workload.StudioExample) bool
	}{
		{"query in a title", workload.StudioShowcaseFilter{Query: "CAROUSEL"}, func(ex workload.StudioExample) bool {
			return strings.Contains(strings.ToLower(ex.Title), "carousel")
		}},
		{"query in an industry", workload.StudioShowcaseFilter{Query: "saa"}, func(ex workload.StudioExample) bool { return ex.Industry == "SaaS" }},
		{"query in a style", workload.StudioShowcaseFilter{Query: "editor"}, func(ex workload.StudioExample) bool { return ex.Style == "editorial" }},
		{"content type", workload.StudioShowcaseFilter{ContentType: &video}, func(ex workload.StudioExample) bool { return ex.ContentType == video }},
		{"industry", workload.StudioShowcaseFilter{Industry: "saas"}, func(ex workload.StudioExample) bool { return ex.Industry == "SaaS" }},
		{"industry is whole", workload.StudioShowcaseFilter{Industry: "saa"}, func(workload.StudioExample) bool { return false }},
		{"style", workload.StudioShowcaseFilter{Style: "Bold"}, func(ex workload.StudioExample) bool { return ex.Style == "bold" }},
		{"featured", workload.StudioShowcaseFilter{Featured: &yes}, func(ex workload.StudioExample) bool { return ex.Featured }},
		{"not featured", workload.StudioShowcaseFilter{Featured: &no}, func(ex workload.StudioExample) bool { return !ex.Featured }},
		{"together", workload.StudioShowcaseFilter{Query: "launch", Industry: "SaaS", Featured: &yes}, func(ex workload.StudioExample) bool {
			return ex.Industry == "SaaS" && ex.Featured && strings.Contains(strings.ToLower(ex.Title), "launch")
		}},
		{"nothing", workload.StudioShowcaseFilter{Query: "no such example"}, func(workload.StudioExample) bool { return false }},
	} {
		var want []string
		for _, ex := range all.Examples {
			if c.keep(ex) {
				want = append(want, ex.ID)
			}
		}
		var got []string
		for _, ex := range page(c.f, 1000, 0).Examples {
			got = append(got, ex.ID)
		}
		p := page(c.f, 1, 1)
		if !slices.Equal(got, want) || p.Total != len(want) || p.HasMore != (len(want) > 2) || (len(want) > 1) != (len(p.Examples) == 1) {
			t.Fatalf("%s: %v, want %v; page of 1 at 1: %+v", c.name, got, want, p)
		}
		if c.name != "nothing" && c.name != "industry is whole" && len(want) == 0 {
			t.Fatalf("%s selects nothing: the check cannot fail", c.name)
		}
	}
	// Pages are copies: changing one does not change the next.
	p := page(workload.StudioShowcaseFilter{}, 1, 0)
	p.Examples[0].Title = "changed"
	if q := page(workload.StudioShowcaseFilter{}, 1, 0); q.Examples[0].Title == "changed" {
		t.Fatal("a page shares the showcase")
	}
}
