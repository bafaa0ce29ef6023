package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/api"
	"github.com/accountablework/accountable/store/storetest"
)

// dialSmallSendBuffer connects to e with a small send buffer, so that the kernel cannot
// take the whole body while the server ignores it (loopback buffers would otherwise hide
// the problem for a few MiB), and a deadline that bounds a server that neither reads nor
// closes.
func (e *env) dialSmallSendBuffer(deadline time.Duration) net.Conn {
	e.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := conn.(*net.TCPConn).SetWriteBuffer(64 << 10); err != nil {
		conn.Close()
		e.t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(deadline)) //nolint:errcheck // a fresh TCP connection; the deadline only bounds the test
	return conn
}

// sendWholeBody writes the head and then the whole body before reading anything, as
// Python's http.client and many other simple clients do, and then reads the answer. It
// fails when the write or the read fails (a server that closes with unread data resets
// the connection, and the client never sees its answer).
func (e *env) sendWholeBody(head string, body io.Reader) (response, error) {
	e.t.Helper()
	conn := e.dialSmallSendBuffer(30 * time.Second)
	defer conn.Close()
	if _, err := io.WriteString(conn, head); err != nil {
		return response{}, fmt.Errorf("writing the head: %w", err)
	}
	if _, err := io.Copy(conn, body); err != nil {
		return response{}, fmt.Errorf("writing the body: %w", err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return response{}, fmt.Errorf("reading the answer: %w", err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return response{}, fmt.Errorf("reading the answer's body: %w", err)
	}
	out := response{status: res.StatusCode, header: res.Header, raw: raw}
	if err := json.Unmarshal(raw, &out.rawBody); err != nil {
		return out, fmt.Errorf("answer is not JSON: %s", raw)
	}
	out.body, _ = out.rawBody.(map[string]any)
	return out, nil
}

func requestHead(key, framing string) string {
	return "POST /api/v1/work HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer " + key +
		"\r\nContent-Type: application/json\r\nIdempotency-Key: whole-body\r\nX-Request-Id: whole-body-413\r\n" + framing + "\r\n"
}

// chunked frames n bytes of body as chunks of 32 KiB.
func chunked(n int) io.Reader {
	var b bytes.Buffer
	chunk := bytes.Repeat([]byte("x"), 32<<10)
	for n > 0 {
		size := min(n, len(chunk))
		fmt.Fprintf(&b, "%x\r\n%s\r\n", size, chunk[:size])
		n -= size
	}
	b.WriteString("0\r\n\r\n")
	return &b
}

// A client that writes its whole oversized body before reading gets the 413 envelope, not
// a reset connection: the server reads and discards a bounded amount before it closes.
func TestOversizeBodyWrittenWholeGets413(t *testing.T) {
	e := newEnv(t, nil) // the default limit: 1 MiB
	tenant := storetest.NewTenant(t, e.db)
	const size = 3 << 20
	cases := []struct {
		name    string
		framing string
		body    io.Reader
	}{
		{"content-length", fmt.Sprintf("Content-Length: %d\r\n", size), bytes.NewReader(bytes.Repeat([]byte("x"), size))},
		{"chunked", "Transfer-Encoding: chunked\r\n", chunked(size)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := e.as(t).sendWholeBody(requestHead(tenant.Key, c.framing), c.body)
			if err != nil {
				t.Fatal(err)
			}
			expect(t, r, http.StatusRequestEntityTooLarge, accountable.ECodePayloadTooLarge)
			// fasthttp drops the request's headers when a chunked body runs over (so the
			// client's request id is not known then, and the server makes one).
			id := r.header.Get("X-Request-Id")
			if r.errorObj()["requestId"] != id || (c.name == "content-length" && id != "whole-body-413") {
				t.Fatalf("request id: %s %s", id, r.raw)
			}
			e.oas.check(t, "POST", "/work", r.status, r.rawBody)
		})
	}
}

// A client that writes a head over the server's limit (a long URL or header) before
// reading gets the 431 envelope, not a reset connection, as with an oversized body: the
// server answers before it has read the whole head. (The OAuth fuzz run met the reset with
// an 8 KB authorize URL.)
func TestOversizeHeadWrittenWholeGets431(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	long := strings.Repeat("a", 512<<10)
	for _, c := range []struct{ name, head string }{
		{"url", "GET /api/v1/work?cursor=" + long + " HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer " + tenant.Key + "\r\n\r\n"},
		{"header", "GET /api/v1/work HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer " + tenant.Key + "\r\nX-Long: " + long + "\r\n\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := e.as(t).sendWholeBody(c.head, strings.NewReader(""))
			if err != nil {
				t.Fatal(err)
			}
			expect(t, r, http.StatusRequestHeaderFieldsTooLarge, accountable.ECodeHeadersTooLarge)
		})
	}
}

