package api_test

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store/storetest"
)

// A request body is taken as sent: a Content-Encoding would have Fiber decompress it
// without bound, past the body limit (a few kilobytes of gzip make gigabytes). Found by the
// request fuzz run.
func TestCompressedBodiesAreRefused(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	before := eventCount(t, e, tenant.Key)
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(b) //nolint:errcheck // a bytes.Buffer
		w.Close()
		return buf.Bytes()
	}
	valid := []byte(`{"title":"compressed"}`)
	bomb := gz(gz([]byte(`"` + strings.Repeat("a", 16<<20) + `"`))) // 16 MiB from a few hundred bytes
	for _, c := range []struct {
		encoding string
		body     []byte
	}{
		{"gzip", gz(valid)}, {"gzip, gzip", bomb}, {"identity, gzip", gz(valid)}, {"deflate", valid}, {"br", valid},
	} {
		start := time.Now()
		r := e.do(request{method: "POST", path: "/work", key: tenant.Key, body: c.body,
			headers: map[string]string{"Idempotency-Key": uniqueKey("gz"), "Content-Encoding": c.encoding}})
		expect(t, r, http.StatusUnsupportedMediaType, accountable.ECodeUnsupportedMediaType)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("Content-Encoding %s: refused after %s", c.encoding, d)
		}
	}
	if n := eventCount(t, e, tenant.Key); n != before {
		t.Fatalf("%d events written by refused requests", n-before)
	}
	// identity is no encoding; a GET's body is never read.
	expect(t, e.do(request{method: "POST", path: "/work", key: tenant.Key, body: valid,
		headers: map[string]string{"Idempotency-Key": uniqueKey("gz"), "Content-Encoding": "identity"}}), http.StatusCreated, "")
	expect(t, e.do(request{method: "GET", path: "/work", key: tenant.Key, body: bomb,
		headers: map[string]string{"Content-Encoding": "gzip, gzip"}}), http.StatusOK, "")
}

// A method Fiber does not know is answered by the error handler (405, the envelope, a
// request id), not by Fiber in plain text. Found by the request fuzz run.
func TestUnknownMethodsGetTheErrorEnvelope(t *testing.T) {
	e := newEnv(t, nil)
	tenant := storetest.NewTenant(t, e.db)
	for _, method := range []string{"FOO", "get", "PROPFIND", "BREW"} {
		for _, path := range []string{"/work", "/", "/no/such/path"} {
			r := e.do(request{method: method, path: path, key: tenant.Key, noCheck: true, // (405s are not in the document)
				headers: map[string]string{"X-Request-Id": "unknown-method"}})
			expect(t, r, http.StatusMethodNotAllowed, accountable.ECodeMethodNotAllowed)
			if r.errorObj()["requestId"] != "unknown-method" || r.header.Get("X-Request-Id") != "unknown-method" {
				t.Fatalf("%s %s: request id %v / %q", method, path, r.errorObj()["requestId"], r.header.Get("X-Request-Id"))
			}
		}
	}
	expect(t, e.do(request{method: "GET", path: "/work", key: tenant.Key}), http.StatusOK, "")
}
