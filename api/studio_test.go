package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/store/storetest"
	"github.com/accountablework/accountable/workload"
)

// The isolation matrix's lines of the area (isolation_test.go).
func init() {
	isolationCovers(isolationLines{
		notOfferedOperations: map[string]string{
			"checkoutStudio": "a self-hosted service sells nothing: 501 not_offered for every caller",
		},
	})
}

// POST /studio/checkout, which the public clients call to buy an estimate ({estimateId}):
// a self-hosted service sells nothing, so an authenticated request is answered 501
// not_offered from the catalogue (not 404 route_not_found), with an estimate or without,
// on both mounts, and nothing is written; without a key it is 401 like its neighbours.
// The document declares the refusal and no success; the access log does not count it as
// a server fault.
func TestStudioCheckoutIsNotOffered(t *testing.T) {
	e := newEnv(t, nil)
	ten := storetest.NewTenant(t, e.db)
	conn := storetest.Conn(t)
	tables := workspaceTables(t, conn)
	est := e.do(request{method: "POST", path: "/studio/estimate", key: ten.Key, body: map[string]any{"prompt": "A launch post", "contentTypes": []string{"post"}}})
	expect(t, est, http.StatusOK, "")
	before := workspaceState(t, conn, tables, ten.Principal.WorkspaceID)

	for _, root := range []string{api.V1Root, api.ClientRoot} {
		for _, body := range []any{map[string]any{"estimateId": est.body["estimateId"]}, map[string]any{}, nil} {
			r := e.do(request{method: "POST", path: "/studio/checkout", root: root, key: ten.Key, body: body})
			expect(t, r, http.StatusNotImplemented, accountable.ECodeNotOffered)
			if msg := r.errorObj()["message"].(string); !strings.Contains(msg, "Checkout is not offered here") ||
				!strings.HasSuffix(r.errorObj()["docsUrl"].(string), "/errors#not_offered") {
				t.Fatalf("%s with %v: %s", root, body, r.raw)
			}
		}
	}
	expect(t, e.do(request{method: "POST", path: "/studio/checkout", body: map[string]any{"estimateId": "est_0"}}), http.StatusUnauthorized, "")
	expect(t, e.do(request{method: "POST", path: "/studio/checkout", key: ten.Key, body: map[string]any{"estimateId": 7}}),
		http.StatusBadRequest, accountable.ECodeValidationFailed)
	if d := stateDiff(before, workspaceState(t, conn, tables, ten.Principal.WorkspaceID)); d != "" {
		t.Fatalf("a checkout changed the workspace:\n%s", d)
	}

	// The catalogue serves the code; the document declares it, and no success.
	catalogued := false
	for _, c := range e.do(request{method: "GET", path: "/errors"}).dataList() {
		spec := c.(map[string]any)
		catalogued = catalogued || spec["code"] == accountable.ECodeNotOffered && spec["status"] == 501.0
	}
	responses := fetchDocument(t, e).raw["paths"].(map[string]any)["/studio/checkout"].(map[string]any)["post"].(map[string]any)["responses"].(map[string]any)
	for status := range responses {
		if strings.HasPrefix(status, "2") {
			t.Fatalf("the document gives the checkout a success: %v", responses)
		}
	}
	if !catalogued || !strings.Contains(toJSON(responses["501"]), "not_offered") {
		t.Fatalf("not_offered catalogued %v; the checkout's answers %v", catalogued, responses)
	}

	// The access log: the refusal is the service doing what it says, not a fault.
	e.logsMu.Lock()
	logs := e.logs.String()
	e.logsMu.Unlock()
	seen := 0
	for _, line := range strings.Split(logs, "\n") {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) != nil || entry["msg"] != "request" || entry["status"] != 501.0 {
			continue
		}
		seen++
		if entry["level"] != "INFO" {
			t.Fatalf("a checkout logged as %v: %s", entry["level"], line)
		}
	}
	if seen != 6 {
		t.Fatalf("%d access lines of 501, want 6", seen)
	}
}

