package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/cursors"
	"github.com/accountablework/accountable/store/storetest"
)

// sseFrame is one Server-Sent Events frame as a client parses it; a comment is a frame
// with only comment set.
type sseFrame struct {
	id, event, data, comment string
}

// sseClient reads the frames of one live stream.
type sseClient struct {
	res    *http.Response
	frames chan sseFrame
	opened time.Time
}

// openStream opens GET /events/stream?transport=sse&<query> and parses its frames in the
// background; the stream is closed when the test ends.
func (e *env) openStream(t *testing.T, key, query string, headers map[string]string) *sseClient {
	t.Helper()
	target := e.base + api.V1Root + "/events/stream?transport=sse"
	if query != "" {
		target += "&" + query
	}
	req, err := http.NewRequest(http.MethodGet, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := (&http.Client{}).Do(req) // no client timeout: the lease bounds the stream
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, Content-Type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	c := &sseClient{res: res, frames: make(chan sseFrame, 10_000), opened: time.Now()}
	go func() {
		defer close(c.frames)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		var f sseFrame
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if f != (sseFrame{}) {
					c.frames <- f
				}
				f = sseFrame{}
			case strings.HasPrefix(line, ":"):
				f.comment = strings.TrimSpace(line[1:])
			default:
				name, value, _ := strings.Cut(line, ":")
				value = strings.TrimPrefix(value, " ")
				switch name {
				case "id":
					f.id = value
				case "event":
					f.event = value
				case "data":
					f.data = value
				}
			}
		}
	}()
	return c
}

// next returns the next frame that is not a comment, failing after timeout.
func (c *sseClient) next(t *testing.T, timeout time.Duration) sseFrame {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case f, ok := <-c.frames:
			if !ok {
				t.Fatal("the stream ended")
			}
			if f.comment == "" || f.event != "" {
				return f
			}
		case <-deadline:
			t.Fatalf("no frame within %s", timeout)
		}
	}
}

// quiet fails if a frame other than a comment arrives within d.
func (c *sseClient) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case f, ok := <-c.frames:
			if !ok {
				return
			}
			if f.event != "" {
				t.Fatalf("unexpected frame %+v", f)
			}
		case <-deadline:
			return
		}
	}
}

// rest collects every frame until the stream ends.
func (c *sseClient) rest(t *testing.T, timeout time.Duration) []sseFrame {
	t.Helper()
	var out []sseFrame
	deadline := time.After(timeout)
	for {
		select {
		case f, ok := <-c.frames:
			if !ok {
				return out
			}
			out = append(out, f)
		case <-deadline:
			t.Fatalf("the stream did not end within %s (%d frames)", timeout, len(out))
		}
	}
}

func eventOf(t *testing.T, f sseFrame) map[string]any {
	t.Helper()
	if f.event != "ledger_event" {
		t.Fatalf("frame %+v is not a ledger_event", f)
	}
	if _, ok := cursors.ParseStream(f.id); !ok {
		t.Fatalf("frame id %q is not a cursor", f.id)
	}
	var ev map[string]any
	if err := json.Unmarshal([]byte(f.data), &ev); err != nil {
		t.Fatalf("frame data: %v: %s", err, f.data)
	}
	return ev
}

// A lease sends the events already in the stream, in the paged stream's order and with its
// cursors, then each new commit as it happens; its ids resume the stream (after= and
// Last-Event-ID), and another workspace's events never appear.
func TestEventStreamSendsTheLedgerLive(t *testing.T) {
	e := newEnv(t, nil)
	key := storetest.NewTenant(t, e.db).Key
	other := storetest.NewTenant(t, e.db).Key
	createWork(t, e, key, "before the stream")
	paged := e.streamEvents(key, "", 1)

	s := e.openStream(t, key, "", nil)
	var ids []string
	for i, want := range paged {
		f := s.next(t, 10*time.Second)
		ev := eventOf(t, f)
		if ev["id"] != want["id"] || ev["eventType"] != want["eventType"] || ev["eventHash"] != want["eventHash"] {
			t.Fatalf("frame %d: %v %v, want %v %v", i, ev["id"], ev["eventType"], want["id"], want["eventType"])
		}
		ids = append(ids, f.id)
	}
	r := e.do(request{method: "GET", path: "/events/stream", key: key, query: "limit=1000"})
	if last := r.meta()["nextCursor"]; last != ids[len(ids)-1] {
		t.Fatalf("the last frame's id %s is not the page's nextCursor %v", ids[len(ids)-1], last)
	}

	createWork(t, e, other, "another workspace's")
	start := time.Now()
	task := createWork(t, e, key, "during the stream")
	f := s.next(t, 10*time.Second)
	ev := eventOf(t, f)
	if ev["eventType"] != "work.created" || ev["aggregateId"] != task {
		t.Fatalf("live frame %v %v, want work.created of %s", ev["eventType"], ev["aggregateId"], task)
	}
	t.Logf("commit to frame: %s", time.Since(start))

	// Resuming after the second-to-last id sends the last event first, by either means.
	for _, resume := range []struct {
		query   string
		headers map[string]string
	}{{"after=" + url.QueryEscape(ids[len(ids)-1]), nil}, {"", map[string]string{"Last-Event-ID": ids[len(ids)-1]}}} {
		again := e.openStream(t, key, resume.query+"&stream_ms=2000", resume.headers)
		if got := eventOf(t, again.next(t, 10*time.Second)); got["aggregateId"] != task {
			t.Fatalf("resumed with %v %v: first event %v", resume.query, resume.headers, got["aggregateId"])
		}
	}
}

