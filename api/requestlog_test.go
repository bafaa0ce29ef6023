package api

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// TestRequestLineIsSlogs compares the request line written directly (appendRequestLine)
// with the line slog's JSONHandler writes for the same record, on random requests: ids,
// methods and paths with every kind of character slog escapes (quotes, backslashes,
// control characters, invalid UTF-8, U+2028 and U+2029) and some it does not (< > &,
// other runes), times of every year RFC 3339 writes in many zones, any level, and
// durations of every magnitude.
func TestRequestLineIsSlogs(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 1))
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("", 0), time.FixedZone("A", 5*3600+30*60),
		time.FixedZone("B", -(9*3600 + 45*60 + 17)), time.FixedZone("C", 14*3600)}
	if ny, err := time.LoadLocation("America/New_York"); err == nil {
		zones = append(zones, ny)
	}
	var want bytes.Buffer
	h := slog.NewJSONHandler(&want, nil)
	for i := range 50000 {
		now := time.Unix(rng.Int64N(253402300799+62135596800)-62135596800, rng.Int64N(1e9)).In(zones[rng.IntN(len(zones))])
		if y := now.Year(); y < 0 || y >= 10000 { // a zone's offset may carry the edges past them
			continue
		}
		switch rng.IntN(4) {
		case 0:
			now = now.Truncate(time.Second)
		case 1:
			now = now.Truncate(time.Millisecond)
		}
		if rng.IntN(4) == 0 {
			now = time.Now() // with a monotonic reading, as the service's
		}
		level := []slog.Level{slog.LevelInfo, slog.LevelError, slog.LevelWarn, slog.LevelDebug, slog.Level(rng.IntN(40) - 20)}[rng.IntN(5)]
		l := requestLine{id: randomLogString(rng), method: randomLogString(rng), path: randomLogString(rng),
			status: rng.IntN(1000) - 100, durationMS: randomDuration(rng)}
		if rng.IntN(3) > 0 {
			l.principal, l.workspaceID, l.keyPrefix = true, randomLogString(rng), randomLogString(rng)
		}
		r := slog.NewRecord(now, level, "request", 0)
		r.AddAttrs(slog.String("request_id", l.id), slog.String("method", l.method), slog.String("path", l.path),
			slog.Int("status", l.status), slog.Float64("duration_ms", l.durationMS))
		if l.principal {
			r.AddAttrs(slog.String("workspace_id", l.workspaceID), slog.String("key_prefix", l.keyPrefix))
		}
		want.Reset()
		if err := h.Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		if got := appendRequestLine(nil, level, now, &l); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("request %d:\n got %q\nwant %q", i, got, want.Bytes())
		}
	}
}

// randomLogString is a string of pieces slog writes as they are and pieces it escapes.
func randomLogString(rng *rand.Rand) string {
	pieces := []string{"", "a", "/api/v1/work/", "0190c7a2-1b2c-7d3e-8f40-123456789abc", "POST", "svk_live_ab", " ", "\"", "\\",
		"\n", "\r", "\t", "\x00", "\x01", "\x1f", "\x7f", "<", ">", "&", "'", "é", "€", "😀", "\u2028", "\u2029", "\u2027",
		"\xff", "\xe2\x80", "\xed\xa0\x80", "\xc0\xaf", "%2F", "\ufffd", "\ufeff"}
	var b strings.Builder
	for range rng.IntN(12) {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	if rng.IntN(8) == 0 { // any bytes at all
		for range rng.IntN(20) {
			b.WriteByte(byte(rng.IntN(256)))
		}
	}
	return b.String()
}

// randomDuration is a duration in milliseconds as the service measures it (whole
// microseconds) or any finite number, tiny and huge ones included.
func randomDuration(rng *rand.Rand) float64 {
	switch rng.IntN(4) {
	case 0:
		return float64(rng.Int64N(1e7)) / 1000
	case 1:
		return float64(rng.Int64N(1e3)) / 1000
	case 2:
		return []float64{0, math.Copysign(0, -1), 1e-6, 9.99e-7, 1e21, 1e20, 123456789e13, -1.5, 5e-324, math.MaxFloat64}[rng.IntN(10)]
	}
	for {
		if f := math.Float64frombits(rng.Uint64()); !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f
		}
	}
}

