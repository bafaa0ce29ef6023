package api

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
)

// A request whose body is over the limit is answered 413 before its body is read, and
// fasthttp then closes the connection. Closing a socket with unread data makes the kernel
// reset the connection, so a client that writes its whole body before it reads (Python's
// http.client, curl without Expect, most simple clients) fails with "connection reset by
// peer" and never sees the 413. Like Go's net/http, the server therefore half-closes
// such a connection after the answer (so the client sees the answer end) and reads and
// discards what the client still sends, up to a bound in bytes and in time, before it
// closes: the client finishes writing and reads the answer. A head over the limit (431:
// a long URL or header) is answered before the rest of it is read, and is drained alike. Beyond the bound the
// connection is closed anyway (a reset), so a client cannot hold a connection open.
const (
	// defaultDrainExtra is read beyond the body limit by default (so the default bound
	// is the limit plus 4 MiB).
	defaultDrainExtra = 4 << 20
	// defaultDrainTime bounds the time a connection is drained.
	defaultDrainTime = 2 * time.Second
	// maxDraining bounds the connections drained at once; past it a refused connection is
	// closed at once, as without draining.
	maxDraining = 128
)

// unusedConnGrace is how long a connection that has sent nothing may still send its first
// request once shutdown has begun; past it, shutdown closes it. fasthttp marks a new
// connection active before its first byte arrives, so its shutdown would otherwise wait
// for every connection a client opened and never used (Go's HTTP client dials such spare
// connections) until the read timeout. Go's net/http counts such a connection as idle
// after 5 s; one second is the same rule at the pace of a stop.
const unusedConnGrace = time.Second

// drainListener hands out connections that can be marked to drain when closed, and keeps
// those that have not sent a byte yet, for shutdown to close.
type drainListener struct {
	net.Listener
	maxBytes int64
	maxTime  time.Duration
	slots    chan struct{}

	mu     sync.Mutex
	unused map[*drainConn]time.Time // accepted, nothing read yet: when accepted
}

func newDrainListener(ln net.Listener, maxBytes int64, maxTime time.Duration) *drainListener {
	return &drainListener{Listener: ln, maxBytes: maxBytes, maxTime: maxTime, slots: make(chan struct{}, maxDraining),
		unused: map[*drainConn]time.Time{}}
}

func (l *drainListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	dc := &drainConn{Conn: c, l: l}
	l.mu.Lock()
	l.unused[dc] = time.Now()
	l.mu.Unlock()
	return dc, nil
}

// forget drops c from the unused connections (it has sent something, or is closed).
func (l *drainListener) forget(c *drainConn) {
	l.mu.Lock()
	delete(l.unused, c)
	l.mu.Unlock()
}

// closeUnused closes, until ctx ends, every connection that has sent nothing for
// unusedConnGrace since it was accepted (shutdown runs it while fasthttp waits for open
// connections).
func (l *drainListener) closeUnused(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		var stale []*drainConn
		l.mu.Lock()
		for c, at := range l.unused {
			if time.Since(at) >= unusedConnGrace {
				stale = append(stale, c)
			}
		}
		l.mu.Unlock()
		for _, c := range stale {
			c.Close() // the connection is abandoned: nothing to do with its error
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// drainConn is a connection that, once marked by drainOnClose, is half-closed and drained
// (within the listener's bounds) when it is closed. fasthttp closes a connection in the
// goroutine that served it, after the answer was flushed.
type drainConn struct {
	net.Conn
	l     *drainListener
	drain atomic.Bool
	used  atomic.Bool // has read a byte (or is closed): no longer among the listener's unused
}

func (c *drainConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.used.Load() && c.used.CompareAndSwap(false, true) {
		c.l.forget(c)
	}
	return n, err
}

func (c *drainConn) drainOnClose() { c.drain.Store(true) }

// SyscallConn exposes the socket (watchClient polls it to see a client leave).
func (c *drainConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}

func (c *drainConn) Close() error {
	if c.used.CompareAndSwap(false, true) {
		c.l.forget(c)
	}
	if !c.drain.CompareAndSwap(true, false) {
		return c.Conn.Close()
	}
	select {
	case c.l.slots <- struct{}{}:
		defer func() { <-c.l.slots }()
	default:
		return c.Conn.Close()
	}
	// The FIN goes after the answer: the client sees it complete while it still writes.
	if hc, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		hc.CloseWrite() //nolint:errcheck // closing follows in any case
	}
	if c.Conn.SetReadDeadline(time.Now().Add(c.l.maxTime)) == nil {
		// Ends at the client's close (EOF), the bound or the deadline.
		io.CopyN(io.Discard, c.Conn, c.l.maxBytes) //nolint:errcheck // ends at the client's close (EOF), the bound or the deadline
	}
	return c.Conn.Close()
}

// closeAfterUnreadBody ends the connection of c after its answer, draining what the
// client still sends (see drainConn): for answers given before the request's body was
// read.
func closeAfterUnreadBody(c *fiber.Ctx) {
	c.Context().SetConnectionClose()
	if dc, ok := c.Context().Conn().(*drainConn); ok {
		dc.drainOnClose()
	}
}