// zeros is an endless body.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// writeUntilRefused dials e, writes head and then body until the server ends the
// connection, and returns how much of the body it wrote and how long it took. It fails
// the test when the server neither reads nor closes within 20s (a hang).
func (e *env) writeUntilRefused(head string, body io.Reader) (int64, time.Duration) {
	e.t.Helper()
	conn := e.dialSmallSendBuffer(20 * time.Second)
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, head); err != nil {
		e.t.Fatal(err)
	}
	n, err := io.Copy(conn, body)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		e.t.Fatalf("the server neither read nor closed the connection (%d bytes written)", n)
	}
	if err == nil {
		e.t.Fatalf("the server read the whole body of %d bytes", n)
	}
	return n, time.Since(start)
}

// Draining is bounded: a client that sends far more than the bound, or that trickles its
// body, has its connection closed instead of holding it.
func TestOversizeBodyDrainIsBounded(t *testing.T) {
	const drainBytes = 256 << 10
	e := newEnv(t, nil, func(c *api.Config, _ *api.Deps) { c.OversizeDrainBytes, c.OversizeDrainTime = drainBytes, time.Minute })
	tenant := storetest.NewTenant(t, e.db)
	const size = 64 << 20
	n, _ := e.writeUntilRefused(requestHead(tenant.Key, fmt.Sprintf("Content-Length: %d\r\n", size)), io.LimitReader(zeros{}, size))
	t.Logf("wrote %d bytes of %d before the server closed", n, size)

	// A client that trickles its body is closed after the time bound, having had its answer.
	e = newEnv(t, e.db, func(c *api.Config, _ *api.Deps) { c.OversizeDrainTime = 300 * time.Millisecond })
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second)) //nolint:errcheck // a fresh TCP connection; the deadline only bounds the test
	start := time.Now()
	if _, err := io.WriteString(conn, requestHead(tenant.Key, fmt.Sprintf("Content-Length: %d\r\n", 3<<20))); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d", res.StatusCode)
	}
	// The pace of a slow client, not a synchronisation: it writes until the server is gone.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		if _, err := conn.Write(bytes.Repeat([]byte("x"), 1024)); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal("the server never closed the trickling connection")
			}
			break
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("closed after %v", d)
	}
}

// A connection a client opened and never used (Go's HTTP client dials spare ones) does not
// hold the shutdown up: fasthttp alone would wait for it until the read timeout (30 s),
// past the stop's deadline. A connection with a request in flight is still waited for.
func TestShutdownClosesConnectionsThatNeverSentARequest(t *testing.T) {
	e := newEnv(t, nil)
	addr := strings.TrimPrefix(e.base, "http://")
	unused, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer unused.Close()
	if res, err := e.client.Get(e.base + "/healthz"); err != nil {
		t.Fatal(err)
	} else {
		res.Body.Close()
	}
	// A request whose head has begun but not ended: in flight, so waited for until it ends.
	started, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer started.Close()
	// Accepted before it writes, then no longer unused: the server has read the first bytes.
	storetest.WaitFor(t, 5*time.Second, "the server to accept the connection", func() bool { return e.server.ConnUnused(started.LocalAddr().String()) })
	if _, err := io.WriteString(started, "GET /healthz HTTP/1.1\r\nHost: api.test\r\n"); err != nil {
		t.Fatal(err)
	}
	storetest.WaitFor(t, 5*time.Second, "the server to read the request's first bytes", func() bool { return !e.server.ConnUnused(started.LocalAddr().String()) })

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	begun := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- e.server.Shutdown(ctx) }()
	unused.SetReadDeadline(time.Now().Add(5 * time.Second)) //nolint:errcheck // a fresh TCP connection; the deadline only bounds the test
	if n, err := unused.Read(make([]byte, 1)); n != 0 || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the unused connection was not closed by the shutdown (read %d, %v)", n, err)
	}
	select {
	case err := <-stopped:
		t.Fatalf("shutdown ended (%v) with a request still in flight", err)
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := io.WriteString(started, "\r\n"); err != nil {
		t.Fatal(err)
	}
	status, err := bufio.NewReader(started).ReadString('\n')
	if err != nil || !strings.Contains(status, " 200 ") {
		t.Fatalf("the request in flight was not answered: %q, %v", status, err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if took := time.Since(begun); took > 5*time.Second {
		t.Fatalf("shutdown took %v", took)
	}
}
