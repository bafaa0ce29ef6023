package api

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/accountablework/accountable"
)

// The request log line is written for every request, and slog's handler costs a tenth of
// a write's CPU in the service (its attribute plumbing, its float through encoding/json).
// A logger whose handler is a JSONLineHandler gets the line written directly into a pooled
// buffer, with exactly the bytes its slog.JSONHandler writes for the same record (same
// members in the same order, slog's escaping and time format: TestRequestLineIsSlogs
// compares them on many random requests). Every other line goes through slog as before,
// and so does the request line of any other handler.

// JSONLineHandler is slog's JSONHandler (default ReplaceAttr and AddSource, no attributes
// or groups added) that also writes a line made for it: the request log line.
type JSONLineHandler struct {
	*slog.JSONHandler
	w *lockedWriter
}

// NewJSONLineHandler returns the handler that slog.NewJSONHandler(w, opts) is, taking the
// request log line as bytes too. It panics when opts set ReplaceAttr or AddSource, which
// would change the bytes of every line.
func NewJSONLineHandler(w io.Writer, opts *slog.HandlerOptions) *JSONLineHandler {
	if opts != nil && (opts.ReplaceAttr != nil || opts.AddSource) {
		panic("api: a JSONLineHandler's lines are slog.JSONHandler's with neither ReplaceAttr nor AddSource")
	}
	lw := &lockedWriter{w: w}
	return &JSONLineHandler{JSONHandler: slog.NewJSONHandler(lw, opts), w: lw}
}

// WriteJSONLine writes line, a whole record's line as the handler would write it (its
// newline included), in one Write as the handler writes its own.
func (h *JSONLineHandler) WriteJSONLine(_ slog.Level, line []byte) error {
	_, err := h.w.Write(line)
	return err
}

// lockedWriter orders the handler's own writes and the lines written directly, as the
// handler orders its own (one Write per line, under a lock).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// jsonLineWriter is a handler that writes lines made for it: a JSONLineHandler, or a
// handler around one that keeps its bytes (the service's buffered log, cmd/accountable).
type jsonLineWriter interface {
	slog.Handler
	WriteJSONLine(level slog.Level, line []byte) error
}

// requestLine is what the request's log line says.
type requestLine struct {
	id, method, path string
	status           int
	durationMS       float64
	principal        bool // a key or session asked: the line names its workspace and key prefix
	workspaceID      string
	keyPrefix        string
}

// lineBuffers are the buffers request lines are written in.
var lineBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// writeRequestLine writes l at level through h, at now; false when it cannot (the line's
// time is outside RFC 3339's years, where slog writes an error of its own).
func writeRequestLine(h jsonLineWriter, ctx context.Context, level slog.Level, now time.Time, l *requestLine) bool {
	if y := now.Year(); y < 0 || y >= 10000 {
		return false
	}
	if !h.Enabled(ctx, level) {
		return true
	}
	bp := lineBuffers.Get().(*[]byte)
	buf := appendRequestLine((*bp)[:0], level, now, l)
	h.WriteJSONLine(level, buf) //nolint:errcheck // slog's handlers report a failed write to no one either
	if cap(buf) <= 4<<10 {      // a line with a huge path is not kept
		*bp = buf
		lineBuffers.Put(bp)
	}
	return true
}

// appendRequestLine appends the line slog.JSONHandler writes for the record
// Logger.LogAttrs(ctx, level, "request", ...l's attributes) made at now.
func appendRequestLine(buf []byte, level slog.Level, now time.Time, l *requestLine) []byte {
	buf = append(buf, `{"time":"`...)
	buf = now.AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, `","level":"`...)
	buf = appendSlogString(buf, level.String())
	buf = append(buf, `","msg":"request","request_id":"`...)
	buf = appendSlogString(buf, l.id)
	buf = append(buf, `","method":"`...)
	buf = appendSlogString(buf, l.method)
	buf = append(buf, `","path":"`...)
	buf = appendSlogString(buf, l.path)
	buf = append(buf, `","status":`...)
	buf = strconv.AppendInt(buf, int64(l.status), 10)
	buf = append(buf, `,"duration_ms":`...)
	buf = accountable.AppendJSONFloat(buf, l.durationMS)
	if l.principal {
		buf = append(buf, `,"workspace_id":"`...)
		buf = appendSlogString(buf, l.workspaceID)
		buf = append(buf, `","key_prefix":"`...)
		buf = appendSlogString(buf, l.keyPrefix)
		buf = append(buf, '"')
	}
	return append(buf, "}\n"...)
}

// appendSlogString appends s as slog's JSONHandler writes a string's contents: " and \
// escaped, control characters as \n, \r, \t or \u00XX, invalid UTF-8 as \ufffd, U+2028
// and U+2029 escaped; < > & as they are (unlike encoding/json).
func appendSlogString(buf []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch b {
			case '\\', '"':
				buf = append(buf, '\\', b)
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigit[b>>4], hexDigit[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			buf = append(append(buf, s[start:i]...), `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			buf = append(append(buf, s[start:i]...), `\u202`...)
			buf = append(buf, hexDigit[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(buf, s[start:]...)
}

const hexDigit = "0123456789abcdef"

// jsonLinesOf returns log's handler when it takes lines as bytes, else nil.
func jsonLinesOf(log *slog.Logger) jsonLineWriter {
	if log == nil {
		return nil
	}
	h, _ := log.Handler().(jsonLineWriter)
	return h
}
