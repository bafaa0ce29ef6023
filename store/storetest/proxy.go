package storetest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards a local TCP port to a server and can be cut and restored, to play a
// dependency (PostgreSQL, Temporal) that goes away and comes back.
type Proxy struct {
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

// NewProxy starts forwarding a free local port to target ("host:port").
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	p := &Proxy{target: target}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	tb.Cleanup(p.Down)
	return p
}

// Addr is the local address that forwards to the target.
func (p *Proxy) Addr() string { return p.addr }

func (p *Proxy) serve(ln net.Listener) {
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
			go func() { io.Copy(up, c); up.Close() }() //nolint:errcheck // a copy ends when either side closes
			go func() { io.Copy(c, up); c.Close() }()  //nolint:errcheck // a copy ends when either side closes
		}
	}()
}

// Down stops listening and cuts every forwarded connection.
func (p *Proxy) Down() {
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

// Up listens again on the same address.
func (p *Proxy) Up(tb testing.TB) {
	tb.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		tb.Fatal(err)
	}
	p.serve(ln)
}
