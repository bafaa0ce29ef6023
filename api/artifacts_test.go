package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/canonical"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// The isolation matrix's lines of the area (isolation_test.go).
func init() {
	isolationCovers(isolationLines{
		fixtures: map[string]func(o *owner) string{
			"artifactId": (*owner).artifact,
		},
		unownedLists: map[string]string{
			"listArtifactTypes": "the artifact type catalogue, the same for every workspace",
		},
		queryProbes: map[string][]string{
			"listArtifacts": {"entity_type=task&entity_id={taskId}", "task_id={taskId}", "initiative_id={initiativeId}"},
			// Its entity_type and entity_id are required: the first probe is also its own request.
			"listArtifactsByEntity": {"entity_type=task&entity_id={taskId}", "entity_type=initiative&entity_id={initiativeId}"},
		},
		bodies: map[string]func(o *owner, ids map[string]string) map[string]any{
			"createArtifact": func(o *owner, _ map[string]string) map[string]any {
				return map[string]any{"entity_type": "task", "entity_id": o.task(), "name": "Owner's report", "artifact_type": "report",
					"artifact_url": "https://example.com/reports/47", "preview_markdown": "Figures", "media_type": "text/plain",
					"status": "in_review", "metadata": map[string]any{"week": 47}}
			},
		},
		ownBodies: map[string]func(e *env, key string) map[string]any{
			"createArtifact": func(e *env, key string) map[string]any {
				return map[string]any{"entity_type": "task", "entity_id": createWork(e.t, e, key, "B's task"), "name": "B's report",
					"artifact_type": "report", "external_url": "https://example.com/b"}
			},
		},
	})
}

func (o *owner) artifact() string {
	o.t.Helper()
	r := o.e.do(request{method: "POST", path: "/artifacts", key: o.tenant.Key, headers: map[string]string{"Idempotency-Key": uniqueKey("owner")},
		body: map[string]any{"entity_type": "task", "entity_id": o.task(), "name": "Owner's artifact " + o.marker, "artifact_type": "document",
			"artifact_url": "https://example.com/" + o.marker, "preview_markdown": "Owner's content " + o.marker}})
	expect(o.t, r, http.StatusCreated, "")
	return r.data()["artifact"].(map[string]any)["id"].(string)
}

func createArtifact(e *env, key, idemKey string, body map[string]any) response {
	e.t.Helper()
	req := request{method: "POST", path: "/artifacts", key: key, body: body, headers: map[string]string{}}
	if idemKey != "" {
		req.headers["Idempotency-Key"] = idemKey
	}
	return e.do(req)
}

func getArtifact(e *env, key, id, query string) response {
	e.t.Helper()
	return e.do(request{method: "GET", path: "/artifacts/{artifactId}", params: map[string]string{"artifactId": id}, key: key, query: query})
}

func listArtifacts(e *env, key, query string) response {
	e.t.Helper()
	return e.do(request{method: "GET", path: "/artifacts", key: key, query: query})
}

func listArtifactsByEntity(e *env, key, query string) response {
	e.t.Helper()
	return e.do(request{method: "GET", path: "/artifacts/by-entity", key: key, query: query})
}

// clientArtifact is the body the public Python client's create_artifact sends: its four
// positional members, and each keyword member the caller gave.
func clientArtifact(entityType, entityID, name, artifactType string, keywords map[string]any) map[string]any {
	b := map[string]any{"entity_type": entityType, "entity_id": entityID, "name": name, "artifact_type": artifactType}
	for k, v := range keywords {
		b[k] = v
	}
	return b
}

// artifactIDs are the ids of a list of artifacts, in order; lists never show a preview.
func artifactIDs(t *testing.T, r response) []string {
	t.Helper()
	expect(t, r, http.StatusOK, "")
	var out []string
	for _, a := range r.data()["artifacts"].([]any) {
		m := a.(map[string]any)
		if _, has := m["preview_markdown"]; has {
			t.Fatalf("a list shows a preview: %v", m)
		}
		out = append(out, m["id"].(string))
	}
	if r.meta()["count"] != float64(len(out)) {
		t.Fatalf("meta.count %v for %d artifacts", r.meta()["count"], len(out))
	}
	return out
}

// starterTree commits an initiative of one workstream with one milestone of one task and
// returns their ids.
func starterTree(t *testing.T, e *env, key, title string) (initiative, workstream, milestone, task string) {
	t.Helper()
	p := propose(e, key, "", map[string]any{"title": title, "depth": "full", "generation": map[string]any{"max_workstreams": 1},
		"workstreams": []any{map[string]any{"name": "Lane", "milestones": []any{map[string]any{"title": "M", "tasks": []any{"one"}}}}}})
	expect(t, p, http.StatusCreated, "")
	c := e.do(request{method: "POST", path: "/initiatives", key: key,
		body: map[string]any{"proposal_id": p.data()["proposal_id"], "proposal_digest": p.data()["proposal_digest"]}})
	expect(t, c, http.StatusCreated, "")
	initiative = c.data()["initiative"].(map[string]any)["id"].(string)
	read := e.do(request{method: "GET", path: "/initiatives/{initiativeId}", params: map[string]string{"initiativeId": initiative}, key: key,
		query: "include=tree"})
	expect(t, read, http.StatusOK, "")
	for _, w := range read.data()["tree"].(map[string]any)["workstreams"].([]any) {
		for _, m := range w.(map[string]any)["milestones"].([]any) {
			if tasks := m.(map[string]any)["tasks"].([]any); len(tasks) > 0 {
				return initiative, w.(map[string]any)["id"].(string), m.(map[string]any)["id"].(string), tasks[0].(map[string]any)["id"].(string)
			}
		}
	}
	t.Fatalf("the starter initiative has no milestone with a task: %s", read.raw)
	return
}

