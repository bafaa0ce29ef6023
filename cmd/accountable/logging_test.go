package main

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx/fxtest"

	"github.com/accountablework/accountable/store/storetest"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Info lines are gathered and written together (every interval, and at close); a warning
// is written at once, with everything before it, in order.
func TestLogLinesAreGatheredAndWarningsWrittenAtOnce(t *testing.T) {
	out := &syncBuffer{}
	buf := newLogBuffer(out, time.Hour) // no periodic flush during the test
	log := slog.New(flushingHandler{slog.NewJSONHandler(buf, nil), buf})
	log.Info("first")
	log.Info("second")
	if got := out.String(); got != "" {
		t.Fatalf("info lines written at once: %q", got)
	}
	log.Warn("third")
	got := out.String()
	if i1, i2, i3 := strings.Index(got, "first"), strings.Index(got, "second"), strings.Index(got, "third"); i1 < 0 || i2 < i1 || i3 < i2 {
		t.Fatalf("after a warning: %q", got)
	}
	log.With("component", "x").Info("fourth")
	buf.Close()
	if !strings.Contains(out.String(), `"fourth"`) || !strings.Contains(out.String(), `"component":"x"`) {
		t.Fatalf("close did not write the rest: %q", out.String())
	}

	// The periodic flush writes lines without a warning or a close.
	out2 := &syncBuffer{}
	buf2 := newLogBuffer(out2, 10*time.Millisecond)
	defer buf2.Close()
	slog.New(flushingHandler{slog.NewJSONHandler(buf2, nil), buf2}).Info("periodic")
	storetest.WaitFor(t, 5*time.Second, "the periodic flush to write the line", func() bool { return strings.Contains(out2.String(), "periodic") })
}

// The service's logger takes the request log line as bytes (api.JSONLineHandler) in both
// of its forms, so the API writes it without slog's handler; through the buffer, a
// request line at warning level (a 5xx) is written at once, as a warning record is.
func TestServiceLoggerTakesTheRequestLine(t *testing.T) {
	type lineWriter interface {
		WriteJSONLine(level slog.Level, line []byte) error
	}
	for _, interval := range []time.Duration{0, time.Hour} {
		out := &syncBuffer{}
		lc := fxtest.NewLifecycle(t)
		log := newLogger(lc, Config{LogLevel: slog.LevelInfo, LogOutput: out, LogFlushInterval: interval})
		lc.RequireStart()
		h, ok := log.Handler().(lineWriter)
		if !ok {
			t.Fatalf("flush interval %v: the logger's handler %T does not take request lines", interval, log.Handler())
		}
		if err := h.WriteJSONLine(slog.LevelInfo, []byte("{\"msg\":\"info line\"}\n")); err != nil {
			t.Fatal(err)
		}
		if interval > 0 && strings.Contains(out.String(), "info line") {
			t.Fatalf("an info request line was written at once through the buffer: %q", out.String())
		}
		if err := h.WriteJSONLine(slog.LevelError, []byte("{\"msg\":\"error line\"}\n")); err != nil {
			t.Fatal(err)
		}
		if got := out.String(); got != "{\"msg\":\"info line\"}\n{\"msg\":\"error line\"}\n" {
			t.Fatalf("flush interval %v: after an error line the output is %q", interval, got)
		}
		lc.RequireStop()
	}
}