// TestRequestLineThroughTheServer sends the same requests to a server whose logger takes
// the request line as bytes (NewJSONLineHandler) and to one whose logger is slog's
// JSONHandler: their lines differ in nothing but the time and the duration. The requests
// are answered, refused before authentication, refused by it, and failed by the server.
func TestRequestLineThroughTheServer(t *testing.T) {
	task := benchTask()
	key, keys := heldKey(task.WorkspaceID)
	stores := make([]any, len(storeTypes))
	stores[workStore.index] = benchWorkStore{task: task}
	var direct, viaSlog bytes.Buffer
	servers := []*Server{}
	for _, log := range []*slog.Logger{slog.New(NewJSONLineHandler(&direct, nil)), slog.New(slog.NewJSONHandler(&viaSlog, nil))} {
		s, err := NewServer(Config{SiteURL: "http://api.test"}, Deps{Keys: keys, stores: stores}, log)
		if err != nil {
			t.Fatal(err)
		}
		servers = append(servers, s)
	}
	if servers[0].lines == nil || servers[1].lines != nil {
		t.Fatal("the line is written directly for a JSONLineHandler only")
	}
	remote := &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 40000}
	requests := []struct {
		method, uri, auth string
		status            int
	}{
		{fiber.MethodGet, V1Root + "/work/" + task.ID, "Bearer " + key, fiber.StatusOK},
		{fiber.MethodGet, V1Root + "/work/" + task.ID + "?x=\"<\u2028>\"", "Bearer " + key, fiber.StatusOK},
		{fiber.MethodGet, V1Root + "/work/%22%5C%0A%E2%80%A8%FF", "Bearer " + key, fiber.StatusBadRequest},
		{fiber.MethodGet, V1Root + "/work/" + task.ID, "", fiber.StatusUnauthorized},
		{fiber.MethodGet, V1Root + "/work/" + task.ID, "Bearer svk_nothing", fiber.StatusUnauthorized},
		{fiber.MethodGet, V1Root + "/nowhere", "", fiber.StatusNotFound},
		{fiber.MethodPost, V1Root + "/work/" + task.ID + "/receipt", "Bearer " + key, fiber.StatusMethodNotAllowed},
		{fiber.MethodGet, V1Root + "/work/" + task.ID + "/receipt", "Bearer " + key, fiber.StatusInternalServerError}, // the bench store panics
	}
	for _, r := range requests {
		for _, s := range servers {
			var req fasthttp.Request
			req.Header.SetMethod(r.method)
			req.SetRequestURI(r.uri)
			req.Header.Set(fiber.HeaderXRequestID, "req-1")
			if r.auth != "" {
				req.Header.Set(fiber.HeaderAuthorization, r.auth)
			}
			rc := &fasthttp.RequestCtx{}
			rc.Init(&req, remote, nil)
			s.app.Handler()(rc)
			if rc.Response.StatusCode() != r.status {
				t.Errorf("%s %s: %d %s, want %d", r.method, r.uri, rc.Response.StatusCode(), rc.Response.Body(), r.status)
			}
		}
	}
	// Only the request lines: the server's other lines (the panic's) are slog's in both.
	varying := regexp.MustCompile(`"time":"[^"]+"|"duration_ms":[0-9.e-]+`)
	lines := func(b *bytes.Buffer) []string {
		var out []string
		for _, l := range strings.SplitAfter(b.String(), "\n") {
			if strings.Contains(l, `"msg":"request"`) {
				out = append(out, varying.ReplaceAllString(l, "…"))
			}
		}
		return out
	}
	got, want := lines(&direct), lines(&viaSlog)
	if len(want) != len(requests) {
		t.Fatalf("%d request lines through slog for %d requests:\n%s", len(want), len(requests), viaSlog.String())
	}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Errorf("line %d:\n got %q\nwant %q", i, got, want[i])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d lines, want %d", len(got), len(want))
	}
}
