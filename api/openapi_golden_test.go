package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/accountablework/accountable/api"
)

// goldenOpenAPI is the committed copy of the served OpenAPI document, so that a change of
// the contract shows in review as a change of this file.
const goldenOpenAPI = "../docs/openapi.json"

// goldenSiteURL is the site `make run` serves, the servers the committed document names.
const goldenSiteURL = "http://127.0.0.1:8080"

// The document served at GET /openapi.json is the committed one. After a deliberate
// change of the API, rewrite the copy with
//
//	UPDATE_GOLDEN=1 scripts/stack.sh go test -count=1 -run TestOpenAPIGolden ./api
//
// and commit it with the change.
func TestOpenAPIGolden(t *testing.T) {
	served := servedOpenAPI(t)
	// The document must not depend on map order or anything else of one run: built again
	// by other servers, it is the same bytes.
	for range 2 {
		if again := servedOpenAPI(t); !bytes.Equal(again, served) {
			t.Fatalf("the OpenAPI document differs between two servers: it is not deterministic (%s)",
				summarizeJSONDiff(t, served, again))
		}
	}
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(goldenOpenAPI, append(served, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", goldenOpenAPI)
		return
	}
	golden, err := os.ReadFile(goldenOpenAPI)
	if err != nil {
		t.Fatalf("reading the committed document: %v (write it with UPDATE_GOLDEN=1)", err)
	}
	if golden = bytes.TrimSuffix(golden, []byte("\n")); !bytes.Equal(golden, served) {
		t.Fatalf("GET /openapi.json differs from %s: %s\nIf the API change is deliberate, update the copy and commit it:\n"+
			"\tUPDATE_GOLDEN=1 scripts/stack.sh go test -count=1 -run TestOpenAPIGolden ./api",
			goldenOpenAPI, summarizeJSONDiff(t, golden, served))
	}
}

// servedOpenAPI is the body of GET /api/v1/openapi.json from a new server.
func servedOpenAPI(t *testing.T) []byte {
	t.Helper()
	srv, err := api.NewServer(api.Config{SiteURL: goldenSiteURL}, api.Deps{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.App().Test(httptest.NewRequest("GET", api.V1Root+"/openapi.json", nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET /openapi.json: %d %.200s", resp.StatusCode, body)
	}
	return body
}

// summarizeJSONDiff names where two JSON documents differ (as JSON Pointers, at most a
// dozen), which reads better in a failure than a line diff of a 20k-line document.
func summarizeJSONDiff(t *testing.T, want, got []byte) string {
	t.Helper()
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		return fmt.Sprintf("the committed copy is not JSON: %v", err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("the served document is not JSON: %v", err)
	}
	var diffs []string
	diffJSON("", w, g, &diffs)
	if len(diffs) == 0 {
		return "same JSON, different bytes (formatting)"
	}
	const shown = 12
	out := fmt.Sprintf("%d difference(s)", len(diffs))
	for i, d := range diffs {
		if i == shown {
			out += fmt.Sprintf("\n\t... and %d more", len(diffs)-shown)
			break
		}
		out += "\n\t" + d
	}
	return out
}

// diffJSON appends to diffs each JSON Pointer under ptr where want and got differ.
func diffJSON(ptr string, want, got any, diffs *[]string) {
	wm, wok := want.(map[string]any)
	gm, gok := got.(map[string]any)
	if wok && gok {
		keys := make([]string, 0, len(wm)+len(gm))
		for k := range wm {
			keys = append(keys, k)
		}
		for k := range gm {
			if _, ok := wm[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := ptr + "/" + escapePointer(k)
			wv, inW := wm[k]
			gv, inG := gm[k]
			switch {
			case !inW:
				*diffs = append(*diffs, "added   "+p)
			case !inG:
				*diffs = append(*diffs, "removed "+p)
			default:
				diffJSON(p, wv, gv, diffs)
			}
		}
		return
	}
	wa, wok := want.([]any)
	ga, gok := got.([]any)
	if wok && gok && len(wa) == len(ga) {
		for i := range wa {
			diffJSON(fmt.Sprintf("%s/%d", ptr, i), wa[i], ga[i], diffs)
		}
		return
	}
	if !reflect.DeepEqual(want, got) {
		*diffs = append(*diffs, "changed "+ptr)
	}
}