// The calls of the public clients, with exactly the bodies and queries they send
// (orgx_client/client.py: list_artifact_types, create_artifact, list_artifacts,
// list_artifacts_by_entity, get_artifact, expand_context_evidence), and what they read.
func TestArtifactsAsTheClientsCallThem(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key, ws, user := tenant.Key, tenant.Principal.WorkspaceID, tenant.Principal.UserID
	initiative, workstream, milestone, task := starterTree(t, e, key, "Public status page")

	// list_artifact_types: data is the list.
	types := e.do(request{method: "GET", path: "/artifact-types", key: key})
	expect(t, types, http.StatusOK, "")
	if len(types.dataList()) != len(accountable.ArtifactTypes) || types.meta()["count"] != float64(len(accountable.ArtifactTypes)) {
		t.Fatalf("types %s", types.raw)
	}
	var codes []string
	for _, x := range types.dataList() {
		m := x.(map[string]any)
		var members []string
		for k := range m {
			members = append(members, k)
		}
		slices.Sort(members)
		if strings.Join(members, ",") != "default_persona,domain,is_deliverable,label,stage,summary,tags,type_code,workflow" {
			t.Fatalf("a type's members: %v", members)
		}
		codes = append(codes, m["type_code"].(string))
	}
	if !slices.Contains(codes, "pull_request") || !slices.Contains(codes, accountable.ArtifactGenericType) {
		t.Fatalf("codes %v", codes)
	}

	// create_artifact with every keyword.
	prURL, ciURL, preview := "https://github.com/acme/web/pull/7", "https://ci.example.com/runs/7", "## Changes\n\n- the status page ✅"
	full := clientArtifact("task", task, "Status page PR", "pull_request", map[string]any{"artifact_url": prURL, "external_url": ciURL,
		"description": "Adds the page", "preview_markdown": preview, "initiative_id": initiative, "status": "in_review",
		"metadata": map[string]any{"repo": "acme/web", "checks": 3}, "created_by_type": "agent", "created_by_id": "codex"})
	r := createArtifact(e, key, "client-pr-7", full)
	expect(t, r, http.StatusCreated, "")
	d := r.data()
	a := d["artifact"].(map[string]any)
	v := a["verification"].(map[string]any)
	digest, _ := canonical.DigestOf(accountable.ArtifactContent{ArtifactType: "pull_request", ArtifactURL: &prURL, ExternalURL: &ciURL,
		PreviewMarkdown: &preview})
	if d["ok"] != true || d["artifact_type_fallback"] != false || d["effective_artifact_type"] != "pull_request" || r.meta()["duplicate"] != false ||
		a["name"] != "Status page PR" || a["artifact_type"] != "pull_request" || a["requested_artifact_type"] != "pull_request" ||
		a["artifact_url"] != prURL || a["external_url"] != ciURL || a["entity_type"] != "task" || a["entity_id"] != task ||
		a["status"] != "in_review" || a["version"] != 1.0 || a["description"] != "Adds the page" || a["preview_markdown"] != preview ||
		a["preview_bytes"] != float64(len(preview)) || a["initiative_id"] != initiative || a["workspace_id"] != ws ||
		a["created_by_type"] != "agent" || a["created_by_id"] != "codex" || toJSON(a["metadata"]) != `{"checks":3,"repo":"acme/web"}` ||
		a["created_at"] == nil || a["updated_at"] != a["created_at"] || a["media_type"] != nil ||
		v["content_digest"] != digest || v["digest_scheme"] != "artifact-content/v2" || v["event_id"] == nil || v["event_hash"] == nil ||
		toJSON(v["recorded_by"]) != toJSON(map[string]any{"type": "human", "id": user}) {
		t.Fatalf("created %s", r.raw)
	}
	pr := a["id"].(string)

	// The least the client sends: the entity, a name, a type, one url. The defaults: draft,
	// the entity's initiative (an initiative's own id), the caller as the creator.
	minimal := createArtifact(e, key, "client-prd", clientArtifact("initiative", initiative, "Launch PRD", "prd",
		map[string]any{"external_url": "https://docs.example.com/prd"}))
	expect(t, minimal, http.StatusCreated, "")
	m := minimal.data()["artifact"].(map[string]any)
	if m["status"] != "draft" || m["initiative_id"] != initiative || m["created_by_type"] != "human" || m["created_by_id"] != user ||
		m["artifact_url"] != nil || m["description"] != nil || m["preview_markdown"] != nil || m["preview_bytes"] != nil || toJSON(m["metadata"]) != "{}" {
		t.Fatalf("minimal %s", minimal.raw)
	}
	// Explicit nulls mean the members were left out (CONTRACT).
	nulls := createArtifact(e, key, "client-nulls", clientArtifact("milestone", milestone, "Milestone notes", "document", map[string]any{
		"artifact_url": "https://docs.example.com/notes", "external_url": nil, "description": nil, "preview_markdown": nil, "initiative_id": nil,
		"status": nil, "metadata": nil, "created_by_type": nil, "created_by_id": nil, "media_type": nil, "content_digest": nil, "command_id": nil}))
	expect(t, nulls, http.StatusCreated, "")
	if n := nulls.data()["artifact"].(map[string]any); n["status"] != "draft" || n["initiative_id"] != initiative || n["created_by_id"] != user {
		t.Fatalf("nulls %s", nulls.raw)
	}
	// A workstream's artifact takes its initiative too; a project is an external reference,
	// its id any string, recorded as given.
	lane := createArtifact(e, key, "client-lane", clientArtifact("workstream", strings.ToUpper(workstream), "Lane design", "design",
		map[string]any{"artifact_url": "https://figma.example.com/f/1"}))
	expect(t, lane, http.StatusCreated, "")
	if l := lane.data()["artifact"].(map[string]any); l["entity_id"] != workstream || l["initiative_id"] != initiative {
		t.Fatalf("lane %s", lane.raw)
	}
	projectID := "Website Relaunch/2026"
	brief := createArtifact(e, key, "client-brief", clientArtifact("project", projectID, "Brief", "document",
		map[string]any{"artifact_url": "https://docs.example.com/brief"}))
	expect(t, brief, http.StatusCreated, "")
	if b := brief.data()["artifact"].(map[string]any); b["entity_id"] != projectID || b["initiative_id"] != nil {
		t.Fatalf("brief %s", brief.raw)
	}
	// A type the catalogue does not know is stored as the generic type, not refused.
	digestArtifact := createArtifact(e, key, "client-digest", clientArtifact("task", task, "Weekly digest", "weekly_digest",
		map[string]any{"external_url": "https://mail.example.com/digest/47"}))
	expect(t, digestArtifact, http.StatusCreated, "")
	fd := digestArtifact.data()
	if f := fd["artifact"].(map[string]any); fd["artifact_type_fallback"] != true || fd["effective_artifact_type"] != "other" ||
		f["artifact_type"] != "other" || f["requested_artifact_type"] != "weekly_digest" {
		t.Fatalf("fallback %s", digestArtifact.raw)
	}
	weekly := fd["artifact"].(map[string]any)["id"].(string)
	prd, notes, design := m["id"].(string), nulls.data()["artifact"].(map[string]any)["id"].(string), lane.data()["artifact"].(map[string]any)["id"].(string)
	briefID := brief.data()["artifact"].(map[string]any)["id"].(string)

	// list_artifacts(workspace_id, initiative_id, task_id, status, since, limit).
	since := url.QueryEscape(a["created_at"].(string))
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"workspace_id=" + ws + "&initiative_id=" + initiative + "&task_id=" + task + "&status=in_review&since=" + since + "&limit=10", []string{pr}},
		{"workspace_id=" + ws, []string{weekly, briefID, design, notes, prd, pr}},
		{"workspace_id=" + ws + "&initiative_id=" + initiative, []string{weekly, design, notes, prd, pr}},
		{"workspace_id=" + ws + "&task_id=" + task, []string{weekly, pr}},
		{"workspace_id=" + ws + "&status=draft&limit=2", []string{weekly, briefID}},
		{"workspace_id=" + ws + "&since=" + url.QueryEscape(fd["artifact"].(map[string]any)["created_at"].(string)), []string{weekly}},
		{"workspace_id=" + ws + "&type=weekly_digest", []string{weekly}},
		{"workspace_id=" + ws + "&type=document", []string{briefID, notes}},
		{"workspace_id=" + ws + "&entity_type=project&entity_id=" + url.QueryEscape(projectID), []string{briefID}},
	} {
		if got := artifactIDs(t, listArtifacts(e, key, c.query)); !slices.Equal(got, c.want) {
			t.Fatalf("%q: %v, want %v", c.query, got, c.want)
		}
	}
	l := listArtifacts(e, key, "task_id="+task+"&status=in_review")
	if s := l.data()["artifacts"].([]any)[0].(map[string]any); s["preview_bytes"] != float64(len(preview)) || s["verification"].(map[string]any)["content_digest"] != digest {
		t.Fatalf("summary %v", s)
	}

	// list_artifacts_by_entity(entity_type, entity_id, kind, limit).
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"entity_type=task&entity_id=" + task + "&kind=pull_request&limit=5", []string{pr}},
		{"entity_type=task&entity_id=" + task, []string{weekly, pr}},
		{"entity_type=task&entity_id=" + strings.ToUpper(task) + "&kind=weekly_digest", []string{weekly}},
		{"entity_type=task&entity_id=" + task + "&kind=other", []string{weekly}},
		{"entity_type=initiative&entity_id=" + initiative, []string{prd}},
		{"entity_type=milestone&entity_id=" + milestone + "&limit=1", []string{notes}},
		{"entity_type=project&entity_id=" + url.QueryEscape(projectID), []string{briefID}},
		{"entity_type=project&entity_id=" + url.QueryEscape(strings.ToLower(projectID)), nil},
		{"entity_type=decision&entity_id=" + uuid.NewString(), nil},
	} {
		if got := artifactIDs(t, listArtifactsByEntity(e, key, c.query)); !slices.Equal(got, c.want) {
			t.Fatalf("by-entity %q: %v, want %v", c.query, got, c.want)
		}
	}

	// get_artifact(id): {ok, artifact, relationships}; expand_context_evidence(id, expected_version).
	g := getArtifact(e, key, pr, "")
	expect(t, g, http.StatusOK, "")
	rel := g.data()["relationships"].(map[string]any)
	ent, ini, led := rel["entity"].(map[string]any), rel["initiative"].(map[string]any), rel["ledger_event"].(map[string]any)
	if g.data()["ok"] != true || toJSON(g.data()["artifact"]) != toJSON(a) ||
		ent["entity_type"] != "task" || ent["entity_id"] != task || ent["checked"] != true || ent["href"] != "/work/"+task ||
		ini["initiative_id"] != initiative || ini["href"] != "/initiatives/"+initiative ||
		led["event_id"] != v["event_id"] || led["event_hash"] != v["event_hash"] || led["event_type"] != "artifact.created" ||
		led["aggregate_type"] != "artifact" || led["aggregate_id"] != pr {
		t.Fatalf("read %s", g.raw)
	}
	// The paths of the relationships read what they name.
	if w := e.do(request{method: "GET", path: "/work/{taskId}", params: map[string]string{"taskId": task}, key: key}); w.data()["id"] != task {
		t.Fatalf("the entity: %s", w.raw)
	}
	verify := e.do(request{method: "GET", path: "/events/verify", key: key, query: strings.TrimPrefix(led["href"].(string), "/events/verify?")})
	if verify.data()["verified"] != true || verify.data()["eventCount"] != 1.0 {
		t.Fatalf("the ledger event: %s", verify.raw)
	}
	if b := getArtifact(e, key, briefID, "").data()["relationships"].(map[string]any); toJSON(b["entity"]) !=
		toJSON(map[string]any{"entity_type": "project", "entity_id": projectID, "checked": false, "href": nil}) || b["initiative"] != nil {
		t.Fatalf("a project's relationships %v", b)
	}
	expect(t, getArtifact(e, key, pr, "expected_version=1"), http.StatusOK, "")
	c := getArtifact(e, key, pr, "expected_version=2")
	expect(t, c, http.StatusConflict, accountable.ECodeVersionConflict)
	if c.errorObj()["details"].(map[string]any)["current_version"] != 1.0 {
		t.Fatalf("conflict %s", c.raw)
	}

	// The ledger holds artifact.created with the new names, the digest and no preview.
	events := e.streamEvents(key, "event_type=artifact.created", 6)
	if len(events) != 6 {
		t.Fatalf("%d artifact.created events", len(events))
	}
	first := events[0]
	p := first["payload"].(map[string]any)
	if first["aggregateType"] != "artifact" || first["aggregateId"] != pr || first["id"] != v["event_id"] || first["eventHash"] != v["event_hash"] ||
		p["artifact_id"] != pr || p["name"] != "Status page PR" || p["artifact_type"] != "pull_request" || p["content_digest"] != digest ||
		p["digest_scheme"] != "artifact-content/v2" || p["preview_bytes"] != float64(len(preview)) || p["entity_type"] != "task" ||
		p["entity_id"] != task || p["initiative_id"] != initiative || p["status"] != "in_review" || p["created_by_id"] != "codex" ||
		p["created_at"] != a["created_at"] || p["artifact_url"] != prURL || p["external_url"] != ciURL {
		t.Fatalf("event %v", first)
	}
	for _, hidden := range []string{"preview_markdown", "description", "metadata"} {
		if _, has := p[hidden]; has {
			t.Fatalf("the payload carries %s: %v", hidden, p)
		}
	}
	if p := events[5]["payload"].(map[string]any); p["artifact_type"] != "other" || p["requested_artifact_type"] != "weekly_digest" {
		t.Fatalf("fallback event %v", p)
	}
	if v := e.do(request{method: "GET", path: "/events/verify", key: key}); v.data()["verified"] != true {
		t.Fatalf("ledger: %s", v.raw)
	}
	wl := e.do(request{method: "GET", path: "/projections/work-ledger", key: key})
	if wl.data()["totals"].(map[string]any)["artifacts"] != 6.0 {
		t.Fatalf("work ledger %s", wl.raw)
	}
}