// POST /studio/estimate with exactly the bodies the public clients send (the Python
// client's create_estimate and the TypeScript createEstimate: prompt and contentTypes,
// then variantCount, brandUrl, brandId and platform only when given), answered in the shape
// they read, in data. The breakdown is worked out by hand from the credit table (workload/studio.go);
// the same request gets the same bytes, on both mounts, in any order of its content
// types; and nothing is written.
func TestStudioEstimateTakesTheClientsBody(t *testing.T) {
	e := newEnv(t, nil)
	ten := storetest.NewTenant(t, e.db)
	conn := storetest.Conn(t)
	tables := workspaceTables(t, conn)
	before := workspaceState(t, conn, tables, ten.Principal.WorkspaceID)
	estimate := func(root string, body any) response {
		t.Helper()
		return inData(t, e.do(request{method: "POST", path: "/studio/estimate", root: root, key: ten.Key, body: body}))
	}

	// create_estimate("Launch week for our new app", ["carousel", "post"], variant_count=2,
	// brand_url="https://brand.example/about", platform="instagram").
	full := map[string]any{"prompt": "Launch week for our new app", "contentTypes": []string{"carousel", "post"}, "variantCount": 2,
		"brandUrl": "https://brand.example/about", "platform": "instagram"}
	r := estimate("", full)
	expect(t, r, http.StatusOK, "")
	// Two types: a moderate brand, 20; calibration 2 rounds, 10; exploration 2 rounds, 6;
	// outputs carousel 2 × 12 + post 2 × 4 = 32; a short prompt is basic, 0. Total 68.
	want := `{"brandIngestion":{"complexity":"moderate","credits":20,"required":true},"calibration":{"credits":10,"rounds":2},` +
		`"composition":{"complexity":"basic","credits":0,"multiplier":1},"exploration":{"credits":6,"rounds":2},` +
		`"outputs":[{"count":2,"creditsEach":12,"subtotal":24,"type":"carousel"},{"count":2,"creditsEach":4,"subtotal":8,"type":"post"}]}`
	if toJSON(r.body["breakdown"]) != want || r.body["totalCredits"] != 68.0 || toJSON(r.body["estimatedPrice"]) != `{"amount":6.8,"currency":"usd"}` {
		t.Fatalf("estimate %s", r.raw)
	}
	for _, k := range []string{"expiresAt", "authRedirectUrl"} {
		if v, ok := r.body[k]; !ok || v != nil {
			t.Fatalf("%s: %v (present %v), want null: %s", k, v, ok, r.raw)
		}
	}
	id, _ := r.body["estimateId"].(string)
	if r.body["requiresAuth"] != false || !strings.HasPrefix(id, "est_") || len(id) != 28 ||
		r.body["creditTableVersion"] != workload.StudioCreditTableVersion {
		t.Fatalf("not the clients' shape: %s", r.raw)
	}
	shown := r.body["showcase"].([]any)
	if len(shown) == 0 || len(shown) > 3 {
		t.Fatalf("showcase %v", shown)
	}
	for _, ex := range shown {
		if ct := ex.(map[string]any)["contentType"]; ct != "carousel" && ct != "post" {
			t.Fatalf("an estimate of carousels and posts shows a %v", ct)
		}
	}

	// The same request: the same bytes, on the clients' mount too and with the types reversed.
	reversed := map[string]any{}
	for k, v := range full {
		reversed[k] = v
	}
	reversed["contentTypes"] = []string{"post", "carousel"}
	for _, again := range []response{estimate("", full), estimate(api.ClientRoot, full), estimate("", reversed)} {
		expect(t, again, http.StatusOK, "")
		if !bytes.Equal(again.raw, r.raw) {
			t.Fatalf("not deterministic:\n%s\n%s", r.raw, again.raw)
		}
	}

	// The least a client sends: prompt and contentTypes. One post: outputs 4, calibration 5,
	// exploration 3. Total 12. Another request, another id.
	least := estimate("", map[string]any{"prompt": "A post", "contentTypes": []string{"post"}})
	expect(t, least, http.StatusOK, "")
	if least.body["totalCredits"] != 12.0 || least.body["estimateId"] == id ||
		toJSON(least.body["breakdown"].(map[string]any)["brandIngestion"]) != `{"complexity":"simple","credits":0,"required":false}` {
		t.Fatalf("least %s", least.raw)
	}
	// brandId alone names a known brand: nothing to ingest.
	known := estimate("", map[string]any{"prompt": "A post", "contentTypes": []string{"post"}, "brandId": "brand-42"})
	expect(t, known, http.StatusOK, "")
	if known.body["totalCredits"] != 12.0 || known.body["estimateId"] == least.body["estimateId"] {
		t.Fatalf("brandId %s", known.raw)
	}

	expect(t, e.do(request{method: "POST", path: "/studio/estimate", body: full}), http.StatusUnauthorized, "")
	if d := stateDiff(before, workspaceState(t, conn, tables, ten.Principal.WorkspaceID)); d != "" {
		t.Fatalf("an estimate changed the workspace:\n%s", d)
	}
}

