package api_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// The isolation matrix's lines of the area (isolation_test.go): the owner's capsule of its
// task; B's own, of its workspace.
func init() {
	isolationCovers(isolationLines{
		bodies: map[string]func(o *owner, ids map[string]string) map[string]any{
			"prepareContext": func(o *owner, _ map[string]string) map[string]any {
				return map[string]any{"workspace_id": o.tenant.Principal.WorkspaceID, "task_id": o.task(), "delivery_mode": "delta"}
			},
		},
		ownBodies: map[string]func(e *env, key string) map[string]any{
			"prepareContext": func(e *env, key string) map[string]any {
				// Any read says the workspace it acts in (a key's or a token's alike).
				r := e.do(request{method: "GET", path: "/work", query: "limit=1", key: key})
				expect(e.t, r, http.StatusOK, "")
				return map[string]any{"workspace_id": r.meta()["workspaceId"], "delivery_mode": "delta",
					"reader_tokenizer": "cl100k_base"}
			},
		},
	})
}

// clientBase is what a client holds: a text and its version.
type clientBase struct {
	version, text string
}

// rebuild is an implementation of the transfer rules written from the description the
// public clients follow, independent of the service's (contextpack.Apply): a full transfer
// is its serialized text; a delta names the base's version and is a list of at most 65,536
// one-member operations, {"insert": text} or {"copy": [start, count]} of whole lines of the
// base (split after each "\n", the last possibly without one); the result's SHA-256 must
// be the version, and it must parse as an object holding context_delivery.
func rebuild(transfer map[string]any, base *clientBase) (clientBase, map[string]any, error) {
	if transfer["schema_version"] != "orgx.context-transfer/v1" {
		return clientBase{}, nil, errors.New("unsupported transfer")
	}
	version, _ := transfer["version"].(string)
	var text string
	switch transfer["mode"] {
	case "full":
		s, ok := transfer["serialized"].(string)
		if !ok {
			return clientBase{}, nil, errors.New("full transfer without serialized")
		}
		text = s
	case "delta":
		if base == nil || transfer["base_version"] != base.version || digestOf(base.text) != base.version {
			return clientBase{}, nil, errors.New("base mismatch")
		}
		ops, ok := transfer["operations"].([]any)
		if !ok || len(ops) > 65536 {
			return clientBase{}, nil, errors.New("invalid delta")
		}
		var lines []string
		rest := base.text
		for rest != "" {
			if i := strings.Index(rest, "\n"); i >= 0 {
				lines, rest = append(lines, rest[:i+1]), rest[i+1:]
			} else {
				lines, rest = append(lines, rest), ""
			}
		}
		var b strings.Builder
		for _, raw := range ops {
			op, ok := raw.(map[string]any)
			if !ok || len(op) != 1 {
				return clientBase{}, nil, fmt.Errorf("invalid operation %v", raw)
			}
			if s, ok := op["insert"].(string); ok {
				b.WriteString(s)
				continue
			}
			span, ok := op["copy"].([]any)
			if !ok || len(span) != 2 {
				return clientBase{}, nil, fmt.Errorf("invalid operation %v", raw)
			}
			start, ok1 := span[0].(float64)
			count, ok2 := span[1].(float64)
			if !ok1 || !ok2 || start != float64(int(start)) || count != float64(int(count)) || start < 0 || count <= 0 || int(start+count) > len(lines) {
				return clientBase{}, nil, fmt.Errorf("invalid range %v of %d lines", span, len(lines))
			}
			b.WriteString(strings.Join(lines[int(start):int(start+count)], ""))
			if b.Len() > 8<<20 {
				return clientBase{}, nil, errors.New("over the client bound")
			}
		}
		text = b.String()
	default:
		return clientBase{}, nil, errors.New("unsupported mode")
	}
	if digestOf(text) != version {
		return clientBase{}, nil, errors.New("digest mismatch")
	}
	var data map[string]any
	if err := json.Unmarshal([]byte(text), &data); err != nil {
		return clientBase{}, nil, err
	}
	if _, ok := data["context_delivery"].(map[string]any); !ok {
		return clientBase{}, nil, errors.New("no context_delivery")
	}
	return clientBase{version: version, text: text}, data, nil
}

