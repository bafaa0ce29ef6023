package main

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/accountablework/accountable/api"
)

// The request log writes one line per request. Writing each line with its own write(2)
// costs about as much as the rest of a cached read (measured with make bench), so lines
// are gathered in memory and written together: every LOG_FLUSH_INTERVAL, when 64 KiB
// have gathered, at once for a record at warning level or above, and at shutdown. A crash
// can lose at most the lines of the last interval; LOG_FLUSH_INTERVAL=0 writes every line
// at once.

const logBufferSize = 64 << 10

// logBuffer gathers log output for w and writes it out periodically.
type logBuffer struct {
	mu   sync.Mutex
	w    *bufio.Writer
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

func newLogBuffer(w io.Writer, interval time.Duration) *logBuffer {
	b := &logBuffer{w: bufio.NewWriterSize(w, logBufferSize), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				b.Flush()
			case <-b.stop:
				b.Flush()
				return
			}
		}
	}()
	return b
}

// Write gathers p (bufio writes through when p does not fit).
func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Write(p)
}

// Flush writes out what has gathered.
func (b *logBuffer) Flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.w.Flush() // nowhere to report a failing log
}

// Close writes out what has gathered and stops the periodic flush.
func (b *logBuffer) Close() {
	b.once.Do(func() { close(b.stop); <-b.done })
}

// flushingHandler writes out the buffer after a record at warning level or above, so the
// lines that matter most are never held back.
type flushingHandler struct {
	slog.Handler
	buf *logBuffer
}

func (h flushingHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		h.buf.Flush()
	}
	return err
}

func (h flushingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushingHandler{h.Handler.WithAttrs(attrs), h.buf}
}

func (h flushingHandler) WithGroup(name string) slog.Handler {
	return flushingHandler{h.Handler.WithGroup(name), h.buf}
}

// flushingLineHandler is the service's own logger: the request log line is written into
// the buffer directly (api.JSONLineHandler, the same bytes as slog's), and flushed as
// flushingHandler flushes a record. Handlers derived from it (WithAttrs, WithGroup) are
// plain flushingHandlers and go through slog.
type flushingLineHandler struct{ flushingHandler }

func (h flushingLineHandler) WriteJSONLine(level slog.Level, line []byte) error {
	err := h.Handler.(*api.JSONLineHandler).WriteJSONLine(level, line)
	if level >= slog.LevelWarn {
		h.buf.Flush()
	}
	return err
}
