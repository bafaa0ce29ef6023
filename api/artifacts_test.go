package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/store/storetest"
)

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

// Recording an artifact: the Idempotency-Key it requires, the rules of its body, the
// record with its content digest and ledger event, replays, reads at a version, and
// another workspace's artifact reported exactly like one never issued.
func TestArtifactCreateAndRead(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	content := "# Weekly report\n\nEverything shipped. ✅"
	body := map[string]any{"type": "report", "title": "Weekly report", "content": content, "media_type": "text/markdown",
		"uri": "https://example.com/reports/7", "metadata": map[string]any{"week": 47}, "command_id": "cmd-7"}

	// The key is required; a malformed one is refused; the body's rules come first.
	expect(t, createArtifact(e, key, "", body), http.StatusBadRequest, accountable.ECodeIdempotencyKeyRequired)
	expect(t, createArtifact(e, key, "bad key!", body), http.StatusBadRequest, accountable.ECodeIdempotencyKeyInvalid)
	for name, bad := range map[string]map[string]any{
		"no content field":      {"type": "report", "title": "x"},
		"a link with content":   {"type": "link", "title": "x", "uri": "https://example.com", "content": "x"},
		"an unknown type":       {"type": "video", "title": "x", "uri": "https://example.com"},
		"a relative uri":        {"type": "link", "title": "x", "uri": "/x"},
		"an entity without id":  {"type": "link", "title": "x", "uri": "https://example.com", "entity_type": "task"},
		"metadata not object":   {"type": "link", "title": "x", "uri": "https://example.com", "metadata": []any{1}},
		"a digest that differs": {"type": "report", "title": "x", "content": "x", "content_digest": "sha256:" + strings.Repeat("0", 64)},
		"no title":              {"type": "link", "uri": "https://example.com"},
	} {
		r := createArtifact(e, key, uniqueKey("bad"), bad)
		if r.status != http.StatusBadRequest || r.errorCode() != accountable.ECodeValidationFailed {
			t.Fatalf("%s: %d %s", name, r.status, r.raw)
		}
	}

	idem := uniqueKey("artifact")
	r := createArtifact(e, key, idem, body)
	expect(t, r, http.StatusCreated, "")
	a := r.data()["artifact"].(map[string]any)
	ev := r.data()["event"].(map[string]any)
	uri, mediaType := body["uri"].(string), body["media_type"].(string)
	digest, _ := accountable.ArtifactContentDigest(accountable.ArtifactReport, &uri, &mediaType, &content)
	if a["type"] != "report" || a["title"] != "Weekly report" || a["content"] != content || a["content_digest"] != digest ||
		a["size_bytes"] != float64(len(content)) || a["has_content"] != true || a["version"] != 1.0 || a["entity_type"] != nil ||
		a["workspace_id"] != tenant.Principal.WorkspaceID || a["created_by"].(map[string]any)["id"] != tenant.Principal.UserID ||
		a["metadata"].(map[string]any)["week"] != 47.0 || ev["aggregateVersion"] != 1.0 || r.meta()["duplicate"] != false {
		t.Fatalf("created %s", r.raw)
	}
	id := a["id"].(string)
	// The digest sent with the request is checked, and accepted when it matches.
	withDigest := map[string]any{"type": "report", "title": "x", "content": content, "uri": uri, "media_type": mediaType, "content_digest": digest}
	expect(t, createArtifact(e, key, uniqueKey("digest"), withDigest), http.StatusCreated, "")

	// A replay answers the original; the key with another body is refused.
	again := createArtifact(e, key, idem, body)
	expect(t, again, http.StatusOK, "")
	if again.meta()["duplicate"] != true || again.data()["artifact"].(map[string]any)["id"] != id || again.data()["event"].(map[string]any)["eventId"] != ev["eventId"] {
		t.Fatalf("replay %s", again.raw)
	}
	other := map[string]any{"type": "report", "title": "Another", "content": "x"}
	expect(t, createArtifact(e, key, idem, other), http.StatusConflict, accountable.ECodeIdempotencyKeyReused)

	// Reads: with its content, at its version, by any case of its id.
	g := getArtifact(e, key, id, "")
	expect(t, g, http.StatusOK, "")
	if toJSON(g.data()["artifact"]) != toJSON(a) {
		t.Fatalf("read %s\nwant %s", toJSON(g.data()["artifact"]), toJSON(a))
	}
	expect(t, getArtifact(e, key, strings.ToUpper(id), "expected_version=1"), http.StatusOK, "")
	c := getArtifact(e, key, id, "expected_version=2")
	expect(t, c, http.StatusConflict, accountable.ECodeVersionConflict)
	if c.errorObj()["details"].(map[string]any)["current_version"] != 1.0 {
		t.Fatalf("conflict %s", c.raw)
	}
	expect(t, getArtifact(e, key, id, "expected_version=0"), http.StatusBadRequest, accountable.ECodeValidationFailed)
	expect(t, getArtifact(e, key, id, "expected_version=one"), http.StatusBadRequest, accountable.ECodeValidationFailed)
	expect(t, getArtifact(e, key, "not-a-uuid", ""), http.StatusBadRequest, accountable.ECodeValidationFailed)

	// Another workspace: the same 404 as an id never issued, with or without a version.
	stranger := storetest.NewTenant(t, e.db)
	for _, q := range []string{"", "expected_version=2"} {
		theirs, never := getArtifact(e, stranger.Key, id, q), getArtifact(e, stranger.Key, uuid.NewString(), q)
		expect(t, theirs, http.StatusNotFound, accountable.ECodeNotFound)
		if d := sameResponse(theirs, never); d != "" {
			t.Fatal(d)
		}
	}
	if l := listArtifacts(e, stranger.Key, ""); len(l.data()["artifacts"].([]any)) != 0 {
		t.Fatalf("the stranger lists %s", l.raw)
	}
	// Another workspace's Idempotency-Key means nothing to the stranger.
	expect(t, createArtifact(e, stranger.Key, idem, other), http.StatusCreated, "")

	// The ledger holds artifact.created with a self-contained payload (no content).
	events := e.streamEvents(key, "event_type=artifact.created", 2)
	if len(events) != 2 {
		t.Fatalf("events %v", events)
	}
	first := events[0]
	p := first["payload"].(map[string]any)
	if first["aggregateType"] != "artifact" || first["aggregateId"] != id || first["id"] != ev["eventId"] || p["artifact_id"] != id ||
		p["type"] != "report" || p["title"] != "Weekly report" || p["content_digest"] != digest || p["size_bytes"] != float64(len(content)) ||
		p["has_content"] != true || p["created_at"] != a["created_at"] || p["entity_type"] != nil || p["command_id"] != "cmd-7" ||
		p["uri"] != uri || p["media_type"] != mediaType || p["content"] != nil {
		t.Fatalf("event %v", first)
	}
	if v := e.do(request{method: "GET", path: "/events/verify", key: key}); v.data()["verified"] != true {
		t.Fatalf("ledger: %s", v.raw)
	}
}

