package api_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/accountablework/accountable/store/storetest"
)

// A list answers its items as data itself, an array (never null, never an object around
// it), with its page in meta: count (the page's items), limit, hasMore, and nextCursor
// while there are more. The public clients read it so: list(payload["data"]) in Python,
// response.data in TypeScript.

// listPage reads one page of a list as the public clients do (workspace_id, limit and the
// cursor in the query) and holds it to the rule; it returns the items and the next cursor
// ("" on the last page).
func listPage(t *testing.T, e *env, key, ws, path, query string, limit int, cursor string) ([]map[string]any, string) {
	t.Helper()
	q := url.Values{"workspace_id": {ws}}
	if limit > 0 {
		q.Set("limit", fmt.Sprint(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	qs := q.Encode()
	if query != "" {
		qs += "&" + query
	}
	r := e.do(request{method: "GET", path: path, query: qs, key: key})
	expect(t, r, http.StatusOK, "")
	data, isArray := r.body["data"].([]any)
	if !isArray {
		t.Fatalf("GET %s?%s: data is not an array: %s", path, qs, r.raw)
	}
	m := r.meta()
	if m["count"] != float64(len(data)) || (limit > 0 && m["limit"] != float64(limit)) {
		t.Fatalf("GET %s?%s: meta %v for %d items", path, qs, m, len(data))
	}
	next, _ := m["nextCursor"].(string)
	if more, _ := m["hasMore"].(bool); more != (next != "") {
		t.Fatalf("GET %s?%s: hasMore %v with nextCursor %q", path, qs, m["hasMore"], next)
	}
	items := make([]map[string]any, len(data))
	for i, d := range data {
		item, ok := d.(map[string]any)
		if !ok {
			t.Fatalf("GET %s?%s: item %d is not an object: %s", path, qs, i, r.raw)
		}
		items[i] = item
	}
	return items, next
}

// pageThrough reads every page of a list at limit, following meta.nextCursor to the end,
// and returns the ids of the items (read by id) in the order they came, each page full
// but the last.
func pageThrough(t *testing.T, e *env, key, ws, path, query string, limit int, id func(map[string]any) string) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatalf("GET %s: more than 100 pages", path)
		}
		items, next := listPage(t, e, key, ws, path, query, limit, cursor)
		if next != "" && len(items) != limit {
			t.Fatalf("GET %s: a page of %d before the last, at limit %d", path, len(items), limit)
		}
		for _, item := range items {
			ids = append(ids, id(item))
		}
		if next == "" {
			return ids
		}
		cursor = next
	}
}

func idOf(item map[string]any) string { s, _ := item["id"].(string); return s }

// runIDOf is the id of a discovery run in its list: each item is the run's result.
func runIDOf(item map[string]any) string {
	run, _ := item["run"].(map[string]any)
	return idOf(run)
}

// expectEmptyList holds the list of a workspace that has none to data: [] (not null, not
// an object), count 0, no more.
func expectEmptyList(t *testing.T, e *env, key, path string) {
	t.Helper()
	r := e.do(request{method: "GET", path: path, key: key})
	expect(t, r, http.StatusOK, "")
	if !bytes.HasPrefix(r.raw, []byte(`{"data":[],`)) || r.meta()["count"] != 0.0 || r.meta()["hasMore"] == true {
		t.Fatalf("GET %s of an empty workspace: %s", path, r.raw)
	}
}

// newestFirst reverses the ids as they were made.
func newestFirstIDs(made []string) []string {
	out := slices.Clone(made)
	slices.Reverse(out)
	return out
}

