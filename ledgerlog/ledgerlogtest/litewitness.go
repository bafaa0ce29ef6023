// Package ledgerlogtest runs a real C2SP tlog-witness for tests: torchwood's litewitness,
// as a process of its own (built by scripts/stack.sh, which names it in
// ACCOUNTABLE_LITEWITNESS_BIN and ACCOUNTABLE_WITNESSCTL_BIN), with its Ed25519 key
// served by an ssh-agent this package runs in the test process (litewitness signs
// through the ssh-agent protocol; serving it here needs no OpenSSH on the machine).
package ledgerlogtest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/accountablework/accountable/ledgerlog"
)

// Litewitness is a running litewitness.
type Litewitness struct {
	Name        string // its key name
	URL         string // its prefix (POST URL + "/add-checkpoint")
	VerifierKey string // its cosignature verifier key
	Witness     ledgerlog.Witness
	db          string
	ctl         string
	dir         string
}

// StartLitewitness starts a litewitness named name on a free 127.0.0.1 port; the test's
// cleanup stops it.
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
	tb.Cleanup(func() { os.RemoveAll(dir) })
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	sock := serveAgent(tb, dir, priv)
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		tb.Fatal(err)
	}
	signer, err := torchwood.NewCosignatureSigner(name, priv)
	if err != nil {
		tb.Fatal(err)
	}
	v, err := ledgerlog.ParseCosignatureKey(signer.Verifier().String())
	if err != nil {
		tb.Fatal(err)
	}
	addr := freeAddr(tb)
	lw := &Litewitness{Name: name, URL: "http://" + addr, VerifierKey: signer.Verifier().String(),
		db: filepath.Join(dir, "litewitness.db"), ctl: ctl, dir: dir}
	lw.Witness = ledgerlog.Witness{URL: lw.URL, Verifier: v}
	logFile, err := os.Create(filepath.Join(dir, "litewitness.log"))
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, "-name", name, "-db", lw.db, "-ssh-agent", sock,
		"-key", ssh.FingerprintSHA256(sshPub), "-listen", addr)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }() //nolint:errcheck // killed by the cleanup
	tb.Cleanup(func() {
		cmd.Process.Kill() //nolint:errcheck // it may have ended
		<-exited
		logFile.Close()
		if tb.Failed() {
			b, _ := os.ReadFile(logFile.Name())
			tb.Logf("litewitness log:\n%s", b)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(lw.URL + "/")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logFile.Name())
			tb.Fatalf("litewitness ended at start:\n%s", b)
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("litewitness did not listen on %s within 20 s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return lw
}

// AddLog has the witness know a log (origin) and the key its checkpoints are signed with,
// through witnessctl pull-logs with a C2SP log list (the key's name need not be the
// origin there, unlike with add-key: one service key signs every workspace's log).
func (lw *Litewitness) AddLog(tb testing.TB, origin, vkey string) {
	tb.Helper()
	list := filepath.Join(lw.dir, fmt.Sprintf("logs-%d.txt", time.Now().UnixNano()))
	if err := os.WriteFile(list, []byte("logs/v0\nvkey "+vkey+"\norigin "+origin+"\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, lw.ctl, "pull-logs", "-db", lw.db, "-source", list, "-verbose").CombinedOutput()
	if err != nil || !strings.Contains(string(out), origin) {
		tb.Fatalf("witnessctl pull-logs: %v\n%s", err, out)
	}
}

// serveAgent serves an ssh-agent holding priv on a unix socket in dir.
func serveAgent(tb testing.TB, dir string, priv ed25519.PrivateKey) string {
	tb.Helper()
	keyring := agent.NewKeyring()
	if err := keyring.Add(agent.AddedKey{PrivateKey: priv}); err != nil {
		tb.Fatal(err)
	}
	sock := filepath.Join(dir, "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				agent.ServeAgent(keyring, c) //nolint:errcheck // ends with the connection
			}()
		}
	}()
	return sock
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