// What a client may get wrong: 400 validation_failed at the member (in the error
// envelope, which both clients read as error.code), or invalid_json for a body that is
// not an object.
func TestStudioEstimateRefusesWhatItCannotPrice(t *testing.T) {
	e := newEnv(t, nil)
	key := storetest.NewTenant(t, e.db).Key
	ok := func() map[string]any { return map[string]any{"prompt": "Posts", "contentTypes": []any{"post"}} }
	with := func(k string, v any) map[string]any {
		b := ok()
		if v == nil {
			delete(b, k)
		} else {
			b[k] = v
		}
		return b
	}
	for _, c := range []struct {
		name string
		body map[string]any
		path string
	}{
		{"no prompt", with("prompt", nil), "/prompt"},
		{"empty prompt", with("prompt", ""), "/prompt"},
		{"prompt too long", with("prompt", strings.Repeat("a", workload.MaxStudioPromptLength+1)), "/prompt"},
		{"prompt not a string", with("prompt", 7), "/prompt"},
		{"no content types", with("contentTypes", nil), "/contentTypes"},
		{"empty content types", with("contentTypes", []any{}), "/contentTypes"},
		{"unknown content type", with("contentTypes", []any{"post", "podcast"}), "/contentTypes/1"},
		{"repeated content type", with("contentTypes", []any{"post", "story", "post"}), "/contentTypes/2"},
		{"seven content types", with("contentTypes", []any{"carousel", "post", "story", "video", "banner", "thumbnail", "post"}), "/contentTypes"},
		{"content types not an array", with("contentTypes", "post"), "/contentTypes"},
		{"zero variants", with("variantCount", 0), "/variantCount"},
		{"too many variants", with("variantCount", workload.MaxStudioVariants+1), "/variantCount"},
		{"fractional variants", with("variantCount", 1.5), "/variantCount"},
		{"brandUrl not a URL", with("brandUrl", "our brand"), "/brandUrl"},
		{"brandUrl of another scheme", with("brandUrl", "javascript:alert(1)"), "/brandUrl"},
		{"brandUrl without a host", with("brandUrl", "https://"), "/brandUrl"},
		{"empty brandId", with("brandId", ""), "/brandId"},
		{"platform too long", with("platform", strings.Repeat("p", 101)), "/platform"},
	} {
		r := e.do(request{method: "POST", path: "/studio/estimate", key: key, body: c.body})
		expect(t, r, http.StatusBadRequest, accountable.ECodeValidationFailed)
		if paths := issuePaths(r); !slices.Contains(paths, c.path) {
			t.Fatalf("%s: issues at %v, want %s: %s", c.name, paths, c.path, r.raw)
		}
	}
	expect(t, e.do(request{method: "POST", path: "/studio/estimate", key: key, body: "[]"}), http.StatusBadRequest, "")
	// The checks above cannot pass by refusing everything: the base body is priced.
	expect(t, e.do(request{method: "POST", path: "/studio/estimate", key: key, body: ok()}), http.StatusOK, "")
}