// GET /operating-processes, /handoffs, /episodes and /discovery-runs answer data as the
// array, paged through meta.nextCursor to the end; a workspace with none answers data: [].
func TestListsAnswerTheArray(t *testing.T) {
	e := newQuietEnv(t) // nothing moves in the background: the discovery runs stay queued
	tenant := storetest.NewTenant(t, e.db)
	key, ws := tenant.Key, tenant.Principal.WorkspaceID
	empty := storetest.NewTenant(t, e.db)
	const n = 5

	var processes, handoffs, episodes, runs []string
	for i := range n {
		r := e.do(request{method: "POST", path: "/operating-processes", key: key, headers: map[string]string{"Idempotency-Key": uniqueKey("list")},
			body: map[string]any{"name": fmt.Sprintf("Process %d", i), "purpose": "Listed.", "stages": []any{map[string]any{"key": "a", "name": "A"}}}})
		expect(t, r, http.StatusCreated, "")
		processes = append(processes, r.data()["process"].(map[string]any)["id"].(string))

		handoffs = append(handoffs, createHandoff(t, e, key, map[string]any{"title": fmt.Sprintf("Handoff %d", i)})["id"].(string))

		r = e.do(request{method: "POST", path: "/episodes", key: key,
			body: map[string]any{"process_id": processes[0], "case_id": fmt.Sprintf("case-%d", i), "started_at": "2026-11-01T09:00:00Z"}})
		expect(t, r, http.StatusCreated, "")
		episodes = append(episodes, r.data()["id"].(string))

		r = e.do(request{method: "POST", path: "/discovery-runs", key: key, body: map[string]any{"mode": "deep_search", "source_kinds": []any{"observations"},
			"observations": []any{map[string]any{"case_id": "c", "stage": "a", "at": "2026-11-01T09:00:00Z"}}}})
		expect(t, r, http.StatusAccepted, "")
		runs = append(runs, r.data()["run"].(map[string]any)["id"].(string))
	}

	for _, l := range []struct {
		path, query string
		made        []string
		id          func(map[string]any) string
	}{
		{"/operating-processes", "", processes, idOf},
		{"/handoffs", "", handoffs, idOf},
		{"/episodes", "", episodes, idOf},
		{"/episodes", "process_id=" + processes[0], episodes, idOf},
		{"/discovery-runs", "", runs, runIDOf},
	} {
		want := newestFirstIDs(l.made)
		// The clients' own page sizes hold everything in one page; 2 takes three pages.
		for _, limit := range []int{50, 20, 2} {
			if got := pageThrough(t, e, key, ws, l.path, l.query, limit, l.id); !slices.Equal(got, want) {
				t.Fatalf("GET %s?%s at limit %d: %v, want %v", l.path, l.query, limit, got, want)
			}
		}
		// Without workspace_id or limit, as the clients' list_operating_processes and
		// list_handoffs ask: the default page.
		r := e.do(request{method: "GET", path: l.path, query: l.query, key: key})
		if got := r.dataList(); len(got) != n {
			t.Fatalf("GET %s?%s: %s", l.path, l.query, r.raw)
		}
		expectEmptyList(t, e, empty.Key, l.path)
	}

	// An item of the discovery runs' list is the run's result, as GET /discovery-runs/{id}
	// answers it (the TypeScript client types the list so); its pages are of 20 by default.
	items, _ := listPage(t, e, key, ws, "/discovery-runs", "", 1, "")
	one := e.do(request{method: "GET", path: "/discovery-runs/{runId}", params: map[string]string{"runId": runs[n-1]}, key: key})
	if toJSON(items[0]) != toJSON(one.data()) || len(items[0]["observations"].([]any)) != 1 {
		t.Fatalf("list item %v, the run's result %s", items[0], one.raw)
	}
	if r := e.do(request{method: "GET", path: "/discovery-runs", key: key}); r.meta()["limit"] != 20.0 {
		t.Fatalf("default page %s", r.raw)
	}

	// Webhooks and runs are lists too: data [] when there are none.
	expectEmptyList(t, e, empty.Key, "/runs")
	r := e.do(request{method: "GET", path: "/webhooks", key: empty.Key})
	if !bytes.HasPrefix(r.raw, []byte(`{"data":[],`)) || r.meta()["count"] != 0.0 {
		t.Fatalf("GET /webhooks of an empty workspace: %s", r.raw)
	}
}

// GET /runs pages through meta.nextCursor like every list, of a launch or of the workspace.
func TestRunListPages(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key, ws := tenant.Key, tenant.Principal.WorkspaceID
	l := launchIt(t, e, key, launchable(t, e, key), 2000)
	id := l["launch_id"].(string)
	l = waitLaunch(t, e, key, id, "two runs", func(l map[string]any) bool { return len(runsOf(l)) == 2 })
	var made []string
	for _, r := range runsOf(l) {
		made = append(made, r.(map[string]any)["id"].(string))
	}
	all := pageThrough(t, e, key, ws, "/runs", "launch_id="+id, 100, idOf)
	paged := pageThrough(t, e, key, ws, "/runs", "launch_id="+id, 1, idOf)
	if len(paged) != 2 || !slices.Equal(paged, all) || !slices.Equal(sorted(paged), sorted(made)) {
		t.Fatalf("runs %v (one a page), %v (all), the launch's %v", paged, all, made)
	}
	if got := pageThrough(t, e, key, ws, "/runs", "", 1, idOf); !slices.Equal(got, all) {
		t.Fatalf("the workspace's runs %v, the launch's %v", got, all)
	}
}
