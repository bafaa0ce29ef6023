package api_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// tcpProxy forwards a local port to PostgreSQL and can be cut and restored, to play a
// database that goes away and comes back.
type tcpProxy struct {
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	p := &tcpProxy{target: target}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.down)
	return p
}

func (p *tcpProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }() //nolint:errcheck
			go func() { io.Copy(c, up); c.Close() }()  //nolint:errcheck
		}
	}()
}

// down closes the listener and every forwarded connection.
func (p *tcpProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// up listens again on the same address.
func (p *tcpProxy) up(t *testing.T) {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.serve(ln)
}

func TestDatabaseOutageAnswers503AndRecovers(t *testing.T) {
	direct := storetest.Open(t)
	tenant := storetest.NewTenant(t, direct)

	u, err := url.Parse(storetest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := newTCPProxy(t, u.Host)
	u.Host = proxy.addr
	db, err := store.Open(context.Background(), store.Config{URL: u.String()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	e := newEnv(t, db)

	id := createWork(t, e, tenant.Key, "before the outage")
	proxy.down()

	r := e.do(request{method: "GET", path: "/work/{taskId}", params: map[string]string{"taskId": id}, key: tenant.Key})
	expect(t, r, http.StatusServiceUnavailable, accountable.ECodeLedgerUnavailable)
	r = e.do(request{method: "POST", path: "/work", key: tenant.Key, headers: map[string]string{"Idempotency-Key": "during-outage"},
		body: map[string]any{"title": "during the outage"}})
	expect(t, r, http.StatusServiceUnavailable, accountable.ECodeLedgerUnavailable)
	r = e.do(request{method: "GET", path: "/readyz", root: "/"})
	if r.status != http.StatusServiceUnavailable || r.body["checks"].(map[string]any)["postgres"] != "unavailable" {
		t.Fatalf("readyz during outage: %d %s", r.status, r.raw)
	}

	proxy.up(t)
	deadline := time.Now().Add(15 * time.Second)
	for {
		r = e.do(request{method: "GET", path: "/work/{taskId}", params: map[string]string{"taskId": id}, key: tenant.Key})
		if r.status == http.StatusOK {
			break
		}
		if r.status != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("after the outage: %d %s", r.status, r.raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Nothing was half-written during the outage, and the retried create succeeds.
	r = e.do(request{method: "POST", path: "/work", key: tenant.Key, headers: map[string]string{"Idempotency-Key": "during-outage"},
		body: map[string]any{"title": "during the outage"}})
	expect(t, r, http.StatusCreated, "")
	expect(t, e.do(request{method: "GET", path: "/readyz", root: "/"}), http.StatusOK, "")
}
