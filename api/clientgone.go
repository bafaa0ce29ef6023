package api

import (
	"context"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
)

// fasthttp does not tell a handler that its client went away, so a request that outlives
// watchAfter has its connection watched: when the peer closes it (or it fails), the
// request's context is cancelled, which cancels its database statements and workflow
// waits. Fast requests only cost a timer.
const (
	watchAfter = 200 * time.Millisecond
	watchEvery = 100 * time.Millisecond
)

// watchClient cancels ctx (through cancel) when fc's client closes its connection while
// the request runs; the returned stop ends the watch.
func watchClient(fc *fiber.Ctx, cancel context.CancelFunc) (stop func()) {
	sc, ok := fc.Context().Conn().(syscall.Conn)
	if !ok {
		return func() {}
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return func() {}
	}
	done := make(chan struct{})
	t := time.AfterFunc(watchAfter, func() {
		tick := time.NewTicker(watchEvery)
		defer tick.Stop()
		for {
			if peerClosed(raw) {
				cancel()
				return
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() {
		t.Stop()
		close(done)
	}
}