// The paged stream's filters apply to a lease.
func TestEventStreamFilters(t *testing.T) {
	e := newEnv(t, nil)
	key := storetest.NewTenant(t, e.db).Key
	s := e.openStream(t, key, "event_type=work.created&stream_ms=20000", nil)
	for _, title := range []string{"one", "two"} {
		task := createWork(t, e, key, title)
		if ev := eventOf(t, s.next(t, 10*time.Second)); ev["eventType"] != "work.created" || ev["aggregateId"] != task {
			t.Fatalf("frame %v", ev)
		}
	}
}

// An event committed while an older transaction is still running is held back, as in the
// paged stream, and sent once that transaction ends: late, never skipped.
func TestEventStreamSendsHeldEventsOnceTheyAreReadable(t *testing.T) {
	e := newEnv(t, nil)
	key := storetest.NewTenant(t, e.db).Key
	s := e.openStream(t, key, "event_type=work.created", nil)
	blocker := storetest.Conn(t)
	tx, err := blocker.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), `SELECT pg_current_xact_id()`); err != nil { // the horizon stops here
		t.Fatal(err)
	}
	task := createWork(t, e, key, "held")
	s.quiet(t, 700*time.Millisecond)
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	if ev := eventOf(t, s.next(t, 10*time.Second)); ev["aggregateId"] != task {
		t.Fatalf("frame %v", ev)
	}
}

// Another process's commits reach a stream through the feed's LISTEN connection, not by
// polling (poll_ms is longer than the wait).
func TestEventStreamHearsOtherProcesses(t *testing.T) {
	var ledger *countingLedger
	e := newEnv(t, nil, func(_ *api.Config, d *api.Deps) {
		api.WrapStore(d, func(l api.LedgerStore) api.LedgerStore { ledger = &countingLedger{LedgerStore: l}; return ledger })
	})
	key := storetest.NewTenant(t, e.db).Key
	s := e.openStream(t, key, "event_type=work.created&poll_ms=10000", nil)
	// The first read is done (the stream subscribed to the feed before it): only a wake-up
	// reads again.
	storetest.WaitFor(t, 5*time.Second, "the stream's first read", func() bool { return ledger.done.Load() >= 1 })
	elsewhere := newEnv(t, storetest.Open(t))
	task := createWork(t, elsewhere, key, "from another process")
	if ev := eventOf(t, s.next(t, 5*time.Second)); ev["aggregateId"] != task {
		t.Fatalf("frame %v", ev)
	}
}

// countingLedger counts the stream reads of the API: begun (reads) and returned (done).
type countingLedger struct {
	api.LedgerStore
	reads, done atomic.Int64
}

func (l *countingLedger) StreamEvents(ctx context.Context, workspaceID string, f accountable.EventFilter) (accountable.EventPage, error) {
	l.reads.Add(1)
	defer l.done.Add(1)
	return l.LedgerStore.StreamEvents(ctx, workspaceID, f)
}

// An idle stream reads the ledger once, sends heartbeats, and ends with its lease.
func TestEventStreamIdleCostsNoQueries(t *testing.T) {
	var ledger *countingLedger
	e := newEnv(t, nil, func(_ *api.Config, d *api.Deps) {
		api.WrapStore(d, func(l api.LedgerStore) api.LedgerStore { ledger = &countingLedger{LedgerStore: l}; return ledger })
	})
	key := storetest.NewTenant(t, e.db).Key
	s := e.openStream(t, key, "event_type=work.completed&stream_ms=6500", nil)
	frames := s.rest(t, 15*time.Second)
	elapsed := time.Since(s.opened)
	var comments []string
	for _, f := range frames {
		if f.event != "" {
			t.Fatalf("frame %+v", f)
		}
		comments = append(comments, f.comment)
	}
	want := []string{"stream open", "heartbeat", "lease ended"}
	if strings.Join(comments, ",") != strings.Join(want, ",") {
		t.Fatalf("comments %q, want %q", comments, want)
	}
	if n := ledger.reads.Load(); n != 1 {
		t.Fatalf("%d reads of the ledger in an idle lease, want 1", n)
	}
	if elapsed < 6*time.Second || elapsed > 9*time.Second {
		t.Fatalf("a 6.5 s lease lasted %s", elapsed)
	}
}

// Shutdown ends open streams at once instead of waiting for their leases.
func TestEventStreamEndsAtShutdown(t *testing.T) {
	e := newEnv(t, nil)
	key := storetest.NewTenant(t, e.db).Key
	s := e.openStream(t, key, "stream_ms=60000", nil)
	s.next(t, 10*time.Second) // the tenant's own events: the stream is running
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.server.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	s.rest(t, 5*time.Second)
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("shutdown took %s with a stream open", d)
	}
}

func TestEventStreamRefusals(t *testing.T) {
	e := newEnv(t, nil)
	key := storetest.NewTenant(t, e.db).Key
	for _, c := range []struct {
		query   string
		headers map[string]string
		path    string
	}{
		{"transport=sse", map[string]string{"Accept": "application/json"}, "Accept"},
		{"transport=sse", map[string]string{"Last-Event-ID": "not-a-cursor"}, "Last-Event-ID"},
		{"transport=sse&after=nope", nil, "after"},
		{"transport=sse&stream_ms=999", nil, "stream_ms"},
		{"transport=sse&stream_ms=60001", nil, "stream_ms"},
		{"transport=sse&poll_ms=50", nil, "poll_ms"},
		{"transport=websocket", nil, "transport"},
	} {
		r := e.do(request{method: "GET", path: "/events/stream", key: key, query: c.query, headers: c.headers})
		expect(t, r, http.StatusBadRequest, accountable.ECodeValidationFailed)
		if !strings.Contains(string(r.raw), `"path":"`+c.path) {
			t.Fatalf("%s %v: %s", c.query, c.headers, r.raw)
		}
	}
}
