package accountable_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/accountablework/accountable"
)

func TestStudioEstimateRules(t *testing.T) {
	cases := []struct {
		name string
		req  accountable.StudioEstimateRequest
		want []string
	}{
		{"format alone", accountable.StudioEstimateRequest{Format: accountable.StudioBlogPost}, nil},
		{"missing format", accountable.StudioEstimateRequest{}, []string{"/format"}},
		{"unknown format", accountable.StudioEstimateRequest{Format: "novel"}, []string{"/format"}},
		{"units at the minimum", accountable.StudioEstimateRequest{Format: accountable.StudioBlogPost, Units: ptr(int64(100))}, nil},
		{"units under the format's minimum", accountable.StudioEstimateRequest{Format: accountable.StudioBlogPost, Units: ptr(int64(99))}, []string{"/units"}},
		{"units at the format's maximum", accountable.StudioEstimateRequest{Format: accountable.StudioSocialPost, Units: ptr(int64(50))}, nil},
		{"units over the format's maximum", accountable.StudioEstimateRequest{Format: accountable.StudioSocialPost, Units: ptr(int64(51))}, []string{"/units"}},
		{"units 0", accountable.StudioEstimateRequest{Format: accountable.StudioSocialPost, Units: ptr(int64(0))}, []string{"/units"}},
		{"units beyond any format", accountable.StudioEstimateRequest{Format: accountable.StudioBlogPost, Units: ptr(int64(5001))}, []string{"/units"}},
		{"seo on a blog post", accountable.StudioEstimateRequest{Format: accountable.StudioBlogPost, Options: &accountable.StudioOptions{SEO: true}}, nil},
		{"seo on a video script", accountable.StudioEstimateRequest{Format: accountable.StudioVideoScript, Options: &accountable.StudioOptions{SEO: true}},
			[]string{"/options/seo"}},
		{"six revisions", accountable.StudioEstimateRequest{Format: accountable.StudioBlogPost, Options: &accountable.StudioOptions{Revisions: 6}},
			[]string{"/options/revisions"}},
		{"negative images", accountable.StudioEstimateRequest{Format: accountable.StudioBlogPost, Options: &accountable.StudioOptions{Images: -1}},
			[]string{"/options/images"}},
		{"21 images", accountable.StudioEstimateRequest{Format: accountable.StudioBlogPost, Options: &accountable.StudioOptions{Images: 21}},
			[]string{"/options/images"}},
		{"11 translations", accountable.StudioEstimateRequest{Format: accountable.StudioBlogPost, Options: &accountable.StudioOptions{Translations: 11}},
			[]string{"/options/translations"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := issuePaths(c.req.Validate()); !slices.Equal(got, c.want) {
				t.Fatalf("issues at %q, want %q (%v)", got, c.want, c.req.Validate())
			}
		})
	}
}

type line struct {
	code              accountable.StudioLineItemCode
	quantity, credits int64
}

// Estimates worked out by hand from the credit table documented in studio.go.
func TestStudioEstimate(t *testing.T) {
	cases := []struct {
		name  string
		req   accountable.StudioEstimateRequest
		units int64
		lines []line
		total int64
	}{
		// 800 words: 8 blocks × 3 = 24, + base 10: subtotal 34.
		{"blog post at its default length", accountable.StudioEstimateRequest{Format: accountable.StudioBlogPost}, 800,
			[]line{{"base", 1, 10}, {"length", 8, 24}}, 34},
		// 801 words are 9 blocks.
		{"a started block counts", accountable.StudioEstimateRequest{Format: accountable.StudioBlogPost, Units: ptr(int64(801))}, 801,
			[]line{{"base", 1, 10}, {"length", 9, 27}}, 37},
		// Subtotal 34: research ceil(8.5) = 9, seo ceil(5.1) = 6, 2 revisions of ceil(6.8) = 7, 2 images of 8,
		// 1 translation ceil(13.6) = 14; 93 so far, rush ceil(46.5) = 47.
		{"every option", accountable.StudioEstimateRequest{Format: accountable.StudioBlogPost, Options: &accountable.StudioOptions{
			Research: true, SEO: true, Revisions: 2, Images: 2, Translations: 1, Rush: true}}, 800,
			[]line{{"base", 1, 10}, {"length", 8, 24}, {"research", 1, 9}, {"seo", 1, 6}, {"revisions", 2, 14}, {"images", 2, 16},
				{"translations", 1, 14}, {"rush", 1, 47}}, 140},
		// 5 emails: 6 + 20 = 26; 3 translations of ceil(10.4) = 11.
		{"email sequence with translations", accountable.StudioEstimateRequest{Format: accountable.StudioEmailSequence, Units: ptr(int64(5)),
			Options: &accountable.StudioOptions{Translations: 3}}, 5,
			[]line{{"base", 1, 6}, {"length", 5, 20}, {"translations", 3, 33}}, 59},
		// 1 post: 2 + 2 = 4; rush ceil(2) = 2.
		{"one rushed post", accountable.StudioEstimateRequest{Format: accountable.StudioSocialPost, Units: ptr(int64(1)),
			Options: &accountable.StudioOptions{Rush: true}}, 1,
			[]line{{"base", 1, 2}, {"length", 1, 2}, {"rush", 1, 2}}, 6},
		// Zero-valued options add no lines.
		{"options all off", accountable.StudioEstimateRequest{Format: accountable.StudioVideoScript, Options: &accountable.StudioOptions{}}, 3,
			[]line{{"base", 1, 10}, {"length", 3, 15}}, 25},
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
			var got []line
			for _, l := range est.LineItems {
				got = append(got, line{l.Code, l.Quantity, l.Credits})
			}
			if !slices.Equal(got, c.lines) || est.TotalCredits != c.total || est.Units != c.units || est.Format != c.req.Format {
				t.Fatalf("estimate %+v\nlines %v, want %v; total %d, want %d", est, got, c.lines, est.TotalCredits, c.total)
			}
		})
	}
}

