package api_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
	"github.com/accountablework/accountable/ledgerlog"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
	"github.com/accountablework/accountable/worker"
)

// The isolation matrix's lines of the transparency log (isolation_test.go). The log's
// reads answer only once a checkpoint is signed, and the matrix's env is quiet (no
// sealer): the fixture and the preparations seal the logs themselves.
func init() {
	isolationCovers(isolationLines{
		fixtures: map[string]func(o *owner) string{
			"eventId": (*owner).sealedEvent,
		},
		// Tile paths are coordinates, not resources: every log of one event or more has
		// the first leaf's partial tile.
		pathValues: map[string]string{"tilePath": "0/000.p/1"},
		queryProbes: map[string][]string{
			// from is required; 0, the empty tree, is every log's.
			"proveLedgerConsistency": {"from=0"},
		},
		preparations: map[string]func(o *owner, ids map[string]string){
			"getLedgerCheckpoint":    sealEveryLog,
			"getLedgerLogCheckpoint": sealEveryLog,
			"getLedgerLogTile":       sealEveryLog,
			"proveLedgerConsistency": sealEveryLog,
		},
		publicOperations: map[string]string{
			"getLedgerLogKey": "the log's public key and name, the same for every workspace",
		},
	})
}

// The test envs' log: one key for the package, as one deployment has, since every env's
// sealer may seal any workspace of the package's database (its sweep finds them all),
// and a sealer refuses a log another key signed.
const testLedgerLogName = "accountable.test"

var testLedgerKey = sync.OnceValue(func() *ledgerlog.Key {
	skey, err := ledgerlog.GenerateKey(testLedgerLogName)
	if err != nil {
		panic(err)
	}
	storetest.NoteSecrets(skey)
	k, err := ledgerlog.ParseKey(skey)
	if err != nil {
		panic(err)
	}
	return k
})