func digestOf(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// contextScene is a workspace with a planned initiative: a workstream and a task of it.
type contextScene struct {
	e                                *env
	tenant                           storetest.Tenant
	initiative, workstream, task, ws string
}

func newContextScene(t *testing.T, e *env) *contextScene {
	t.Helper()
	tenant := storetest.NewTenant(t, e.db)
	r := e.do(request{method: "POST", path: "/initiatives/proposals", key: tenant.Key,
		body: map[string]any{"title": "Ship context packs", "generation": map[string]any{"max_workstreams": 2}}})
	expect(t, r, http.StatusCreated, "")
	c := e.do(request{method: "POST", path: "/initiatives", key: tenant.Key,
		body: map[string]any{"proposal_id": r.data()["proposal_id"], "proposal_digest": r.data()["proposal_digest"]}})
	expect(t, c, http.StatusCreated, "")
	initiative := c.data()["initiative"].(map[string]any)["id"].(string)
	g := e.do(request{method: "GET", path: "/initiatives/{initiativeId}", query: "include=tree", key: tenant.Key,
		params: map[string]string{"initiativeId": initiative}})
	expect(t, g, http.StatusOK, "")
	w := g.data()["tree"].(map[string]any)["workstreams"].([]any)[0].(map[string]any)
	task := w["milestones"].([]any)[0].(map[string]any)["tasks"].([]any)[0].(map[string]any)["id"].(string)
	return &contextScene{e: e, tenant: tenant, initiative: initiative, workstream: w["id"].(string), task: task,
		ws: tenant.Principal.WorkspaceID}
}

func (s *contextScene) prepare(t *testing.T, key string, body map[string]any) response {
	t.Helper()
	if body["workspace_id"] == nil {
		body["workspace_id"] = s.ws
	}
	return s.e.do(request{method: "POST", path: "/context-pack", key: key, body: body})
}

func (s *contextScene) post(t *testing.T, path string, body map[string]any) map[string]any {
	t.Helper()
	r := s.e.do(request{method: "POST", path: path, key: s.tenant.Key, headers: map[string]string{"Idempotency-Key": uniqueKey("ctx")}, body: body})
	if r.status >= 300 {
		t.Fatalf("POST %s: %d %s", path, r.status, r.raw)
	}
	return r.data()
}

// A task's capsule holds its scope, the initiative's pending decision, the workspace's open
// handoff, the task's artifact and its ledger events with the hashes the stream serves;
// a delta against the text the client holds rebuilds, byte for byte, the text a full read
// would serve, through an edit of the scope after another (a property run), and a base the
// service did not serve this credential (stale, forged, another credential's) is answered
// in full, never with a delta.
func TestContextPackDeltasRebuildTheScope(t *testing.T) {
	e := newQuietEnv(t)
	s := newContextScene(t, e)
	decision := s.post(t, "/decisions", map[string]any{"title": "Pick the tokenizer", "initiative_id": s.initiative, "urgency": "urgent"})["decision"].(map[string]any)["id"].(string)
	handoff := s.post(t, "/handoffs", map[string]any{"handoff_key": "review", "from_stage_key": "draft", "to_stage_key": "review", "title": "Review the capsule"})["id"].(string)
	artifact := s.post(t, "/artifacts", map[string]any{"name": "Design note", "artifact_type": "document", "entity_type": "task",
		"entity_id": s.task, "artifact_url": "https://example.com/note"})["artifact"].(map[string]any)["id"].(string)

	scope := map[string]any{"task_id": s.task, "initiative_id": s.initiative}
	with := func(m map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range scope {
			out[k] = v
		}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	r := s.prepare(t, s.tenant.Key, with(map[string]any{"delivery_mode": "delta"}))
	expect(t, r, http.StatusOK, "")
	held, data, err := rebuild(r.data()["context_transfer"].(map[string]any), nil)
	if err != nil {
		t.Fatal(err)
	}
	capsule := data["context_capsule"].(map[string]any)
	if toJSON(capsule) != toJSON(r.data()["context_capsule"]) {
		t.Fatalf("the transfer's capsule is not the answer's:\n%s\n%s", toJSON(capsule), toJSON(r.data()["context_capsule"]))
	}
	sc := capsule["scope"].(map[string]any)
	if capsule["schema_version"] != "orgx.context-capsule/v1" || sc["kind"] != "task" ||
		sc["task"].(map[string]any)["ref"].(map[string]any)["id"] != s.task ||
		sc["workstream"].(map[string]any)["ref"].(map[string]any)["id"] != s.workstream ||
		sc["initiative"].(map[string]any)["ref"].(map[string]any)["id"] != s.initiative ||
		capsule["current_intent"].(map[string]any)["ref"].(map[string]any)["id"] != s.task {
		t.Fatalf("scope: %s", toJSON(capsule))
	}
	ids := func(section string) []string {
		var out []string
		for _, it := range capsule[section].([]any) {
			out = append(out, it.(map[string]any)["ref"].(map[string]any)["id"].(string))
		}
		return out
	}
	if fmt.Sprint(ids("active_constraints")) != fmt.Sprint([]string{decision}) || fmt.Sprint(ids("open_risks")) != fmt.Sprint([]string{handoff}) ||
		fmt.Sprint(ids("artifacts")) != fmt.Sprint([]string{artifact}) {
		t.Fatalf("sections: %s", toJSON(capsule))
	}
	// Its events are the task's, newest first, with the hashes the stream serves.
	stream := s.e.do(request{method: "GET", path: "/events/stream", query: "aggregate_type=task&limit=1000", key: s.tenant.Key})
	hashes := map[string]string{}
	for _, ev := range stream.body["data"].([]any) {
		m := ev.(map[string]any)
		hashes[m["id"].(string)] = m["eventHash"].(string)
	}
	events := capsule["recent_events"].([]any)
	if len(events) == 0 {
		t.Fatalf("no events: %s", toJSON(capsule))
	}
	for _, ev := range events {
		m := ev.(map[string]any)
		if m["aggregate_id"] != s.task || hashes[m["ref"].(map[string]any)["id"].(string)] != m["event_hash"] {
			t.Fatalf("event %v is not the task's as the stream serves it", m)
		}
	}
	d := data["context_delivery"].(map[string]any)
	acc := d["accounting"].(map[string]any)
	if d["mode"] != "full" || d["consistency"] != "database_snapshot" || d["reusable_for_consequential_action"] != false ||
		acc["serialized_data_bytes"] != float64(len(held.text)) || acc["tokenizer"] != "o200k_base" || acc["serialized_data_tokens"].(float64) > 8192 {
		t.Fatalf("delivery: %s", toJSON(d))
	}

	// Edits of the scope, one after another: each delta rebuilds the text a full read
	// serves next (the same capsule), and is smaller than it.
	rng := rand.New(rand.NewPCG(28, 28))
	var saved, sent int
	for i := range 24 {
		switch rng.IntN(5) {
		case 0:
			s.post(t, "/decisions", map[string]any{"title": fmt.Sprintf("Question %d", i), "initiative_id": s.initiative})
		case 1:
			s.post(t, "/handoffs", map[string]any{"handoff_key": fmt.Sprintf("h%d", i), "from_stage_key": "a", "to_stage_key": "b", "title": fmt.Sprintf("Handoff %d", i)})
		case 2:
			s.post(t, "/artifacts", map[string]any{"name": fmt.Sprintf("Artifact %d", i), "artifact_type": "document", "entity_type": "task",
				"entity_id": s.task, "artifact_url": fmt.Sprintf("https://example.com/%d", i)})
		case 3:
			s.post(t, "/decisions", map[string]any{"title": fmt.Sprintf("Elsewhere %d", i)}) // outside the scope: the capsule's sequence moves
		case 4:
			// nothing changes: the delta copies the text but for its delivery
		}
		r := s.prepare(t, s.tenant.Key, with(map[string]any{"delivery_mode": "delta", "acknowledged_context_version": held.version}))
		expect(t, r, http.StatusOK, "")
		tr := r.data()["context_transfer"].(map[string]any)
		if tr["mode"] != "delta" || r.data()["context_capsule"] != nil || r.data()["context_delivery"].(map[string]any)["base_verified"] != true {
			t.Fatalf("edit %d: not a delta: %s", i, r.raw)
		}
		next, data, err := rebuild(tr, &held)
		if err != nil {
			t.Fatalf("edit %d: %v: %s", i, err, r.raw)
		}
		// The full read right after serves the same capsule.
		full := s.prepare(t, s.tenant.Key, with(map[string]any{}))
		expect(t, full, http.StatusOK, "")
		if toJSON(data["context_capsule"]) != toJSON(full.data()["context_capsule"]) {
			t.Fatalf("edit %d: the rebuilt capsule is not the one a full read serves:\n%s\n%s", i, toJSON(data["context_capsule"]), toJSON(full.data()["context_capsule"]))
		}
		delta, _ := json.Marshal(tr["operations"])
		saved += len(next.text) - len(delta)
		sent += len(delta)
		held = next
	}
	if saved <= 0 {
		t.Fatalf("the deltas saved nothing (%d bytes sent)", sent)
	}
	t.Logf("24 deltas: %d bytes sent, %d saved against full texts", sent, saved)

	// Bases the service did not serve this credential for this scope: answered in full.
	second, err := e.db.CreateKey(t.Context(), store.CreateKeyRequest{Name: "second", UserEmail: s.tenant.Principal.UserEmail, WorkspaceID: s.ws})
	if err != nil {
		t.Fatal(err)
	}
	storetest.NoteSecrets(second.Key)
	other := second.Key
	forged := held.text + " "
	for name, c := range map[string]struct {
		key, version string
	}{
		"stale":                {s.tenant.Key, digestOf("a text never served")},
		"forged":               {s.tenant.Key, digestOf(forged)},
		"another credential's": {other, held.version},
		"another scope's":      {s.tenant.Key, held.version},
	} {
		body := with(map[string]any{"delivery_mode": "delta", "acknowledged_context_version": c.version})
		if name == "another scope's" {
			body = map[string]any{"workstream_id": s.workstream, "delivery_mode": "delta", "acknowledged_context_version": c.version}
		}
		r := s.prepare(t, c.key, body)
		expect(t, r, http.StatusOK, "")
		tr := r.data()["context_transfer"].(map[string]any)
		d := r.data()["context_delivery"].(map[string]any)
		if tr["mode"] != "full" || d["rebootstrap_required"] != true || d["base_verified"] != false || !strings.Contains(toJSON(d["reasons"]), "acknowledged_context_version") {
			t.Fatalf("%s base: %s", name, r.raw)
		}
		if _, _, err := rebuild(tr, nil); err != nil {
			t.Fatalf("%s base: %v", name, err)
		}
	}
}

// Scope hints: the narrowest id wins and the levels above are the service's; an id of
// another workspace (or none) is 404 as an unknown one; the budget holds and what it left
// out is named; the prepared profile answers the capsule alone; the legacy
// acknowledgement says whether it is current.
func TestContextPackScopeAndBudget(t *testing.T) {
	e := newQuietEnv(t)
	s := newContextScene(t, e)
	for i := range 30 {
		s.post(t, "/decisions", map[string]any{"title": fmt.Sprintf("A long question number %d about the plan, with some words to weigh", i), "initiative_id": s.initiative})
	}
	stranger := storetest.NewTenant(t, e.db)
	for _, field := range []string{"task_id", "workstream_id", "initiative_id"} {
		id := map[string]string{"task_id": s.task, "workstream_id": s.workstream, "initiative_id": s.initiative}[field]
		r := e.do(request{method: "POST", path: "/context-pack", key: stranger.Key, body: map[string]any{"workspace_id": stranger.Principal.WorkspaceID, field: id}})
		unknown := e.do(request{method: "POST", path: "/context-pack", key: stranger.Key, body: map[string]any{"workspace_id": stranger.Principal.WorkspaceID, field: "0190c0de-0000-7000-8000-000000000000"}})
		expect(t, r, http.StatusNotFound, accountable.ECodeNotFound)
		if r.data() != nil || r.body["error"].(map[string]any)["message"] != unknown.body["error"].(map[string]any)["message"] {
			t.Fatalf("%s of another workspace: %s, unknown: %s", field, r.raw, unknown.raw)
		}
	}

	// A task that names a workstream and an initiative the service does not hold (POST
	// /work takes the ids as given): the task's scope is the task alone, saying why.
	loose := s.post(t, "/work", map[string]any{"title": "Loose task", "initiative_id": "0190c0de-0000-7000-8000-00000000000a",
		"workstream_id": "0190c0de-0000-7000-8000-00000000000b", "milestone_id": "0190c0de-0000-7000-8000-00000000000c"})["taskId"].(string)
	r := s.prepare(t, s.tenant.Key, map[string]any{"task_id": loose})
	expect(t, r, http.StatusOK, "")
	if c := r.data()["context_capsule"].(map[string]any); c["scope"].(map[string]any)["workstream"] != nil || c["scope"].(map[string]any)["initiative"] != nil ||
		len(c["active_constraints"].([]any)) != 0 || !strings.Contains(toJSON(r.data()["context_delivery"].(map[string]any)["reasons"]), "is not one of the workspace's") {
		t.Fatalf("a loose task's capsule: %s", r.raw)
	}

	// A workstream named with another initiative: the workstream's own is used, with a reason.
	r = s.prepare(t, s.tenant.Key, map[string]any{"workstream_id": s.workstream, "initiative_id": "0190c0de-0000-7000-8000-000000000000"})
	expect(t, r, http.StatusOK, "")
	c := r.data()["context_capsule"].(map[string]any)
	if c["scope"].(map[string]any)["kind"] != "workstream" || c["scope"].(map[string]any)["initiative"].(map[string]any)["ref"].(map[string]any)["id"] != s.initiative ||
		!strings.Contains(toJSON(r.data()["context_delivery"].(map[string]any)["reasons"]), "is not the workstream's initiative") ||
		r.data()["context_transfer"] != nil {
		t.Fatalf("workstream scope: %s", r.raw)
	}

	// A budget that cannot hold every decision: within it, the rest counted and named.
	r = s.prepare(t, s.tenant.Key, map[string]any{"initiative_id": s.initiative, "max_payload_tokens": 2000, "reader_tokenizer": "cl100k_base"})
	expect(t, r, http.StatusOK, "")
	c, d := r.data()["context_capsule"].(map[string]any), r.data()["context_delivery"].(map[string]any)
	acc := d["accounting"].(map[string]any)
	omitted := c["omitted_counts"].(map[string]any)["active_constraints"].(float64)
	if acc["serialized_data_tokens"].(float64) > 2000 || acc["tokenizer"] != "cl100k_base" || omitted == 0 ||
		float64(len(c["active_constraints"].([]any)))+omitted != 30 || d["completeness"] != "incomplete" ||
		!strings.Contains(toJSON(d["reasons"]), "active_constraints: ") {
		t.Fatalf("budget 2000: %s", r.raw)
	}

	// The prepared profile: the capsule alone, within its byte bound.
	r = s.prepare(t, s.tenant.Key, map[string]any{"task_id": s.task, "response_profile": "prepared", "delivery_mode": "delta"})
	expect(t, r, http.StatusOK, "")
	d = r.data()["context_delivery"].(map[string]any)
	if r.data()["context_transfer"] != nil || r.data()["context_capsule"] == nil || d["meets_prepared_byte_bound"] != true ||
		d["accounting"].(map[string]any)["serialized_data_bytes"].(float64) > 64<<10 {
		t.Fatalf("prepared: %s", r.raw)
	}

	// The legacy acknowledgement: the current capsule, or not.
	id := r.data()["context_capsule"].(map[string]any)["capsule_id"].(string)
	for ack, rebootstrap := range map[string]bool{id: false, "cap_0000": true} {
		r = s.prepare(t, s.tenant.Key, map[string]any{"task_id": s.task, "response_profile": "prepared", "acknowledged_capsule_id": ack})
		expect(t, r, http.StatusOK, "")
		if r.data()["context_delivery"].(map[string]any)["rebootstrap_required"] != rebootstrap ||
			!strings.Contains(toJSON(r.data()["context_delivery"].(map[string]any)["reasons"]), "acknowledged_capsule_id") {
			t.Fatalf("acknowledged %s: %s", ack, r.raw)
		}
	}

	// A version with delivery_mode full is a contradiction the request is refused for.
	r = s.prepare(t, s.tenant.Key, map[string]any{"delivery_mode": "full", "acknowledged_context_version": digestOf("x")})
	expect(t, r, http.StatusBadRequest, accountable.ECodeValidationFailed)
}
