// Package litewitness runs torchwood's litewitness, a C2SP tlog-witness, as a process of
// its own, for `make run` (one machine, the full flow) and the tests. litewitness signs
// through the ssh-agent protocol; this package serves its Ed25519 key on a unix socket
// from the calling process (golang.org/x/crypto/ssh/agent), so no OpenSSH is needed.
//
// The witness must know each log it cosigns: AddLogs hands it a C2SP log list ("logs/v0",
// a vkey and an origin per log) through witnessctl pull-logs. The service signs every
// workspace's log with one key, so the key's name is not the origin (witnessctl add-key
// would refuse that; a log list may say so).
package litewitness

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"filippo.io/torchwood"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/accountablework/accountable/ledgerlog"
)

// Options say how to run the witness.
type Options struct {
	Bin, Ctl string // litewitness and witnessctl
	Dir      string // its database, socket and log; a short path (a socket's is limited to ~100 bytes)
	Name     string // its key name
	Addr     string // host:port to listen on
	Key      ed25519.PrivateKey
}

// Process is a running litewitness.
type Process struct {
	Witness ledgerlog.Witness // its URL and cosignature key
	opts    Options
	db      string
	cmd     *exec.Cmd
	agent   net.Listener
	exited  chan struct{}
	LogPath string

	mu    sync.Mutex
	known map[string]bool // origins it has been given
}

// Start starts the witness and waits (up to 20 s) until it answers.
func Start(o Options) (*Process, error) {
	if o.Bin == "" || o.Ctl == "" {
		return nil, errors.New("litewitness: the litewitness and witnessctl binaries are not known (scripts/stack.sh builds them)")
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, err
	}
	w, err := WitnessOf(o)
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(o.Dir, "agent.sock")
	os.Remove(sock)
	ln, err := serveAgent(sock, o.Key)
	if err != nil {
		return nil, err
	}
	sshPub, err := ssh.NewPublicKey(o.Key.Public())
	if err != nil {
		ln.Close()
		return nil, err
	}
	p := &Process{Witness: w, opts: o,
		db: filepath.Join(o.Dir, "litewitness.db"), agent: ln, exited: make(chan struct{}),
		LogPath: filepath.Join(o.Dir, "litewitness.log"), known: map[string]bool{}}
	logFile, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		ln.Close()
		return nil, err
	}
	p.cmd = exec.Command(o.Bin, "-name", o.Name, "-db", p.db, "-ssh-agent", sock,
		"-key", ssh.FingerprintSHA256(sshPub), "-listen", o.Addr)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		ln.Close()
		return nil, fmt.Errorf("litewitness: %w", err)
	}
	go func() {
		p.cmd.Wait() //nolint:errcheck // Stop kills it
		logFile.Close()
		close(p.exited)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(p.Witness.URL + "/")
		if err == nil {
			resp.Body.Close()
			return p, nil
		}
		select {
		case <-p.exited:
			ln.Close()
			b, _ := os.ReadFile(p.LogPath)
			return nil, fmt.Errorf("litewitness ended at start:\n%s", b)
		default:
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, fmt.Errorf("litewitness did not answer on %s within 20 s: %w", o.Addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WitnessOf is the witness Start(o) runs, as the log submits to it: its URL and its
// cosignature key.
func WitnessOf(o Options) (ledgerlog.Witness, error) {
	signer, err := torchwood.NewCosignatureSigner(o.Name, o.Key)
	if err != nil {
		return ledgerlog.Witness{}, fmt.Errorf("litewitness: %w", err)
	}
	v, err := ledgerlog.ParseCosignatureKey(signer.Verifier().String())
	if err != nil {
		return ledgerlog.Witness{}, err
	}
	return ledgerlog.Witness{URL: "http://" + o.Addr, Key: signer.Verifier().String(), Verifier: v}, nil
}

// Stop ends the witness.
func (p *Process) Stop() {
	p.cmd.Process.Kill() //nolint:errcheck // it may have ended
	<-p.exited
	p.agent.Close()
}

// AddLogs has the witness know the logs (origins) it does not know yet, each signed by
// vkey.
func (p *Process) AddLogs(ctx context.Context, vkey string, origins ...string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var list strings.Builder
	list.WriteString("logs/v0\n")
	var added []string
	for _, o := range origins {
		if !p.known[o] {
			fmt.Fprintf(&list, "vkey %s\norigin %s\n", vkey, o)
			added = append(added, o)
		}
	}
	if len(added) == 0 {
		return nil
	}
	f, err := os.CreateTemp(p.opts.Dir, "logs-*.txt")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(list.String()); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, p.opts.Ctl, "pull-logs", "-db", p.db, "-source", f.Name()).CombinedOutput()
	if err != nil {
		return fmt.Errorf("witnessctl pull-logs: %w\n%s", err, out)
	}
	for _, o := range added {
		p.known[o] = true
	}
	return nil
}

// serveAgent serves an ssh-agent holding key on a unix socket.
func serveAgent(sock string, key ed25519.PrivateKey) (net.Listener, error) {
	keyring := agent.NewKeyring()
	if err := keyring.Add(agent.AddedKey{PrivateKey: key}); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("litewitness: the ssh-agent socket: %w", err)
	}
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
	return ln, nil
}