// What POST /artifacts refuses, and how it answers a retry.
func TestArtifactCreateRefusalsAndReplays(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	task := createWork(t, e, key, "Write the report")
	body := clientArtifact("task", task, "Weekly report", "report", map[string]any{"artifact_url": "https://example.com/reports/47",
		"preview_markdown": "All green.", "command_id": "cmd-47"})

	// The key is required; a malformed one is refused; the body's rules come first.
	expect(t, createArtifact(e, key, "", body), http.StatusBadRequest, accountable.ECodeIdempotencyKeyRequired)
	expect(t, createArtifact(e, key, "bad key!", body), http.StatusBadRequest, accountable.ECodeIdempotencyKeyInvalid)
	noURL := clientArtifact("task", task, "Weekly report", "report", nil)
	r := createArtifact(e, key, uniqueKey("bad"), noURL)
	expect(t, r, http.StatusBadRequest, accountable.ECodeValidationFailed)
	var paths []string
	for _, is := range r.errorObj()["details"].(map[string]any)["issues"].([]any) {
		paths = append(paths, is.(map[string]any)["path"].(string))
		if !strings.Contains(is.(map[string]any)["message"].(string), "artifact_url or external_url") {
			t.Fatalf("issue %v", is)
		}
	}
	if slices.Sort(paths); !slices.Equal(paths, []string{"/artifact_url", "/external_url"}) {
		t.Fatalf("no url: %s", r.raw)
	}
	with := func(k string, v any) map[string]any {
		b := clientArtifact("task", task, "x", "report", map[string]any{"external_url": "https://example.com"})
		if v == nil {
			delete(b, k)
		} else {
			b[k] = v
		}
		return b
	}
	for name, c := range map[string]struct {
		body map[string]any
		path string
	}{
		"a status not of the enum":  {with("status", "published"), "/status"},
		"an entity not of the enum": {with("entity_type", "workspace"), "/entity_type"},
		"a creator not of the enum": {with("created_by_type", "robot"), "/created_by_type"},
		"no entity type":            {with("entity_type", nil), "/entity_type"},
		"no entity id":              {with("entity_id", nil), "/entity_id"},
		"a task's id not a uuid":    {with("entity_id", "42"), "/entity_id"},
		"no name":                   {with("name", nil), "/name"},
		"no type":                   {with("artifact_type", nil), "/artifact_type"},
		"a type not a string":       {with("artifact_type", 7), "/artifact_type"},
		"a relative url":            {with("external_url", "/x"), "/external_url"},
		"metadata not an object":    {with("metadata", []any{1}), "/metadata"},
		"an initiative not a uuid":  {with("initiative_id", "init-1"), "/initiative_id"},
		"a digest that differs":     {with("content_digest", "sha256:"+strings.Repeat("0", 64)), "/content_digest"},
	} {
		r := createArtifact(e, key, uniqueKey("bad"), c.body)
		if r.status != http.StatusBadRequest || r.errorCode() != accountable.ECodeValidationFailed ||
			r.errorObj()["details"].(map[string]any)["issues"].([]any)[0].(map[string]any)["path"] != c.path {
			t.Fatalf("%s: %d %s", name, r.status, r.raw)
		}
	}
	expect(t, e.do(request{method: "POST", path: "/artifacts", body: body, headers: map[string]string{"Idempotency-Key": uniqueKey("x")}}),
		http.StatusUnauthorized, "")

	// A replay answers the original (200, meta.duplicate); the key with another body is
	// refused; a digest sent that matches is accepted.
	idem := uniqueKey("artifact")
	first := createArtifact(e, key, idem, body)
	expect(t, first, http.StatusCreated, "")
	again := createArtifact(e, key, idem, body)
	expect(t, again, http.StatusOK, "")
	if again.meta()["duplicate"] != true || toJSON(again.data()) != toJSON(first.data()) {
		t.Fatalf("replay %s\nfirst %s", again.raw, first.raw)
	}
	expect(t, createArtifact(e, key, idem, with("name", "Another")), http.StatusConflict, accountable.ECodeIdempotencyKeyReused)
	withDigest := clientArtifact("task", task, "Same content", "report", map[string]any{"artifact_url": "https://example.com/reports/47",
		"preview_markdown": "All green.", "content_digest": first.data()["artifact"].(map[string]any)["verification"].(map[string]any)["content_digest"]})
	expect(t, createArtifact(e, key, uniqueKey("digest"), withDigest), http.StatusCreated, "")
	// An unknown type is stored under the generic one, replayed the same.
	fb := uniqueKey("fallback")
	unknown := with("artifact_type", "okr_scorecard")
	one, two := createArtifact(e, key, fb, unknown), createArtifact(e, key, fb, unknown)
	expect(t, one, http.StatusCreated, "")
	if two.status != http.StatusOK || two.data()["artifact_type_fallback"] != true || two.data()["effective_artifact_type"] != "other" ||
		toJSON(two.data()) != toJSON(one.data()) {
		t.Fatalf("fallback replay %s", two.raw)
	}
	if events := e.streamEvents(key, "event_type=artifact.created", 3); len(events) != 3 || events[0]["payload"].(map[string]any)["command_id"] != "cmd-47" {
		t.Fatalf("%d artifact.created events: %v", len(events), events)
	}
}