// Over every format and a spread of options: each line is quantity × unit_credits, the
// total is their sum, the id follows the request with its defaults applied, and the same
// request gives the same estimate.
func TestStudioEstimateInvariants(t *testing.T) {
	idPattern := regexp.MustCompile(`^est_[a-f0-9]{24}$`)
	ids := map[string]string{}
	for _, rate := range accountable.StudioCreditTable {
		for _, opts := range []*accountable.StudioOptions{nil, {Research: true}, {Revisions: 5, Images: 20, Translations: 10, Rush: true},
			{SEO: rate.SEO, Rush: true}} {
			for _, units := range []*int64{nil, ptr(rate.MinUnits), ptr(rate.MaxUnits)} {
				req := accountable.StudioEstimateRequest{Format: rate.Format, Units: units, Options: opts}
				if err := req.Validate(); err != nil {
					t.Fatalf("%+v: %v", req, err)
				}
				est, err := req.Estimate()
				if err != nil {
					t.Fatal(err)
				}
				var sum int64
				for _, l := range est.LineItems {
					if l.Credits != l.Quantity*l.UnitCredits || l.Quantity < 1 || l.Description == "" {
						t.Fatalf("%s: line %+v", rate.Format, l)
					}
					sum += l.Credits
				}
				if sum != est.TotalCredits || est.ContentSubtotal != est.LineItems[0].Credits+est.LineItems[1].Credits ||
					!idPattern.MatchString(est.EstimateID) || est.CreditTableVersion != accountable.StudioCreditTableVersion {
					t.Fatalf("%s: estimate %+v", rate.Format, est)
				}
				again, _ := req.Estimate()
				a, _ := json.Marshal(est)
				b, _ := json.Marshal(again)
				if string(a) != string(b) {
					t.Fatalf("not deterministic:\n%s\n%s", a, b)
				}
				key := string(rate.Format) + "/" + string(mustJSON(t, est.Options)) + "/" + strconv.FormatInt(est.Units, 10)
				if prev, ok := ids[key]; ok && prev != est.EstimateID {
					t.Fatalf("%s: the same request with its defaults applied has two ids", key)
				}
				ids[key] = est.EstimateID
			}
		}
	}
	// The default length is the same request as that length written out.
	a, _ := accountable.StudioEstimateRequest{Format: accountable.StudioNewsletter}.Estimate()
	b, _ := accountable.StudioEstimateRequest{Format: accountable.StudioNewsletter, Units: ptr(int64(600)), Options: &accountable.StudioOptions{}}.Estimate()
	c, _ := accountable.StudioEstimateRequest{Format: accountable.StudioNewsletter, Units: ptr(int64(700))}.Estimate()
	if a.EstimateID != b.EstimateID || a.EstimateID == c.EstimateID {
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

// The showcase ships about a dozen valid examples with unique ids; pages are exact slices
// of it in order.
func TestStudioShowcase(t *testing.T) {
	all, err := accountable.ShowcasePage(1000, 0)
	if err != nil {
		t.Fatal(err)
	}
	if all.Total < 10 || len(all.Examples) != all.Total || all.HasMore {
		t.Fatalf("showcase: %d of %d, hasMore %v", len(all.Examples), all.Total, all.HasMore)
	}
	formats := map[accountable.StudioFormat]bool{}
	for _, ex := range all.Examples {
		est, err := ex.Request.Estimate()
		if err != nil || ex.TotalCredits != est.TotalCredits || ex.TotalCredits <= 0 || ex.Title == "" || ex.Summary == "" || ex.Tags == nil {
			t.Fatalf("example %+v: %v", ex, err)
		}
		formats[ex.Format] = true
	}
	if len(formats) != len(accountable.StudioCreditTable) {
		t.Fatalf("the showcase covers %d of %d formats", len(formats), len(accountable.StudioCreditTable))
	}
	n := all.Total
	for _, c := range []struct{ limit, offset, want int }{
		{5, 0, 5}, {5, 5, 5}, {5, 10, n - 10}, {n, 0, n}, {n - 1, 1, n - 1}, {1, n - 1, 1}, {1, n, 0}, {6, n + 100, 0}, {0, 0, 0},
	} {
		page, err := accountable.ShowcasePage(c.limit, c.offset)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Examples) != c.want || page.Total != n || page.HasMore != (c.offset+len(page.Examples) < n) {
			t.Fatalf("limit %d offset %d: %d examples, total %d, hasMore %v", c.limit, c.offset, len(page.Examples), page.Total, page.HasMore)
		}
		for i, ex := range page.Examples {
			if ex.ID != all.Examples[c.offset+i].ID {
				t.Fatalf("limit %d offset %d: example %d is %s", c.limit, c.offset, i, ex.ID)
			}
		}
	}
	// Pages are copies: changing one does not change the next.
	p, _ := accountable.ShowcasePage(1, 0)
	p.Examples[0].Title = "changed"
	if q, _ := accountable.ShowcasePage(1, 0); q.Examples[0].Title == "changed" {
		t.Fatal("a page shares the showcase")
	}
}