// newTestSealer is a ledger sealer of the package's key (watcher may be nil).
func newTestSealer(db *store.DB, interval time.Duration, watcher worker.AppendWatcher) *worker.LedgerSealer {
	return worker.NewLedgerSealer(db, testLedgerKey(), testLedgerLogName, interval, watcher, uncountedSeals{},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
}

type uncountedSeals struct{}

func (uncountedSeals) LedgerCheckpointSigned(time.Duration) {}
func (uncountedSeals) LedgerLogRefused(string)              {}

// sealUntil seals workspace ws's log until a checkpoint holds the event eventID (an event
// commits before the log may take it: the stream serves it once every older transaction
// has ended).
func sealUntil(t testing.TB, db *store.DB, ws, eventID string) {
	t.Helper()
	s := newTestSealer(db, time.Hour, nil)
	ctx := context.Background()
	storetest.WaitFor(t, 20*time.Second, "a checkpoint holding event "+eventID, func() bool {
		if _, err := s.Seal(ctx, ws); err != nil {
			t.Fatalf("sealing workspace %s: %v", ws, err)
		}
		leaf, err := db.LedgerLeafOf(ctx, ws, eventID)
		if err != nil {
			return false
		}
		cp, err := db.LedgerCheckpoint(ctx, ws)
		return err == nil && cp.TreeSize > leaf.Index
	})
}

// sealEveryLog seals every log behind its events, as a sealer's sweep does: the owner's
// and the intruder's among them. Logs another test broke on purpose stay refused.
func sealEveryLog(o *owner, _ map[string]string) {
	o.t.Helper()
	ctx := context.Background()
	s := newTestSealer(o.e.db, time.Hour, nil)
	ids, err := o.e.db.LedgerLogsBehind(ctx, 10_000)
	if err != nil {
		o.t.Fatal(err)
	}
	for _, ws := range ids {
		var refused *worker.RefusalError
		if _, err := s.Seal(ctx, ws); err != nil && (!errors.As(err, &refused) || ws == o.tenant.Principal.WorkspaceID) {
			o.t.Fatalf("sealing workspace %s: %v", ws, err)
		}
	}
}

// sealedEvent is an event of the owner's (its newest) in a signed checkpoint.
func (o *owner) sealedEvent() string {
	o.t.Helper()
	o.task()
	events := o.e.streamEvents(o.tenant.Key, "", 1)
	last := events[len(events)-1]
	id := last["id"].(string)
	sealUntil(o.t, o.e.db, last["workspaceId"].(string), id)
	return id
}

// bearer adds the credential to every request of a generic client.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// logKey is the log's public key as GET /events/log/key serves it (account-free).
func logKey(t *testing.T, e *env) (note.Verifier, map[string]any) {
	t.Helper()
	r := e.do(request{method: "GET", path: "/events/log/key"})
	expect(t, r, http.StatusOK, "")
	k := r.data()
	v, err := note.NewVerifier(k["publicKey"].(string))
	if err != nil {
		t.Fatalf("the served public key: %v: %s", err, r.raw)
	}
	return v, k
}

// waitCheckpoint waits for the env's sealer to sign a checkpoint of at least size events
// of key's workspace and returns it (GET /events/checkpoint).
func waitCheckpoint(t *testing.T, e *env, key string, size int) map[string]any {
	t.Helper()
	var cp map[string]any
	storetest.WaitFor(t, 20*time.Second, fmt.Sprintf("a checkpoint of %d events", size), func() bool {
		r := e.do(request{method: "GET", path: "/events/checkpoint", key: key})
		if r.status == http.StatusNotFound {
			return false
		}
		expect(t, r, http.StatusOK, "")
		cp = r.data()
		return int(cp["treeSize"].(float64)) >= size
	})
	return cp
}

// openCheckpoint checks a served signed note with the served key and the workspace's
// origin.
func openCheckpoint(t *testing.T, signed string, origin string, v note.Verifier) tlog.Tree {
	t.Helper()
	cp, _, err := ledgerlog.OpenCheckpoint([]byte(signed), origin, v)
	if err != nil {
		t.Fatalf("%v:\n%s", err, signed)
	}
	return cp.Tree
}

func decodeHashes(t *testing.T, list any) []tlog.Hash {
	t.Helper()
	var out []tlog.Hash
	for _, s := range list.([]any) {
		out = append(out, decodeHash(t, s.(string)))
	}
	return out
}

func decodeHash(t *testing.T, s string) tlog.Hash {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != tlog.HashSize {
		t.Fatalf("not a base64 hash: %q", s)
	}
	return tlog.Hash(b)
}

func proofPath(eventID string) request {
	return request{method: "GET", path: "/events/{eventId}/proof", params: map[string]string{"eventId": eventID}}
}

// A client holding only the log's public key checks everything the service hands out:
// the newest checkpoint opens with the served key and names the workspace's origin; every
// event of the stream is proved in it, its entry hashing to the event's eventHash; a
// later checkpoint is proved to extend an earlier one; and the same checks fail on what
// the log does not hold.
func TestLedgerLogProvesEveryEvent(t *testing.T) {
	e := newEnv(t, nil)
	ten := storetest.NewTenant(t, e.db)
	key, ws := ten.Key, ten.Principal.WorkspaceID
	verifier, logKeyData := logKey(t, e)
	origin := logKeyData["originPrefix"].(string) + ws
	if logKeyData["logName"] != testLedgerLogName || origin != ledgerlog.Origin(testLedgerLogName, ws) ||
		logKeyData["publicKey"] != testLedgerKey().VerifierKey {
		t.Fatalf("the log key: %v", logKeyData)
	}

	for i := range 3 {
		createWork(t, e, key, "sealed "+strconv.Itoa(i))
	}
	events := e.streamEvents(key, "", storetest.TenantEvents+3)
	first := waitCheckpoint(t, e, key, len(events))
	if first["origin"] != origin || first["publicKey"] != testLedgerKey().VerifierKey {
		t.Fatalf("checkpoint %v, want origin %s", first, origin)
	}
	firstTree := openCheckpoint(t, first["checkpoint"].(string), origin, verifier)
	if firstTree.N != int64(first["treeSize"].(float64)) || base64.StdEncoding.EncodeToString(firstTree.Hash[:]) != first["rootHash"] {
		t.Fatalf("the signed note says %d %x, the answer %v", firstTree.N, firstTree.Hash, first)
	}

	// More events, and a later checkpoint.
	id := createWork(t, e, key, "to complete")
	w := getWork(t, e, key, id)
	expect(t, e.do(request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": id}, key: key,
		body: map[string]any{"version_token": w["concurrency"].(map[string]any)["version_token"]}}), http.StatusOK, "")
	events = e.streamEvents(key, "", storetest.TenantEvents+5)
	newest := waitCheckpoint(t, e, key, len(events))
	tree := openCheckpoint(t, newest["checkpoint"].(string), origin, verifier)
	if tree.N != int64(len(events)) {
		t.Fatalf("the newest checkpoint holds %d events, the stream %d", tree.N, len(events))
	}

	// Every event, in the newest tree (by default) and in the first (when it holds it).
	for i, ev := range events {
		req := proofPath(ev["id"].(string))
		req.key = key
		r := e.do(req)
		expect(t, r, http.StatusOK, "")
		p := r.data()
		entry := []byte(p["entry"].(string))
		if int(p["leafIndex"].(float64)) != i || p["eventId"] != ev["id"] || int64(p["treeSize"].(float64)) != tree.N {
			t.Fatalf("event %d: %s", i, r.raw)
		}
		if ledgerlog.EventHashOf(entry) != ev["eventHash"] {
			t.Fatalf("event %d: the entry hashes to %s, the event's eventHash is %s", i, ledgerlog.EventHashOf(entry), ev["eventHash"])
		}
		if leaf := ledgerlog.LeafHash(entry); decodeHash(t, p["leafHash"].(string)) != leaf {
			t.Fatalf("event %d: leafHash %s", i, p["leafHash"])
		}
		at := openCheckpoint(t, p["checkpoint"].(string), origin, verifier)
		if err := ledgerlog.VerifyInclusion(at, int64(i), entry, decodeHashes(t, p["proof"])); err != nil || at != tree {
			t.Fatalf("event %d: %v (tree %d)", i, err, at.N)
		}

		req.query = "tree_size=" + strconv.FormatInt(firstTree.N, 10)
		r = e.do(req)
		if int64(i) >= firstTree.N {
			expect(t, r, http.StatusBadRequest, accountable.ECodeValidationFailed)
			continue
		}
		expect(t, r, http.StatusOK, "")
		p = r.data()
		at = openCheckpoint(t, p["checkpoint"].(string), origin, verifier)
		if err := ledgerlog.VerifyInclusion(at, int64(i), []byte(p["entry"].(string)), decodeHashes(t, p["proof"])); err != nil || at != firstTree {
			t.Fatalf("event %d in the first tree: %v", i, err)
		}
	}

	// The later tree extends the earlier one, by default up to the newest.
	for _, q := range []string{fmt.Sprintf("from=%d&to=%d", firstTree.N, tree.N), fmt.Sprintf("from=%d", firstTree.N)} {
		r := e.do(request{method: "GET", path: "/events/consistency", key: key, query: q})
		expect(t, r, http.StatusOK, "")
		c := r.data()
		from := openCheckpoint(t, c["fromCheckpoint"].(string), origin, verifier)
		to := openCheckpoint(t, c["toCheckpoint"].(string), origin, verifier)
		if from != firstTree || to != tree || int64(c["from"].(float64)) != from.N || int64(c["to"].(float64)) != to.N {
			t.Fatalf("%s: %s", q, r.raw)
		}
		if err := ledgerlog.VerifyConsistency(from, to, decodeHashes(t, c["proof"])); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if len(c["proof"].([]any)) == 0 && from.N != to.N {
			t.Fatalf("%s: an empty proof", q)
		}
	}
	r := e.do(request{method: "GET", path: "/events/consistency", key: key, query: "from=0"})
	expect(t, r, http.StatusOK, "")
	if c := r.data(); c["fromCheckpoint"] != nil || len(c["proof"].([]any)) != 0 || int64(c["to"].(float64)) != tree.N {
		t.Fatalf("from the empty tree: %s", r.raw)
	}

	// What the log does not hold.
	unsigned := strconv.FormatInt(tree.N+1000, 10)
	for _, c := range []struct {
		req    request
		status int
		code   string
	}{
		{proofPath("0190c0de-0000-7000-8000-000000000001"), http.StatusNotFound, accountable.ECodeNotFound},
		{request{method: "GET", path: "/events/{eventId}/proof", params: map[string]string{"eventId": events[0]["id"].(string)}, query: "tree_size=" + unsigned},
			http.StatusNotFound, accountable.ECodeNotFound},
		{request{method: "GET", path: "/events/{eventId}/proof", params: map[string]string{"eventId": "not-a-uuid"}}, http.StatusBadRequest, accountable.ECodeValidationFailed},
		{request{method: "GET", path: "/events/consistency", query: fmt.Sprintf("from=%d&to=%d", tree.N, firstTree.N)}, http.StatusBadRequest, accountable.ECodeValidationFailed},
		{request{method: "GET", path: "/events/consistency", query: fmt.Sprintf("from=%d", tree.N+1)}, http.StatusBadRequest, accountable.ECodeValidationFailed},
		{request{method: "GET", path: "/events/consistency", query: "from=1&to=" + unsigned}, http.StatusNotFound, accountable.ECodeNotFound},
		{request{method: "GET", path: "/events/consistency"}, http.StatusBadRequest, accountable.ECodeValidationFailed},
	} {
		c.req.key = key
		r := e.do(c.req)
		expect(t, r, c.status, c.code)
	}

	// Another workspace's events are unknown ones.
	other := storetest.NewTenant(t, e.db)
	for _, ev := range events {
		req := proofPath(ev["id"].(string))
		req.key = other.Key
		r := e.do(req)
		expect(t, r, http.StatusNotFound, accountable.ECodeNotFound)
	}
	expect(t, e.do(request{method: "GET", path: "/events/checkpoint"}), http.StatusUnauthorized, "")
}