// Artifacts naming the entity that produced them: the entity must be the workspace's
// (another workspace's is the 404 of one never issued); lists filter by entity and type,
// newest first, page by cursor, and leave content out.
func TestArtifactEntitiesAndLists(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	key := tenant.Key
	task := createWork(t, e, key, "Write the report")
	d := e.do(request{method: "POST", path: "/decisions", key: key, body: map[string]any{"title": "Publish it?"}})
	expect(t, d, http.StatusCreated, "")
	decision := d.data()["decision"].(map[string]any)["id"].(string)

	stranger := storetest.NewTenant(t, e.db)
	theirTask := createWork(t, e, stranger.Key, "Theirs")
	link := func(entityType, entityID string) map[string]any {
		return map[string]any{"type": "link", "title": "PR", "uri": "https://example.com/pr/1", "entity_type": entityType, "entity_id": entityID}
	}
	theirs := createArtifact(e, key, uniqueKey("x"), link("task", theirTask))
	never := createArtifact(e, key, uniqueKey("x"), link("task", uuid.NewString()))
	expect(t, theirs, http.StatusNotFound, accountable.ECodeNotFound)
	if diff := sameResponse(theirs, never); diff != "" {
		t.Fatal(diff)
	}
	// A decision's id is not a task's; an id never issued is not found whatever its type.
	expect(t, createArtifact(e, key, uniqueKey("x"), link("task", decision)), http.StatusNotFound, accountable.ECodeNotFound)
	for _, typ := range accountable.EntityType("").Enum() {
		expect(t, createArtifact(e, key, uniqueKey("x"), link(typ.(string), uuid.NewString())), http.StatusNotFound, accountable.ECodeNotFound)
	}

	// Seven artifacts: four of the task (one with its id upper-cased), two of the decision, one of nothing.
	var ids []string
	for i, b := range []map[string]any{
		link("task", task),
		{"type": "document", "title": "Draft", "content": strings.Repeat("draft ", 100), "entity_type": "task", "entity_id": strings.ToUpper(task)},
		link("decision", decision),
		{"type": "code_change", "title": "Diff", "content": "--- a\n+++ b\n", "uri": "https://example.com/c/1", "entity_type": "task", "entity_id": task},
		{"type": "other", "title": "Loose note", "content": "n"},
		link("decision", decision),
		{"type": "dataset", "title": "Rows", "uri": "s3://bucket/rows.parquet", "entity_type": "task", "entity_id": task},
	} {
		r := createArtifact(e, key, uniqueKey("list-"+strconv.Itoa(i)), b)
		expect(t, r, http.StatusCreated, "")
		ids = append(ids, r.data()["artifact"].(map[string]any)["id"].(string))
	}
	newest := slices.Clone(ids)
	slices.Reverse(newest)
	pick := func(idx ...int) []string {
		var out []string
		for _, i := range idx {
			out = append(out, ids[i])
		}
		slices.Reverse(out)
		return out
	}
	idsOf := func(r response) []string {
		var out []string
		for _, a := range r.data()["artifacts"].([]any) {
			m := a.(map[string]any)
			if _, has := m["content"]; has {
				t.Fatalf("a list shows content: %v", m)
			}
			out = append(out, m["id"].(string))
		}
		return out
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"", newest},
		{"entity_type=task&entity_id=" + task, pick(0, 1, 3, 6)},
		{"entity_type=task&entity_id=" + strings.ToUpper(task), pick(0, 1, 3, 6)},
		{"entity_type=decision&entity_id=" + decision, pick(2, 5)},
		{"type=link", pick(0, 2, 5)},
		{"type=link&entity_type=task&entity_id=" + task, pick(0)},
		{"entity_type=task&entity_id=" + theirTask, nil},
		{"type=image", nil},
	} {
		r := listArtifacts(e, key, c.query)
		expect(t, r, http.StatusOK, "")
		if got := idsOf(r); !slices.Equal(got, c.want) || r.meta()["count"] != float64(len(c.want)) {
			t.Fatalf("%q: %v, want %v", c.query, got, c.want)
		}
	}
	// The document's summary says what its content is without showing it.
	l := listArtifacts(e, key, "type=document")
	if s := l.data()["artifacts"].([]any)[0].(map[string]any); s["has_content"] != true || s["size_bytes"] != 600.0 || s["entity_id"] != task {
		t.Fatalf("summary %v", s)
	}
	// Pages of three: every artifact once, newest first.
	var paged []string
	cursor := ""
	for range 10 {
		q := "limit=3"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		r := listArtifacts(e, key, q)
		expect(t, r, http.StatusOK, "")
		paged = append(paged, idsOf(r)...)
		if r.meta()["hasMore"] != true {
			break
		}
		cursor = r.meta()["nextCursor"].(string)
	}
	if !slices.Equal(paged, newest) {
		t.Fatalf("paged %v, want %v", paged, newest)
	}
	for _, q := range []string{"entity_type=task", "entity_id=" + task, "type=video", "entity_type=workspace&entity_id=" + task,
		"entity_type=task&entity_id=42", "limit=0", "limit=1001", "cursor=nonsense"} {
		expect(t, listArtifacts(e, key, q), http.StatusBadRequest, accountable.ECodeValidationFailed)
	}
	if v := e.do(request{method: "GET", path: "/events/verify", key: key}); v.data()["verified"] != true {
		t.Fatalf("ledger: %s", v.raw)
	}
}

func TestArtifactTypes(t *testing.T) {
	e := newEnv(t, nil)
	key := storetest.NewTenant(t, e.db).Key
	r := e.do(request{method: "GET", path: "/artifact-types", key: key})
	expect(t, r, http.StatusOK, "")
	types := r.data()["artifact_types"].([]any)
	if len(types) != len(accountable.ArtifactTypes) || r.meta()["count"] != float64(len(types)) {
		t.Fatalf("types %s", r.raw)
	}
	byType := map[string]map[string]any{}
	for _, x := range types {
		m := x.(map[string]any)
		byType[m["type"].(string)] = m
	}
	if toJSON(byType["link"]["fields"]) != `["uri"]` || toJSON(byType["report"]["fields"]) != `["uri","content"]` ||
		byType["document"]["description"] == "" {
		t.Fatalf("catalogue %s", r.raw)
	}
	expect(t, e.do(request{method: "GET", path: "/artifact-types"}), http.StatusUnauthorized, "")
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
	fp, _ := accountable.DedupFingerprint(tenant.Principal.WorkspaceID, "github", "delivery-1")
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
	time.Sleep(time.Until(expires) + 50*time.Millisecond)
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