// GET /studio/showcase with the query the public clients build (get_showcase: query,
// contentType, industry, style, featured=true|false, limit, offset), data is
// {examples, total, hasMore}: filters select before paging, total counts the selection.
func TestStudioShowcaseTakesTheClientsQuery(t *testing.T) {
	e := newEnv(t, nil)
	key := storetest.NewTenant(t, e.db).Key
	showcase := func(query string) response {
		t.Helper()
		r := e.do(request{method: "GET", path: "/studio/showcase", key: key, query: query})
		expect(t, r, http.StatusOK, "")
		return inData(t, r)
	}
	ids := func(r response) []string {
		var out []string
		for _, x := range r.body["examples"].([]any) {
			out = append(out, x.(map[string]any)["id"].(string))
		}
		return out
	}
	everything, _ := workload.ShowcasePage(workload.StudioShowcaseFilter{}, workload.MaxShowcaseLimit, 0)
	n := everything.Total

	first := showcase("")
	if len(ids(first)) != workload.DefaultShowcaseLimit || first.body["total"] != float64(n) || first.body["hasMore"] != true {
		t.Fatalf("first page %s", first.raw)
	}
	ex := first.body["examples"].([]any)[0].(map[string]any)
	var keys []string
	for k := range ex {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if strings.Join(keys, ",") != "contentType,featured,id,industry,previewUrls,qaScores,style,thumbnailUrl,title" ||
		ex["thumbnailUrl"] != nil || toJSON(ex["previewUrls"]) != "[]" || len(ex["qaScores"].(map[string]any)) != 3 {
		t.Fatalf("example %v", ex)
	}

	// Every example once, paging by five.
	var seen []string
	for offset := 0; ; offset += 5 {
		r := showcase("limit=5&offset=" + strconv.Itoa(offset))
		seen = append(seen, ids(r)...)
		if r.body["hasMore"] != (offset+5 < n) {
			t.Fatalf("offset %d: %s", offset, r.raw)
		}
		if r.body["hasMore"] != true {
			break
		}
	}
	var want []string
	for _, x := range everything.Examples {
		want = append(want, x.ID)
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("paged %v, want %v", seen, want)
	}

	// The filters, as the clients write them, against the selection worked out here.
	for _, c := range []struct {
		query string
		keep  func(workload.StudioExample) bool
	}{
		{"query=carousel", func(x workload.StudioExample) bool { return strings.Contains(strings.ToLower(x.Title), "carousel") }},
		{"query=Warm", func(x workload.StudioExample) bool { return x.Style == "warm" }},
		{"query=WEEK", func(x workload.StudioExample) bool { return strings.Contains(strings.ToLower(x.Title), "week") }},
		{"query=food%20%26%20bev", func(x workload.StudioExample) bool { return x.Industry == "Food & beverage" }},
		{"contentType=video", func(x workload.StudioExample) bool { return x.ContentType == workload.StudioVideo }},
		{"industry=SaaS", func(x workload.StudioExample) bool { return x.Industry == "SaaS" }},
		{"industry=saas&contentType=video", func(x workload.StudioExample) bool {
			return x.Industry == "SaaS" && x.ContentType == workload.StudioVideo
		}},
		{"style=bold", func(x workload.StudioExample) bool { return x.Style == "bold" }},
		{"featured=true", func(x workload.StudioExample) bool { return x.Featured }},
		{"featured=false", func(x workload.StudioExample) bool { return !x.Featured }},
		{"featured=true&style=warm", func(x workload.StudioExample) bool { return x.Featured && x.Style == "warm" }},
	} {
		var want []string
		for _, x := range everything.Examples {
			if c.keep(x) {
				want = append(want, x.ID)
			}
		}
		if len(want) == 0 {
			t.Fatalf("%s selects nothing: the check cannot fail", c.query)
		}
		all := showcase(c.query + "&limit=50")
		second := showcase(c.query + "&limit=1&offset=1")
		if !slices.Equal(ids(all), want) || all.body["total"] != float64(len(want)) || all.body["hasMore"] != false ||
			!slices.Equal(ids(second), want[min(1, len(want)):min(2, len(want))]) || second.body["total"] != float64(len(want)) || second.body["hasMore"] != (len(want) > 2) {
			t.Fatalf("%s: %v (total %v), page 2 of 1 %v; want %v", c.query, ids(all), all.body["total"], ids(second), want)
		}
	}
	none := showcase("query=no%20such%20thing&featured=true")
	if len(ids(none)) != 0 || none.body["total"] != 0.0 || none.body["hasMore"] != false || toJSON(none.body["examples"]) != "[]" {
		t.Fatalf("no match %s", none.raw)
	}
	for _, c := range []struct{ query, param string }{
		{"limit=0", "limit"}, {"limit=51", "limit"}, {"offset=-1", "offset"}, {"offset=1000001", "offset"}, {"limit=abc", "limit"},
		{"offset=1.5", "offset"}, {"limit=1&limit=2", "limit"}, {"featured=yes", "featured"}, {"featured=1", "featured"},
		{"contentType=podcast", "contentType"}, {"query=" + strings.Repeat("q", 201), "query"},
	} {
		r := e.do(request{method: "GET", path: "/studio/showcase", key: key, query: c.query})
		expect(t, r, http.StatusBadRequest, accountable.ECodeValidationFailed)
		if paths := issuePaths(r); !slices.Contains(paths, c.param) {
			t.Fatalf("%s: issues at %v: %s", c.query, paths, r.raw)
		}
	}
	expect(t, e.do(request{method: "GET", path: "/studio/showcase"}), http.StatusUnauthorized, "")
}

// inData returns a 2xx answer with its body replaced by its data: the studio's answers
// are in the specification's envelope (data and meta), whose data is the clients' shape.
// Other answers are returned as they are, for the caller's expect.
func inData(t *testing.T, r response) response {
	t.Helper()
	if r.status < 200 || r.status >= 300 {
		return r
	}
	if r.data() == nil || r.meta() == nil {
		t.Fatalf("not in the {data, meta} envelope: %s", r.raw)
	}
	r.body = r.data()
	return r
}