// A generic C2SP tlog client audits a workspace from its tiles alone: torchwood's tile
// fetcher, pointed at /events/log/ with the workspace's credential, reads the checkpoint,
// checks it with the served key, and reads every entry, each checked against the tree
// by the client itself; the entries are the stream's events. The log is past one full
// tile, so that full tiles, a partial one and a tile of the level above are all read.
func TestLedgerLogAuditedFromTilesAlone(t *testing.T) {
	e := newEnv(t, nil)
	ten := storetest.NewTenant(t, e.db)
	key, ws := ten.Key, ten.Principal.WorkspaceID
	verifier, k := logKey(t, e)
	origin := k["originPrefix"].(string) + ws
	const tasks = torchwood.TileWidth + 20 - storetest.TenantEvents
	for i := range tasks {
		createWork(t, e, key, "tile "+strconv.Itoa(i))
	}
	events := e.streamEvents(key, "", storetest.TenantEvents+tasks)
	waitCheckpoint(t, e, key, len(events))

	for _, root := range []string{"/api/v1", "/api/client"} {
		ctx := context.Background()
		fetcher, err := torchwood.NewTileFetcher(e.base+root+"/events/log/",
			torchwood.WithHTTPClient(&http.Client{Timeout: 30 * time.Second, Transport: bearer{key, http.DefaultTransport}}))
		if err != nil {
			t.Fatal(err)
		}
		signed, err := fetcher.ReadEndpoint(ctx, "checkpoint")
		if err != nil {
			t.Fatal(err)
		}
		tree := openCheckpoint(t, string(signed), origin, verifier)
		if tree.N != int64(len(events)) {
			t.Fatalf("%s: the checkpoint holds %d events, the stream %d", root, tree.N, len(events))
		}
		client, err := torchwood.NewClient(fetcher)
		if err != nil {
			t.Fatal(err)
		}
		// Entries may stop short of a trailing partial tile: resume from where it stopped.
		next := int64(0)
		for round := 0; next < tree.N && round < 10; round++ {
			for i, entry := range client.Entries(ctx, tree, next) {
				if i != next {
					t.Fatalf("%s: entry %d, want %d", root, i, next)
				}
				if got, want := ledgerlog.EventHashOf(entry), events[i]["eventHash"]; got != want {
					t.Fatalf("%s: entry %d hashes to %s, the stream's event %s", root, i, got, want)
				}
				next++
			}
			if err := client.Err(); err != nil {
				t.Fatalf("%s: after %d entries: %v", root, next, err)
			}
		}
		if next != tree.N {
			t.Fatalf("%s: the client read %d entries of %d", root, next, tree.N)
		}
	}

	// The C2SP endpoints' answers: a signed note not to be stored, tiles forever.
	r := e.do(request{method: "GET", path: "/events/log/checkpoint", key: key})
	expect(t, r, http.StatusOK, "")
	if ct, cc := r.header.Get("Content-Type"), r.header.Get("Cache-Control"); ct != "text/plain; charset=utf-8" || cc != "no-store" {
		t.Fatalf("checkpoint: %s, %s", ct, cc)
	}
	tile := func(path, key string) response {
		return e.do(request{method: "GET", path: "/events/log/tile/{tilePath}", params: map[string]string{"tilePath": path}, key: key})
	}
	// 276 leaves: tile 0/000 is full, 0/001 holds 20, and level 1 one hash.
	for _, p := range []string{"0/000", "0/001.p/20", "0/001.p/3", "1/000.p/1", "entries/000", "entries/001.p/20", "entries/000.p/7"} {
		r := tile(p, key)
		expect(t, r, http.StatusOK, "")
		if ct, cc := r.header.Get("Content-Type"), r.header.Get("Cache-Control"); ct != "application/octet-stream" || cc != "private, max-age=31536000, immutable" {
			t.Fatalf("tile %s: %s, %s", p, ct, cc)
		}
		tl, err := torchwood.ParseTilePath("tile/" + p)
		if err != nil {
			t.Fatal(err)
		}
		if tl.L >= 0 && len(r.raw) != tl.W*tlog.HashSize {
			t.Fatalf("tile %s: %d bytes", p, len(r.raw))
		}
	}
	for _, p := range []string{"0/001.p/21", "0/001", "0/002.p/1", "1/000", "1/000.p/2", "2/000.p/1", "entries/001.p/21", "entries/001",
		"0/000.p/0", "8/000.p/1", "x", "0/1", "entries/x001/000"} {
		expect(t, tile(p, key), http.StatusNotFound, accountable.ECodeNotFound)
	}
	// Another workspace's tiles are its own: this one's tile 0/001 is not there, nor are
	// its full tiles, which the server now keeps in memory (a cached tile is served to the
	// workspace it was read for only).
	other := storetest.NewTenant(t, e.db)
	expect(t, tile("0/001.p/20", other.Key), http.StatusNotFound, accountable.ECodeNotFound)
	expect(t, tile("0/000", other.Key), http.StatusNotFound, accountable.ECodeNotFound)
	expect(t, tile("entries/000", other.Key), http.StatusNotFound, accountable.ECodeNotFound)
	expect(t, tile("0/000", ""), http.StatusUnauthorized, "")
	// A cached tile is the tile: the same bytes as the first answer, which the client
	// checked against the signed tree above.
	first, again := tile("entries/000", key), tile("entries/000", key)
	expect(t, again, http.StatusOK, "")
	if !bytes.Equal(first.raw, again.raw) || again.header.Get("Cache-Control") != "private, max-age=31536000, immutable" {
		t.Fatal("the cached entry bundle differs from the one read first")
	}
}

