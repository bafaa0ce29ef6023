package storetest

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// The secrets check of the whole test suite (issue 11): with ACCOUNTABLE_TEST_LOGS set (make
// test sets it), every service log the tests produce is kept in that directory, and so is
// every secret the tests were given (keys, access and refresh tokens, session cookies,
// webhook secrets, passwords). After the tests, scripts/logsecrets.sh looks for each secret,
// and for anything shaped like one, in every log line. Without the variable nothing is kept.

// logDirVar names the directory the logs and secrets are kept in.
const logDirVar = "ACCOUNTABLE_TEST_LOGS"

var (
	secretsMu   sync.Mutex
	secretsSeen = map[string]bool{}
)

// logDir is the directory logs are kept in, "" when none is.
func logDir() string { return os.Getenv(logDirVar) }

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// LogFile returns a file, in the kept logs, for the log lines of a service the test starts
// (a child process's stdout and stderr); os.DevNull's when no logs are kept. It is closed
// when the test ends.
func LogFile(tb testing.TB, name string) *os.File {
	tb.Helper()
	var f *os.File
	var err error
	if dir := logDir(); dir == "" {
		f, err = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	} else if err = os.MkdirAll(dir, 0o700); err == nil {
		f, err = os.CreateTemp(dir, unsafeName.ReplaceAllString(tb.Name()+"-"+name, "_")+"-*.log")
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	return f
}

// KeepLog keeps log, the lines a service in the test process wrote, when logs are kept.
func KeepLog(tb testing.TB, name string, log []byte) {
	tb.Helper()
	if logDir() == "" || len(log) == 0 {
		return
	}
	f := LogFile(tb, name)
	if _, err := f.Write(log); err != nil {
		tb.Error(err)
	}
}

// NoteSecrets records secrets the test was given, for the check of the kept logs. Values
// shorter than 8 characters are not secrets and would match by chance.
func NoteSecrets(values ...string) {
	dir := logDir()
	if dir == "" {
		return
	}
	secretsMu.Lock()
	defer secretsMu.Unlock()
	var b strings.Builder
	for _, v := range values {
		if len(v) < 8 || secretsSeen[v] || strings.ContainsAny(v, "\n\r") {
			continue
		}
		secretsSeen[v] = true
		b.WriteString(v)
		b.WriteByte('\n')
	}
	if b.Len() == 0 {
		return
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		panic(fmt.Sprintf("storetest: %v", err))
	}
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("secrets-%d.txt", os.Getpid())), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		panic(fmt.Sprintf("storetest: %v", err))
	}
	defer f.Close()
	if _, err := f.WriteString(b.String()); err != nil {
		panic(fmt.Sprintf("storetest: %v", err))
	}
}

// secretShapes match the secrets the service issues, in any text.
var secretShapes = regexp.MustCompile(`svk_[0-9a-f]{16,}|ory_(?:at|rt|ac)_[A-Za-z0-9._~-]{16,}|whsec_[A-Za-z0-9_-]{16,}|__session=[A-Za-z0-9_-]{16,}`)

// NoteSecretsIn records the secrets found in text (a response the test read): keys, tokens,
// codes, webhook secrets and session cookies.
func NoteSecretsIn(text string) {
	if logDir() == "" {
		return
	}
	found := secretShapes.FindAllString(text, -1)
	for i, s := range found {
		found[i] = strings.TrimPrefix(s, "__session=")
	}
	NoteSecrets(found...)
}

// secretNoter notes the secrets in every response a test reads through http.DefaultTransport
// (Main installs it when logs are kept): in Set-Cookie and Location headers and in JSON and
// HTML bodies. Streams (text/event-stream) are passed on unread.
type secretNoter struct{ next http.RoundTripper }

func (s secretNoter) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := s.next.RoundTrip(r)
	if err != nil {
		return res, err
	}
	NoteSecretsIn(strings.Join(res.Header.Values("Set-Cookie"), "\n") + "\n" + res.Header.Get("Location"))
	media, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if media != "application/json" && media != "text/html" {
		return res, nil
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	NoteSecretsIn(string(body))
	return res, nil
}