// Entities: one the service holds must be the workspace's (another workspace's is the 404
// of one never issued, whatever its kind); an initiative named must agree with the
// entity's; another workspace sees none of it, by id, in lists or by entity.
func TestArtifactEntitiesAndIsolation(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	initiative, workstream, milestone, task := starterTree(t, e, key, "Owner's plan")
	other, _, _, _ := starterTree(t, e, key, "Another plan")
	d := e.do(request{method: "POST", path: "/decisions", key: key, body: map[string]any{"title": "Publish it?", "initiative_id": initiative}})
	expect(t, d, http.StatusCreated, "")
	decision := d.data()["decision"].(map[string]any)["id"].(string)
	loose := createWork(t, e, key, "A task of no initiative")

	stranger := storetest.NewTenant(t, e.db)
	theirInitiative, theirWorkstream, theirMilestone, theirTask := starterTree(t, e, stranger.Key, "Theirs")
	link := func(entityType, entityID string, kw map[string]any) map[string]any {
		if kw == nil {
			kw = map[string]any{}
		}
		kw["artifact_url"] = "https://example.com/pr/1"
		return clientArtifact(entityType, entityID, "PR", "pull_request", kw)
	}
	for kind, theirs := range map[string]string{"task": theirTask, "initiative": theirInitiative, "workstream": theirWorkstream, "milestone": theirMilestone} {
		a, never := createArtifact(e, key, uniqueKey("x"), link(kind, theirs, nil)), createArtifact(e, key, uniqueKey("x"), link(kind, uuid.NewString(), nil))
		expect(t, a, http.StatusNotFound, accountable.ECodeNotFound)
		if diff := sameResponse(a, never); diff != "" {
			t.Fatalf("%s: %s", kind, diff)
		}
	}
	// An id of another kind is not found either; an id never issued is not found, whatever its kind.
	expect(t, createArtifact(e, key, uniqueKey("x"), link("task", decision, nil)), http.StatusNotFound, accountable.ECodeNotFound)
	for _, kind := range accountable.EntityType("").Enum() {
		r := createArtifact(e, key, uniqueKey("x"), link(kind.(string), uuid.NewString(), nil))
		if kind == "project" {
			expect(t, r, http.StatusCreated, "") // an external reference: not looked up
		} else {
			expect(t, r, http.StatusNotFound, accountable.ECodeNotFound)
		}
	}
	// The initiative: named alone it must exist; named besides an entity it must be the entity's.
	expect(t, createArtifact(e, key, uniqueKey("x"), link("project", "p", map[string]any{"initiative_id": theirInitiative})),
		http.StatusNotFound, accountable.ECodeNotFound)
	mismatch := createArtifact(e, key, uniqueKey("x"), link("task", task, map[string]any{"initiative_id": other}))
	expect(t, mismatch, http.StatusBadRequest, accountable.ECodeValidationFailed)
	if !strings.Contains(string(mismatch.raw), "/initiative_id") {
		t.Fatalf("mismatch %s", mismatch.raw)
	}
	initiativeOf := func(r response) any {
		t.Helper()
		expect(t, r, http.StatusCreated, "")
		return r.data()["artifact"].(map[string]any)["initiative_id"]
	}
	for name, c := range map[string]struct {
		body map[string]any
		want any
	}{
		"a decision's":                   {link("decision", decision, nil), initiative},
		"a milestone's":                  {link("milestone", milestone, nil), initiative},
		"a workstream's, named the same": {link("workstream", workstream, map[string]any{"initiative_id": strings.ToUpper(initiative)}), initiative},
		"a loose task's":                 {link("task", loose, nil), nil},
		"a loose task's, named":          {link("task", loose, map[string]any{"initiative_id": other}), other},
		"a project's, named":             {link("project", "Q4", map[string]any{"initiative_id": other}), other},
		"another initiative, as entity":  {link("initiative", other, nil), other},
	} {
		if got := initiativeOf(createArtifact(e, key, uniqueKey("x"), c.body)); got != c.want {
			t.Fatalf("%s: initiative %v, want %v", name, got, c.want)
		}
	}
	mine := createArtifact(e, key, uniqueKey("mine"), link("task", task, map[string]any{"preview_markdown": "Owner's secret preview"}))
	expect(t, mine, http.StatusCreated, "")
	id := mine.data()["artifact"].(map[string]any)["id"].(string)

	// Another workspace: the same 404 as an id never issued, with or without a version; its
	// lists and its by-entity reads of the owner's entities are empty.
	for _, q := range []string{"", "expected_version=2"} {
		theirs, never := getArtifact(e, stranger.Key, id, q), getArtifact(e, stranger.Key, uuid.NewString(), q)
		expect(t, theirs, http.StatusNotFound, accountable.ECodeNotFound)
		if d := sameResponse(theirs, never); d != "" {
			t.Fatal(d)
		}
	}
	for _, q := range []string{"", "task_id=" + task, "initiative_id=" + initiative, "entity_type=task&entity_id=" + task} {
		if got := artifactIDs(t, listArtifacts(e, stranger.Key, q)); len(got) != 0 {
			t.Fatalf("the stranger lists %v with %q", got, q)
		}
	}
	for _, q := range []string{"entity_type=task&entity_id=" + task, "entity_type=initiative&entity_id=" + initiative, "entity_type=project&entity_id=Q4"} {
		if got := artifactIDs(t, listArtifactsByEntity(e, stranger.Key, q)); len(got) != 0 {
			t.Fatalf("the stranger lists %v by entity %q", got, q)
		}
	}
	// The stranger's own artifact of the same project id is the stranger's alone.
	expect(t, createArtifact(e, stranger.Key, uniqueKey("theirs"), link("project", "Q4", nil)), http.StatusCreated, "")
	ownQ4 := artifactIDs(t, listArtifactsByEntity(e, key, "entity_type=project&entity_id=Q4"))
	theirQ4 := artifactIDs(t, listArtifactsByEntity(e, stranger.Key, "entity_type=project&entity_id=Q4"))
	if len(ownQ4) != 1 || len(theirQ4) != 1 || ownQ4[0] == theirQ4[0] {
		t.Fatalf("the Q4 artifacts: the owner's %v, the stranger's %v", ownQ4, theirQ4)
	}

	// /artifacts/by-entity is not an artifact id: without its parameters it says which are
	// required; the list's other rules.
	for q, want := range map[string]string{"": "entity_type", "entity_type=task": "entity_id", "entity_id=" + task: "entity_type",
		"entity_type=task&entity_id=42": "entity_id", "entity_type=workspace&entity_id=" + task: "entity_type",
		"entity_type=task&entity_id=" + task + "&limit=0": "limit", "entity_type=task&entity_id=" + task + "&limit=1001": "limit",
		"entity_type=task&entity_id=" + task + "&cursor=nonsense": "cursor", "entity_type=task&entity_id=" + task + "&kind=": ""} {
		r := listArtifactsByEntity(e, key, q)
		if want == "" {
			expect(t, r, http.StatusOK, "") // an empty kind is no filter, as an empty parameter is none
			continue
		}
		expect(t, r, http.StatusBadRequest, accountable.ECodeValidationFailed)
		if !strings.Contains(string(r.raw), `"path":"`+want+`"`) || strings.Contains(string(r.raw), "artifactId") {
			t.Fatalf("%q: %s", q, r.raw)
		}
	}
	for _, q := range []string{"entity_type=task", "entity_id=" + task, "type=" + strings.Repeat("t", 101), "entity_type=workspace&entity_id=" + task,
		"entity_type=task&entity_id=42", "task_id=42", "task_id=" + task + "&entity_type=task&entity_id=" + task, "status=published",
		"initiative_id=x", "since=yesterday", "limit=0", "limit=1001", "cursor=nonsense"} {
		expect(t, listArtifacts(e, key, q), http.StatusBadRequest, accountable.ECodeValidationFailed)
	}
	expect(t, e.do(request{method: "GET", path: "/artifacts/by-entity", query: "entity_type=task&entity_id=" + task}), http.StatusUnauthorized, "")

	// Pages of two: every artifact of the task once, newest first.
	for i := range 4 {
		expect(t, createArtifact(e, key, uniqueKey("page"), link("task", task, map[string]any{"name": "Page " + strconv.Itoa(i)})), http.StatusCreated, "")
	}
	var all, paged []string
	all = artifactIDs(t, listArtifactsByEntity(e, key, "entity_type=task&entity_id="+task))
	cursor := ""
	for range 10 {
		q := "entity_type=task&entity_id=" + task + "&limit=2"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		r := listArtifactsByEntity(e, key, q)
		paged = append(paged, artifactIDs(t, r)...)
		if r.meta()["hasMore"] != true {
			break
		}
		cursor = r.meta()["nextCursor"].(string)
	}
	if len(all) != 5 || !slices.Equal(paged, all) {
		t.Fatalf("paged %v, want %v", paged, all)
	}
	if v := e.do(request{method: "GET", path: "/events/verify", key: key}); v.data()["verified"] != true {
		t.Fatalf("ledger: %s", v.raw)
	}
}