// Before a workspace's first checkpoint (the quiet env has no sealer), its log reads are
// 404 not_found, its events' proofs say why, and the key is served all the same.
func TestLedgerLogBeforeAnyCheckpoint(t *testing.T) {
	e := newQuietEnv(t)
	ten := storetest.NewTenant(t, e.db)
	events := e.streamEvents(ten.Key, "", storetest.TenantEvents)
	for _, req := range []request{
		{method: "GET", path: "/events/checkpoint"},
		{method: "GET", path: "/events/log/checkpoint"},
		{method: "GET", path: "/events/log/tile/{tilePath}", params: map[string]string{"tilePath": "0/000.p/1"}},
		{method: "GET", path: "/events/consistency", query: "from=0"},
		proofPath(events[0]["id"].(string)),
	} {
		req.key = ten.Key
		r := e.do(req)
		expect(t, r, http.StatusNotFound, accountable.ECodeNotFound)
	}
	req := proofPath(events[0]["id"].(string))
	req.key = ten.Key
	if msg := e.do(req).errorObj()["message"].(string); !strings.Contains(msg, "not in a checkpoint yet") {
		t.Fatalf("the message: %s", msg)
	}
	logKey(t, e)
}

// A completion's receipt travels: GET /work/{taskId}/receipt answers it with the event
// that recorded it and, once a checkpoint holds that event, the proof, and a holder with
// nothing but the log's public key checks all of it offline: the payload's canonical
// digest is the entry's payloadDigest and it holds the receipt, the entry hashes to the
// event's hash, and the proof holds the entry in the signed checkpoint. A receipt changed
// after it was handed out fails the check.
func TestWorkReceiptCarriesItsProof(t *testing.T) {
	e := newEnv(t, nil)
	ten := storetest.NewTenant(t, e.db)
	key, ws := ten.Key, ten.Principal.WorkspaceID
	id := createWork(t, e, key, "a receipt that travels")
	receiptOf := request{method: "GET", path: "/work/{taskId}/receipt", params: map[string]string{"taskId": id}, key: key}
	expect(t, e.do(receiptOf), http.StatusNotFound, accountable.ECodeNotFound)

	w := getWork(t, e, key, id)
	done := e.do(request{method: "POST", path: "/work/{taskId}/complete", params: map[string]string{"taskId": id}, key: key,
		body: map[string]any{"version_token": w["concurrency"].(map[string]any)["version_token"], "summary": "Shipped",
			"cost_cents": 420, "evidence": map[string]any{"links": []any{"https://example.com/pr/7"}}}})
	expect(t, done, http.StatusOK, "")
	completion := done.data()

	var got map[string]any
	storetest.WaitFor(t, 20*time.Second, "the receipt's ledger proof", func() bool {
		r := e.do(receiptOf)
		expect(t, r, http.StatusOK, "")
		got = r.data()
		return got["ledger_proof"] != nil
	})
	if got["event_id"] != completion["eventId"] || got["event_hash"] != completion["eventHash"] ||
		toJSON(got["receipt"]) != toJSON(completion["receipt"]) {
		t.Fatalf("the receipt read back %v differs from the completion's %v", got, completion)
	}

	_, k := logKey(t, e)
	auditor, err := ledgerlog.NewAuditor(k["publicKey"].(string), k["originPrefix"].(string)+ws)
	if err != nil {
		t.Fatal(err)
	}
	check := func(r map[string]any) error {
		p := r["ledger_proof"].(map[string]any)
		entry := []byte(p["entry"].(string))
		if _, err := auditor.CheckInclusion(ledgerlog.Inclusion{Entry: entry, Index: int64(p["leafIndex"].(float64)),
			Checkpoint: []byte(p["checkpoint"].(string)), Proof: decodeHashes(t, p["proof"]), EventHash: r["event_hash"].(string)}); err != nil {
			return err
		}
		var header accountable.EventHeader
		if err := json.Unmarshal(entry, &header); err != nil {
			return err
		}
		if digest, err := canonical.DigestOf(r["payload"]); err != nil || digest != header.PayloadDigest {
			return fmt.Errorf("the payload's digest %s is not the entry's %s (%v)", digest, header.PayloadDigest, err)
		}
		if toJSON(r["payload"].(map[string]any)["receipt"]) != toJSON(r["receipt"]) {
			return errors.New("the payload does not hold the receipt")
		}
		return nil
	}
	if err := check(got); err != nil {
		t.Fatalf("the receipt does not check: %v", err)
	}

	// The receipt changed by its holder (a higher cost) no longer checks.
	forged := map[string]any{}
	if err := json.Unmarshal([]byte(toJSON(got)), &forged); err != nil {
		t.Fatal(err)
	}
	forged["receipt"].(map[string]any)["cost_cents"] = 4200
	forged["payload"].(map[string]any)["receipt"].(map[string]any)["cost_cents"] = 4200
	if err := check(forged); err == nil {
		t.Fatal("a receipt with another cost checked")
	}
	// ledgerlog's own check of a receipt (what accountable ledger audit --receipt runs)
	// agrees on both.
	if _, header, err := auditor.CheckReceipt([]byte(toJSON(got))); err != nil || header.ID != got["event_id"] {
		t.Fatalf("CheckReceipt of the receipt: %v (%+v)", err, header)
	}
	if _, _, err := auditor.CheckReceipt([]byte(toJSON(forged))); err == nil {
		t.Fatal("CheckReceipt took a receipt with another cost")
	}
	delete(forged["payload"].(map[string]any)["receipt"].(map[string]any), "cost_cents")
	forged["payload"] = got["payload"]
	if _, _, err := auditor.CheckReceipt([]byte(toJSON(forged))); err == nil {
		t.Fatal("CheckReceipt took a receipt that is not its payload's")
	}
}

