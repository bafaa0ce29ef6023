package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// proc is a server the benchmark started; stop ends it.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
}

// startProc starts bin with args and env added to the environment, output to logPath. It
// runs in its own process group, so a Ctrl-C reaches only the harness, which stops it.
func startProc(name, logPath string, env []string, bin string, args ...string) (*proc, error) {
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: lf, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }() //nolint:errcheck // the exit is seen through done
	return p, nil
}

// waitReady polls url until it answers 200, the process exits or timeout passes.
func (p *proc) waitReady(url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: 2 * time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited during start-up (log: %s)%s", p.name, p.log.Name(), tail(p.log.Name()))
		default:
		}
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer %s within %s (log: %s)%s", p.name, url, timeout, p.log.Name(), tail(p.log.Name()))
}

// stop sends SIGTERM and waits (then SIGKILL after 20 s).
func (p *proc) stop() {
	if p == nil {
		return
	}
	select {
	case <-p.done:
	default:
		p.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			p.cmd.Process.Kill() //nolint:errcheck // it may have exited already
			<-p.done
		}
	}
	p.log.Close()
}

func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return "\n" + strings.Join(lines[max(0, len(lines)-15):], "\n")
}

// output runs a command to completion and returns its standard output.
func output(ctx context.Context, env []string, bin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", bin, strings.Join(args, " "), err, truncate(stderr.String(), 2000))
	}
	return string(out), nil
}
