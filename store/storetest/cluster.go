package storetest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster is a private PostgreSQL cluster of a test's own (for what needs a second server,
// such as restoring a dump), made from the same binaries as the one `make test` starts and
// removed when the test ends. Its bootstrap superuser is "accountable", as on the cluster
// of `make run`.
type Cluster struct {
	Port    int
	bindir  string
	data    string
	logFile string
	run     func(name string, args ...string)
	start   []string // pg_ctl start's arguments
}

// BinDir returns the directory of the PostgreSQL binaries: ACCOUNTABLE_PG_BINDIR (set by
// scripts/stack.sh), pg_config's, or the newest of Debian's versioned directories.
func BinDir(tb testing.TB) string {
	tb.Helper()
	if d := os.Getenv("ACCOUNTABLE_PG_BINDIR"); d != "" {
		return d
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		if d := strings.TrimSpace(string(out)); fileExists(filepath.Join(d, "initdb")) {
			return d
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	for _, d := range dirs {
		if fileExists(filepath.Join(d, "initdb")) {
			return d
		}
	}
	tb.Fatal("storetest: no PostgreSQL binaries (initdb) found; `make test` finds or installs them")
	return ""
}

func pgVersion(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// NewCluster initialises and starts a cluster on a free loopback port. As root the
// server runs as the postgres user (initdb refuses root), from a directory it can enter.
func NewCluster(tb testing.TB) *Cluster {
	tb.Helper()
	c := newClusterDirs(tb, BinDir(tb))
	c.run("initdb", "-D", c.data, "-U", "accountable", "--auth=trust", "-E", "UTF8", "--no-locale")
	c.startOnFreePort(tb)
	return c
}

// newClusterDirs makes an empty data directory and a log file (owned by the postgres user
// as root) and the runner of the cluster's programs.
func newClusterDirs(tb testing.TB, bindir string) *Cluster {
	tb.Helper()
	base, err := os.MkdirTemp("/var/tmp", "accountable-test-pg-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		tb.Fatal(err)
	}
	data, logFile := filepath.Join(base, "data"), filepath.Join(base, "postgres.log")
	if err := os.Mkdir(data, 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(logFile, nil, 0o644); err != nil {
		tb.Fatal(err)
	}
	var asPostgres []string
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			tb.Fatalf("storetest: running as root needs the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		for _, p := range []string{data, logFile} {
			if err := os.Chown(p, uid, gid); err != nil {
				tb.Fatal(err)
			}
		}
		asPostgres = []string{"runuser", "-u", "postgres", "--"}
	}
	run := func(name string, args ...string) {
		tb.Helper()
		argv := append(append(append([]string{}, asPostgres...), filepath.Join(bindir, name)), args...)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = "/" // the postgres user may not enter the test's directory
		if out, err := cmd.CombinedOutput(); err != nil {
			logTail, _ := os.ReadFile(logFile)
			tb.Fatalf("storetest: %s: %v\n%s\n%s", name, err, out, logTail)
		}
	}
	return &Cluster{bindir: bindir, data: data, logFile: logFile, run: run}
}

// startOnFreePort starts the server on a free loopback port, stopped when the test ends.
func (c *Cluster) startOnFreePort(tb testing.TB) {
	tb.Helper()
	c.Port = freePort(tb)
	c.start = []string{"start", "-D", c.data, "-w", "-t", "60", "-l", c.logFile, "-o",
		fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -c unix_socket_directories='' -c fsync=off", c.Port)}
	c.run("pg_ctl", c.start...)
	tb.Cleanup(func() {
		if c.running() {
			c.run("pg_ctl", "stop", "-D", c.data, "-m", "immediate")
		}
	})
}

// NewStandby makes a streaming replica (hot standby) of c with pg_basebackup on a free
// loopback port, started and following c, removed when the test ends. initdb's pg_hba
// lets the bootstrap superuser replicate from loopback.
func (c *Cluster) NewStandby(tb testing.TB) *Cluster {
	tb.Helper()
	sb := newClusterDirs(tb, c.bindir)
	sb.run("pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(c.Port), "-U", "accountable", "-D", sb.data,
		"--write-recovery-conf", "--wal-method=stream", "--checkpoint=fast")
	sb.startOnFreePort(tb)
	return sb
}

// Crash stops the server as a crash would (pg_ctl stop -m immediate: no shutdown
// checkpoint, every connection cut); Start recovers it from its WAL on the same port.
func (c *Cluster) Crash() { c.run("pg_ctl", "stop", "-D", c.data, "-m", "immediate") }

// Start starts the stopped server again.
func (c *Cluster) Start() { c.run("pg_ctl", c.start...) }

// running reports whether the server's postmaster is up.
func (c *Cluster) running() bool { return fileExists(filepath.Join(c.data, "postmaster.pid")) }

func freePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// URL returns the connection URL of database db as user.
func (c *Cluster) URL(user, db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", user, c.Port, db)
}

// CreateDatabase creates an empty database owned by the bootstrap superuser.
func (c *Cluster) CreateDatabase(tb testing.TB, name string) {
	tb.Helper()
	CreateDatabase(tb, c.URL("accountable", "postgres"), name)
}

// CreateDatabase creates an empty database on the server of adminURL.
func CreateDatabase(tb testing.TB, adminURL, name string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		tb.Fatal(err)
	}
}

// Tool runs a PostgreSQL client program (pg_dump, pg_restore) of the cluster binaries.
func Tool(tb testing.TB, name string, args ...string) {
	tb.Helper()
	cmd := exec.Command(filepath.Join(BinDir(tb), name), args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("storetest: %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}