// An imported receipt travels too: GET /agent-work-receipts/{receiptId} answers the
// document with the receipt.imported event and, once a checkpoint holds it, its proof; the
// check offline holds, and fails for a document changed after the import.
func TestImportedReceiptCarriesItsProof(t *testing.T) {
	e := newEnv(t, nil)
	ten := storetest.NewTenant(t, e.db)
	key, ws := ten.Key, ten.Principal.WorkspaceID
	imported := e.do(request{method: "POST", path: "/agent-work-receipts", key: key, body: receiptImportBody()})
	expect(t, imported, http.StatusCreated, "")
	id := imported.data()["receipt_id"].(string)
	read := request{method: "GET", path: "/agent-work-receipts/{receiptId}", params: map[string]string{"receiptId": id}, key: key}
	var got map[string]any
	storetest.WaitFor(t, 20*time.Second, "the imported receipt's ledger proof", func() bool {
		r := e.do(read)
		expect(t, r, http.StatusOK, "")
		got = r.data()
		return got["ledger_proof"] != nil
	})
	if got["receipt_id"] != id || got["external_receipt_id"] != imported.data()["external_receipt_id"] {
		t.Fatalf("the imported receipt read back: %v", got)
	}
	_, k := logKey(t, e)
	auditor, err := ledgerlog.NewAuditor(k["publicKey"].(string), k["originPrefix"].(string)+ws)
	if err != nil {
		t.Fatal(err)
	}
	if _, header, err := auditor.CheckReceipt([]byte(toJSON(got))); err != nil || header.ID != got["event_id"] {
		t.Fatalf("CheckReceipt of the imported receipt: %v (%+v)", err, header)
	}
	forged := map[string]any{}
	if err := json.Unmarshal([]byte(toJSON(got)), &forged); err != nil {
		t.Fatal(err)
	}
	forged["document"].(map[string]any)["receipt_id"] = "another-receipt"
	if _, _, err := auditor.CheckReceipt([]byte(toJSON(forged))); err == nil {
		t.Fatal("CheckReceipt took a document changed after the import")
	}
	other := storetest.NewTenant(t, e.db)
	read.key = other.Key
	expect(t, e.do(read), http.StatusNotFound, accountable.ECodeNotFound)
}