// The catalogue: the list itself in data, the same for every workspace, for a credential.
// The paths the relationships give for each kind of entity are operations of the API.
func TestArtifactTypes(t *testing.T) {
	e := newEnv(t, nil)
	key := storetest.NewTenant(t, e.db).Key
	r := e.do(request{method: "GET", path: "/artifact-types", key: key})
	expect(t, r, http.StatusOK, "")
	var want []any
	if err := json.Unmarshal([]byte(toJSON(accountable.ArtifactTypes)), &want); err != nil {
		t.Fatal(err)
	}
	if toJSON(r.dataList()) != toJSON(want) || r.meta()["count"] != float64(len(accountable.ArtifactTypes)) {
		t.Fatalf("types %s", r.raw)
	}
	if other := e.do(request{method: "GET", path: "/artifact-types", key: storetest.NewTenant(t, e.db).Key}); toJSON(other.dataList()) != toJSON(r.dataList()) {
		t.Fatalf("another workspace's catalogue %s", other.raw)
	}
	expect(t, e.do(request{method: "GET", path: "/artifact-types"}), http.StatusUnauthorized, "")

	param := regexp.MustCompile(`\{\w+\}`)
	var gets []string
	for _, op := range fetchDocument(t, e).operations(t) {
		if op.Method == http.MethodGet {
			gets = append(gets, param.ReplaceAllString(op.Path, "{id}"))
		}
	}
	for kind, path := range api.EntityReads {
		if !slices.Contains(gets, path) {
			t.Fatalf("the %s read %s is no GET operation of the API", kind, path)
		}
	}
}

