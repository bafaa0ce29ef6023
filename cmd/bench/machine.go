package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// machine is what the report says about where it ran.
type machine struct {
	NProc         int
	CPU           string
	Memory        string
	Kernel        string
	OS            string
	Go            string
	PostgreSQL    string
	PGSettings    [][2]string
	Pgbench       string
	LoadStart     string
	LoadEnd       string
	Commit        string
	CommitSubject string
}

func readMachine(ctx context.Context, db *pgxpool.Pool, pgbenchBin string) machine {
	m := machine{NProc: runtime.NumCPU(), Go: runtime.Version(), LoadStart: loadAvg()}
	m.CPU = firstField("/proc/cpuinfo", "model name")
	if kb, err := strconv.ParseFloat(strings.TrimSuffix(firstField("/proc/meminfo", "MemTotal"), " kB"), 64); err == nil {
		m.Memory = strconv.FormatFloat(kb/1024/1024, 'f', 1, 64) + " GiB"
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
				m.OS = strings.Trim(v, `"`)
			}
		}
	}
	if out, err := exec.Command("go", "version").Output(); err == nil {
		m.Go = strings.TrimSpace(string(out))
	}
	if out, err := exec.Command(pgbenchBin, "--version").Output(); err == nil {
		m.Pgbench = strings.TrimSpace(string(out))
	}
	db.QueryRow(ctx, "SELECT version()").Scan(&m.PostgreSQL) //nolint:errcheck // reported empty
	for _, name := range []string{"fsync", "synchronous_commit", "full_page_writes", "wal_level", "shared_buffers",
		"max_connections", "max_wal_size", "checkpoint_timeout", "idle_in_transaction_session_timeout"} {
		var v string
		if err := db.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err == nil {
			m.PGSettings = append(m.PGSettings, [2]string{name, v})
		}
	}
	if out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
		if out, err := exec.Command("git", "status", "--porcelain", "--", ".", ":!docs/benchmarks.md", ":!.data").Output(); err == nil && len(strings.TrimSpace(string(out))) > 0 {
			m.Commit += " (with uncommitted changes)"
		}
		if out, err := exec.Command("git", "log", "-1", "--format=%s").Output(); err == nil {
			m.CommitSubject = strings.TrimSpace(string(out))
		}
	}
	return m
}

func (m machine) setting(name string) string {
	for _, kv := range m.PGSettings {
		if kv[0] == name {
			return kv[1]
		}
	}
	return "?"
}

func firstField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
