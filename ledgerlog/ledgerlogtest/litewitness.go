// Package ledgerlogtest runs a real C2SP tlog-witness for tests: torchwood's litewitness
// as a process of its own (package litewitness), built by scripts/stack.sh, which names
// it in ACCOUNTABLE_LITEWITNESS_BIN and ACCOUNTABLE_WITNESSCTL_BIN.
package ledgerlogtest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"os"
	"testing"

	"github.com/accountablework/accountable/ledgerlog"
	"github.com/accountablework/accountable/ledgerlog/litewitness"
)

// Litewitness is a running litewitness.
type Litewitness struct {
	Name    string // its key name
	URL     string // its prefix (POST URL + "/add-checkpoint")
	Witness ledgerlog.Witness
	p       *litewitness.Process
}

// StartLitewitness starts a litewitness named name on a free 127.0.0.1 port; the test's
// cleanup stops it (and shows its log when the test failed).
func StartLitewitness(tb testing.TB, name string) *Litewitness {
	tb.Helper()
	bin, ctl := os.Getenv("ACCOUNTABLE_LITEWITNESS_BIN"), os.Getenv("ACCOUNTABLE_WITNESSCTL_BIN")
	if bin == "" || ctl == "" {
		tb.Fatal("ACCOUNTABLE_LITEWITNESS_BIN and ACCOUNTABLE_WITNESSCTL_BIN are not set: run the tests through scripts/stack.sh (make test)")
	}
	// A short directory: a unix socket's path is limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "lw")
	if err != nil {
		tb.Fatal(err)
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := litewitness.Start(litewitness.Options{Bin: bin, Ctl: ctl, Dir: dir, Name: name, Addr: freeAddr(tb), Key: key})
	if err != nil {
		os.RemoveAll(dir)
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		p.Stop()
		if tb.Failed() {
			b, _ := os.ReadFile(p.LogPath)
			tb.Logf("litewitness log:\n%s", b)
		}
		os.RemoveAll(dir)
	})
	return &Litewitness{Name: name, URL: p.Witness.URL, Witness: p.Witness, p: p}
}

// AddLog has the witness know a log (origin) whose checkpoints are signed by vkey.
func (lw *Litewitness) AddLog(tb testing.TB, origin, vkey string) {
	tb.Helper()
	if err := lw.p.AddLogs(context.Background(), vkey, origin); err != nil {
		tb.Fatal(err)
	}
}

func freeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
