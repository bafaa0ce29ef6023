package main

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

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