// Relationships: the entity with the path that reads it (none for a project), the
// initiative, the ledger event.
func TestArtifactRelationships(t *testing.T) {
	task, init := "0190c0de-0000-7000-8000-000000000001", "0190c0de-0000-7000-8000-000000000002"
	tt, pt := accountable.EntityTask, accountable.EntityProject
	a := accountable.Artifact{ArtifactSummary: accountable.ArtifactSummary{ID: "a", EntityType: &tt, EntityID: &task, InitiativeID: &init,
		Verification: accountable.ArtifactVerification{EventID: "e", EventHash: "h"}}}
	r := api.ArtifactRelationships(a)
	if !r.Entity.Checked || *r.Entity.Href != "/work/"+task || r.Initiative.Href != "/initiatives/"+init || r.LedgerEvent.EventID != "e" ||
		r.LedgerEvent.Href != "/events/verify?aggregate_type=artifact&aggregate_id=a" {
		t.Fatalf("relationships %+v", r)
	}
	project := "p/1"
	a.EntityType, a.EntityID, a.InitiativeID = &pt, &project, nil
	if r := api.ArtifactRelationships(a); r.Entity.Checked || r.Entity.Href != nil || r.Initiative != nil {
		t.Fatalf("project %+v", r)
	}
	a.EntityType, a.EntityID = nil, nil
	if r := api.ArtifactRelationships(a); r.Entity != nil {
		t.Fatalf("none %+v", r)
	}
}

// Artifacts recorded before issue 25 (the row and artifact.created event as that code
// wrote them, in a database migrated up to the migration before 024) read in the new
// shape once migration 024 has run: their ledger events stay as recorded and verify, their digest is named as the
// earlier scheme, and the work ledger counts old and new events alike.
func TestArtifactsRecordedBeforeIssue25(t *testing.T) {
	ctx := context.Background()
	ownerURL, _ := storetest.NewDatabase(t)
	conn, err := pgx.Connect(ctx, ownerURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	m, err := migrate.NewMigrator(ctx, conn, "public.schema_version")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadMigrations(store.Migrations()); err != nil {
		t.Fatal(err)
	}
	// The migration before this one's (its number may change in a merge).
	names, err := fs.Glob(store.Migrations(), "*_artifacts_client_shape.sql")
	if err != nil || len(names) != 1 {
		t.Fatalf("the artifacts' migration: %v %v", names, err)
	}
	seq, err := strconv.Atoi(strings.SplitN(names[0], "_", 2)[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := m.MigrateTo(ctx, int32(seq-1)); err != nil {
		t.Fatal(err)
	}
	before, err := store.Open(ctx, store.Config{URL: ownerURL})
	if err != nil {
		t.Fatal(err)
	}
	tenant := storetest.NewTenant(t, before)
	ws, user := tenant.Principal.WorkspaceID, tenant.Principal.UserID
	created, _, err := before.CreateWork(ctx, tenant.Principal, nil, accountable.CreateWork{Title: "Write the report"})
	if err != nil {
		t.Fatal(err)
	}
	task := created.TaskID
	before.Close()

	// The two kinds the earlier code wrote: a report with inline content, a uri and a task;
	// a link of nothing.
	content, uri, mediaType := "# Week 47\n\nAll green. ✅", "https://example.com/reports/47", "text/markdown"
	report := oldArtifact(t, conn, ws, user, map[string]any{"type": "report", "title": "Weekly report", "uri": uri, "media_type": mediaType,
		"entity_type": "task", "entity_id": task, "metadata": map[string]any{"week": 47}}, &content)
	link := oldArtifact(t, conn, ws, user, map[string]any{"type": "link", "title": "Ticket", "uri": "https://tracker.example.com/T-1",
		"media_type": nil, "entity_type": nil, "entity_id": nil, "metadata": map[string]any{}}, nil)

	if err := store.Migrate(ctx, store.MigrateConfig{OwnerURL: ownerURL}); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(ctx, store.Config{URL: ownerURL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	e := newEnv(t, db)
	key := tenant.Key

	g := getArtifact(e, key, report.id, "expected_version=1")
	expect(t, g, http.StatusOK, "")
	a := g.data()["artifact"].(map[string]any)
	v := a["verification"].(map[string]any)
	if a["name"] != "Weekly report" || a["artifact_type"] != "report" || a["requested_artifact_type"] != "report" || a["artifact_url"] != uri ||
		a["external_url"] != nil || a["media_type"] != mediaType || a["entity_type"] != "task" || a["entity_id"] != task || a["initiative_id"] != nil ||
		a["status"] != "draft" || a["version"] != 1.0 || a["preview_markdown"] != content || a["preview_bytes"] != float64(len(content)) ||
		a["created_by_type"] != "human" || a["created_by_id"] != user || toJSON(a["metadata"]) != `{"week":47}` || a["created_at"] != report.createdAt ||
		a["updated_at"] != report.createdAt || v["content_digest"] != report.digest || v["digest_scheme"] != "artifact-content/v1" ||
		v["event_id"] != report.event.ID || v["event_hash"] != report.event.EventHash ||
		toJSON(v["recorded_by"]) != toJSON(map[string]any{"type": "human", "id": user}) {
		t.Fatalf("the old report %s", g.raw)
	}
	if rel := g.data()["relationships"].(map[string]any); rel["entity"].(map[string]any)["href"] != "/work/"+task ||
		rel["ledger_event"].(map[string]any)["event_id"] != report.event.ID {
		t.Fatalf("relationships %s", g.raw)
	}
	lg := getArtifact(e, key, link.id, "")
	expect(t, lg, http.StatusOK, "")
	if l := lg.data()["artifact"].(map[string]any); l["entity_type"] != nil || l["entity_id"] != nil || l["preview_markdown"] != nil ||
		l["preview_bytes"] != nil || lg.data()["relationships"].(map[string]any)["entity"] != nil {
		t.Fatalf("the old link %s", lg.raw)
	}
	if got := artifactIDs(t, listArtifactsByEntity(e, key, "entity_type=task&entity_id="+task+"&kind=report")); !slices.Equal(got, []string{report.id}) {
		t.Fatalf("by entity %v", got)
	}

	// New artifacts beside them; the old events are as recorded, and everything verifies.
	expect(t, createArtifact(e, key, uniqueKey("new"), clientArtifact("task", task, "Week 48", "report",
		map[string]any{"artifact_url": "https://example.com/reports/48"})), http.StatusCreated, "")
	if got := artifactIDs(t, listArtifacts(e, key, "task_id="+task)); len(got) != 2 || got[1] != report.id {
		t.Fatalf("the task's artifacts %v", got)
	}
	events := e.streamEvents(key, "event_type=artifact.created", 3)
	if len(events) != 3 || events[0]["id"] != report.event.ID || events[0]["payload"].(map[string]any)["title"] != "Weekly report" ||
		events[2]["payload"].(map[string]any)["name"] != "Week 48" {
		t.Fatalf("events %v", events)
	}
	if v := e.do(request{method: "GET", path: "/events/verify", key: key}); v.data()["verified"] != true {
		t.Fatalf("ledger: %s", v.raw)
	}
	if wl := e.do(request{method: "GET", path: "/projections/work-ledger", key: key}); wl.data()["totals"].(map[string]any)["artifacts"] != 3.0 {
		t.Fatalf("work ledger %s", wl.raw)
	}
}

type recordedArtifact struct {
	id, digest, createdAt string
	event                 accountable.Event
}

// oldArtifact writes an artifact as the code before issue 25 did: its row (doc without
// content, content in its own column) and its artifact.created event, chained and anchored.
func oldArtifact(t *testing.T, conn *pgx.Conn, ws, user string, members map[string]any, content *string) recordedArtifact {
	t.Helper()
	ctx := context.Background()
	id := uuid.Must(uuid.NewV7()).String()
	now := accountable.Now()
	createdAt := accountable.TimeOf(now)
	digest, err := canonical.DigestOf(map[string]any{"type": members["type"], "uri": members["uri"], "media_type": members["media_type"],
		"content": content})
	if err != nil {
		t.Fatal(err)
	}
	size := 0
	if content != nil {
		size = len(*content)
	}
	doc := map[string]any{"id": id, "workspace_id": ws, "content_digest": digest, "size_bytes": size, "has_content": content != nil,
		"created_by": map[string]any{"type": "human", "id": user}, "created_at": createdAt, "version": 1}
	payload := map[string]any{"artifact_id": id, "content_digest": digest, "size_bytes": size, "has_content": content != nil,
		"created_at": createdAt, "command_id": nil}
	for k, v := range members {
		doc[k] = v
		if k != "metadata" {
			payload[k] = v
		}
	}
	body, err := canonical.JSON(payload)
	if err != nil {
		t.Fatal(err)
	}
	ev := accountable.Event{EventHeader: accountable.EventHeader{ID: uuid.Must(uuid.NewV7()).String(), WorkspaceID: ws,
		AggregateType: accountable.AggregateArtifact, AggregateID: id, AggregateVersion: 1, EventType: accountable.EventArtifactCreated,
		SchemaVersion: accountable.SchemaVersion, ActorType: accountable.ActorHuman, ActorID: user, PayloadDigest: canonical.Digest(body),
		OccurredAt: createdAt, RecordedAt: createdAt}, Payload: body}
	if ev.EventHash, err = canonical.DigestOf(ev.EventHeader); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO ledger_events (workspace_id, id, aggregate_type, aggregate_id, aggregate_version, event_type,
			schema_version, actor_type, actor_id, payload, payload_digest, occurred_at, recorded_at, event_hash)
		VALUES ($1, $2, $3, $4, 1, $5, $6, $7, $8, $9::jsonb, $10, $11, $11, $12)`,
		ws, ev.ID, ev.AggregateType, id, ev.EventType, ev.SchemaVersion, string(ev.ActorType), ev.ActorID, string(body),
		ev.PayloadDigest, createdAt.Time, ev.EventHash); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO ledger_heads (workspace_id, aggregate_type, aggregate_id, version, event_id, event_hash, updated_at)
		VALUES ($1, 'artifact', $2, 1, $3, $4, $5)`, ws, id, ev.ID, ev.EventHash, createdAt.Time); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(doc)
	if _, err := conn.Exec(ctx, `INSERT INTO artifacts (workspace_id, id, type, entity_type, entity_id, created_at, version, doc, content)
		VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $8)`, ws, id, members["type"], members["entity_type"], members["entity_id"], createdAt.Time,
		string(raw), content); err != nil {
		t.Fatal(err)
	}
	var at string
	if err := json.Unmarshal([]byte(toJSON(createdAt)), &at); err != nil {
		t.Fatal(err)
	}
	return recordedArtifact{id: id, digest: digest, createdAt: at, event: ev}
}

type claimAnswer struct {
	status int
	body   struct {
		Data accountable.DedupClaimResult `json:"data"`
		Meta map[string]any               `json:"meta"`
	}
	raw []byte
}

// claim sends a dedup claim with the env's client; safe from any goroutine.
func (e *env) claim(key string, body map[string]any) (claimAnswer, error) {
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, e.base+api.V1Root+"/live/dedup/claim", bytes.NewReader(raw))
	if err != nil {
		return claimAnswer{}, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := e.client.Do(req)
	if err != nil {
		return claimAnswer{}, err
	}
	defer res.Body.Close()
	var out claimAnswer
	out.status = res.StatusCode
	if out.raw, err = io.ReadAll(res.Body); err != nil {
		return out, err
	}
	return out, json.Unmarshal(out.raw, &out.body)
}

// The first claim of (source, event_key) wins; later claims within the ttl are deduped
// with the standing claim; another key, or another workspace, is another claim.
func TestDedupClaim(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	claim := func(key string, body map[string]any) response {
		t.Helper()
		return e.do(request{method: "POST", path: "/live/dedup/claim", key: key, body: body})
	}
	run, initiative := uuid.NewString(), uuid.NewString()
	body := map[string]any{"source": "github", "event_key": "delivery-1", "ttl_seconds": 600, "initiative_id": strings.ToUpper(initiative),
		"active_run_id": run}
	first := claim(key, body)
	expect(t, first, http.StatusOK, "")
	f := first.data()
	fp, _ := canonical.DigestOf(accountable.DedupFingerprintOf(tenant.Principal.WorkspaceID, "github", "delivery-1"))
	claimedAt, _ := time.Parse(time.RFC3339Nano, f["claimed_at"].(string))
	expiresAt, _ := time.Parse(time.RFC3339Nano, f["expires_at"].(string))
	if f["ok"] != true || f["claimed"] != true || f["deduped"] != false || f["fingerprint_hash"] != fp || expiresAt.Sub(claimedAt) != 10*time.Minute ||
		f["initiative_id"] != initiative || f["active_run_id"] != run || first.meta()["duplicate"] != nil {
		t.Fatalf("first claim %s", first.raw)
	}
	// Another claimant (another run, another ttl) is deduped with the standing claim.
	second := claim(key, map[string]any{"source": "github", "event_key": "delivery-1", "ttl_seconds": 5, "active_run_id": uuid.NewString()})
	expect(t, second, http.StatusOK, "")
	s := second.data()
	if s["ok"] != true || s["claimed"] != false || s["deduped"] != true || s["fingerprint_hash"] != fp || s["expires_at"] != f["expires_at"] ||
		s["claim_id"] != f["claim_id"] || s["active_run_id"] != run || s["initiative_id"] != initiative {
		t.Fatalf("second claim %s", second.raw)
	}
	// Other keys and sources are other events; the ttl defaults to an hour.
	for _, b := range []map[string]any{{"source": "github", "event_key": "delivery-2"}, {"source": "gitlab", "event_key": "delivery-1"},
		{"source": "github", "event_key": "Delivery-1"}} {
		r := claim(key, b)
		expect(t, r, http.StatusOK, "")
		ca, _ := time.Parse(time.RFC3339Nano, r.data()["claimed_at"].(string))
		ea, _ := time.Parse(time.RFC3339Nano, r.data()["expires_at"].(string))
		if r.data()["claimed"] != true || r.data()["fingerprint_hash"] == fp || ea.Sub(ca) != time.Hour {
			t.Fatalf("%v: %s", b, r.raw)
		}
	}
	// The same event in another workspace: claimed there, under another fingerprint.
	stranger := storetest.NewTenant(t, e.db)
	theirs := claim(stranger.Key, body)
	expect(t, theirs, http.StatusOK, "")
	if theirs.data()["claimed"] != true || theirs.data()["fingerprint_hash"] == fp {
		t.Fatalf("stranger %s", theirs.raw)
	}
	for name, bad := range map[string]map[string]any{
		"no source":       {"event_key": "k"},
		"no event key":    {"source": "s"},
		"ttl 0":           {"source": "s", "event_key": "k", "ttl_seconds": 0},
		"ttl too long":    {"source": "s", "event_key": "k", "ttl_seconds": 604801},
		"ttl fraction":    {"source": "s", "event_key": "k", "ttl_seconds": 1.5},
		"run not a uuid":  {"source": "s", "event_key": "k", "active_run_id": "run-1"},
		"source too long": {"source": strings.Repeat("s", 201), "event_key": "k"},
	} {
		if r := claim(key, bad); r.status != http.StatusBadRequest || r.errorCode() != accountable.ECodeValidationFailed {
			t.Fatalf("%s: %d %s", name, r.status, r.raw)
		}
	}
	expect(t, e.do(request{method: "POST", path: "/live/dedup/claim", body: body}), http.StatusUnauthorized, "")

	// One dedup.claimed per winner (four here), none for the deduped claim.
	events := e.streamEvents(key, "event_type=dedup.claimed", 4)
	if len(events) != 4 {
		t.Fatalf("%d dedup.claimed events", len(events))
	}
	p := events[0]["payload"].(map[string]any)
	if events[0]["aggregateType"] != "dedup_claim" || events[0]["aggregateId"] != f["claim_id"] || p["claim_id"] != f["claim_id"] ||
		p["fingerprint_hash"] != fp || p["source"] != "github" || p["event_key"] != "delivery-1" || p["ttl_seconds"] != 600.0 ||
		p["claimed_at"] != f["claimed_at"] || p["expires_at"] != f["expires_at"] || p["initiative_id"] != initiative ||
		p["active_run_id"] != run || p["replaced_claim_id"] != nil {
		t.Fatalf("event %v", events[0])
	}
	if v := e.do(request{method: "GET", path: "/events/verify", key: key}); v.data()["verified"] != true {
		t.Fatalf("ledger: %s", v.raw)
	}
}

// Fifty claimants of one event at once, through the HTTP API: exactly one wins, and every
// other one is told of that claim.
func TestDedupConcurrentClaimants(t *testing.T) {
	e := newEnv(t, nil)
	key := storetest.NewTenant(t, e.db).Key
	const n = 50
	body := map[string]any{"source": "webhook", "event_key": "evt-" + uuid.NewString(), "ttl_seconds": 300}
	answers := make([]claimAnswer, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			b := map[string]any{"active_run_id": uuid.NewString()}
			for k, v := range body {
				b[k] = v
			}
			answers[i], errs[i] = e.claim(key, b)
		}()
	}
	close(start)
	wg.Wait()
	var winners []int
	for i, a := range answers {
		if errs[i] != nil || a.status != http.StatusOK || !a.body.Data.OK {
			t.Fatalf("claimant %d: %v %d %s", i, errs[i], a.status, a.raw)
		}
		if a.body.Data.Claimed == a.body.Data.Deduped {
			t.Fatalf("claimant %d: claimed and deduped alike: %s", i, a.raw)
		}
		if a.body.Data.Claimed {
			winners = append(winners, i)
		}
	}
	if len(winners) != 1 {
		t.Fatalf("%d winners: %v", len(winners), winners)
	}
	won := answers[winners[0]].body.Data
	for i, a := range answers {
		d := a.body.Data
		if d.ClaimID != won.ClaimID || !d.ExpiresAt.Equal(won.ExpiresAt.Time) || d.FingerprintHash != won.FingerprintHash ||
			*d.ActiveRunID != *won.ActiveRunID {
			t.Fatalf("claimant %d was told of another claim: %s (the winner's: %+v)", i, a.raw, won)
		}
	}
	if events := e.streamEvents(key, "event_type=dedup.claimed", 1); len(events) != 1 {
		t.Fatalf("%d dedup.claimed events", len(events))
	}
}

// A claim stands for its ttl: once it has expired, the next claimant takes the event over
// (a new claim, recording the one it replaced), and holds it in turn.
func TestDedupClaimExpires(t *testing.T) {
	e := newEnv(t, nil)
	key := storetest.NewTenant(t, e.db).Key
	claim := func(ttl int) map[string]any {
		t.Helper()
		r := e.do(request{method: "POST", path: "/live/dedup/claim", key: key, body: map[string]any{"source": "cron", "event_key": "tick-1", "ttl_seconds": ttl}})
		expect(t, r, http.StatusOK, "")
		return r.data()
	}
	first := claim(1)
	if first["claimed"] != true {
		t.Fatalf("first %v", first)
	}
	if again := claim(60); again["deduped"] != true || again["claim_id"] != first["claim_id"] {
		t.Fatalf("within the ttl %v", again)
	}
	expires, _ := time.Parse(time.RFC3339Nano, first["expires_at"].(string))
	time.Sleep(time.Until(expires) + 50*time.Millisecond) // the passage of time is the subject: the claim's ttl runs out
	second := claim(60)
	if second["claimed"] != true || second["claim_id"] == first["claim_id"] || second["fingerprint_hash"] != first["fingerprint_hash"] {
		t.Fatalf("after expiry %v (first %v)", second, first)
	}
	if third := claim(1); third["deduped"] != true || third["claim_id"] != second["claim_id"] || third["expires_at"] != second["expires_at"] {
		t.Fatalf("the new claim stands: %v", third)
	}
	events := e.streamEvents(key, "event_type=dedup.claimed", 2)
	if len(events) != 2 {
		t.Fatalf("%d dedup.claimed events", len(events))
	}
	p := events[1]["payload"].(map[string]any)
	if p["claim_id"] != second["claim_id"] || p["replaced_claim_id"] != first["claim_id"] || events[1]["aggregateId"] != second["claim_id"] {
		t.Fatalf("takeover event %v", events[1])
	}
	if v := e.do(request{method: "GET", path: "/events/verify", key: key}); v.data()["verified"] != true {
		t.Fatalf("ledger: %s", v.raw)
	}
}
