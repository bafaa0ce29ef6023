package api

import (
	"encoding/json"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/accountablework/accountable"
)

// A tool call's arguments become a REST request of the caller (mcpArgs.fill): whatever
// the arguments, fill either refuses them with a 400 or makes a request to the tool's own
// operation (its path, its parameters in their segments) that names no workspace but the
// credential's, and it never panics. Identity and workspace come from the credential only,
// so an argument must not reach the request as workspace_id or user_id. `make test` runs
// the seeds; `go test -fuzz FuzzMCPToolArguments ./api` explores further.
func FuzzMCPToolArguments(f *testing.F) {
	s, err := NewServer(Config{SiteURL: "http://127.0.0.1:8080"}, Deps{}, slog.New(slog.DiscardHandler))
	if err != nil {
		f.Fatal(err)
	}
	desc, err := parseAPIDescription(s.document)
	if err != nil {
		f.Fatal(err)
	}
	type tool struct {
		o    *operation
		args mcpArgs
	}
	tools := make([]tool, len(mcpTools))
	for i, t := range mcpTools {
		o := s.operationByID(t.op)
		_, args := desc.toolInput(t, o)
		tools[i] = tool{o, args}
	}
	const id = "01a20eb2-8b0f-77a5-8e99-d935ffff857a"
	p := accountable.Principal{WorkspaceID: "01a20eb2-7486-758e-a1b1-0aa0f7f07708", UserID: "01a20eb2-19e2-7a45-aff1-2a7a1de640ac"}
	for i := range tools {
		for _, args := range []string{
			``, `null`, `{}`, `[]`, `"x"`, `{"workspace_id":"` + id + `","user_id":"` + id + `"}`,
			`{"taskId":"` + id + `","initiativeId":"` + id + `","launchId":"` + id + `","decisionId":"` + id +
				`","handoffId":"` + id + `","runId":"` + id + `","domain":"software","idempotency_key":"k1","title":"x"}`,
			`{"taskId":"../../events","domain":"a/b?c#d","idempotency_key":7}`, `{"taskId":""}`, `{"taskId":null}`,
			`{"limit":[1,"2",{"a":1}],"cursor":"x","receipt":{"a":1},"workspace_id":["` + id + `"]}`,
			`{"a":1,"a":2}`, `{"taskId":1e400}`, "{\"taskId\":\"\xff\"}",
			`{"receipt":{"a":1,"a":2},"workspace_id":"` + id + `"}`, `{"receipt":"x"}`,
		} {
			f.Add(uint8(i), []byte(args))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		tl := tools[int(which)%len(tools)]
		var r fasthttp.Request
		if err := tl.args.fill(&r, tl.o, raw, p); err != nil {
			checkRefusal(t, raw, err)
			return
		}
		uri := r.URI()
		path := string(uri.PathOriginal())
		if !strings.HasPrefix(path, V1Root+"/") {
			t.Fatalf("%s: %q: path %q is not under %s", tl.o.ID, raw, path, V1Root)
		}
		// Segment for segment, the operation's path: a parameter fills its segment and no
		// more (an argument holding "/" or ".." stays inside it).
		want := strings.Split(tl.o.Path, "/")
		got := strings.Split(strings.TrimPrefix(path, V1Root), "/")
		if len(got) != len(want) {
			t.Fatalf("%s: %q: path %q does not have the segments of %s", tl.o.ID, raw, path, tl.o.Path)
		}
		for i, seg := range want {
			param := strings.HasPrefix(seg, "{")
			switch unescaped, err := url.PathUnescape(got[i]); {
			case !param && got[i] != seg:
				t.Fatalf("%s: %q: path %q is not %s", tl.o.ID, raw, path, tl.o.Path)
			case param && (err != nil || unescaped == "" || unescaped == "." || unescaped == ".."):
				t.Fatalf("%s: %q: parameter %s is %q in path %q", tl.o.ID, raw, seg, got[i], path)
			}
		}
		query, err := url.ParseQuery(string(uri.QueryString()))
		if err != nil {
			t.Fatalf("%s: %q: query %q: %v", tl.o.ID, raw, uri.QueryString(), err)
		}
		for _, name := range mcpUnscoped {
			if query.Has(name) {
				t.Fatalf("%s: %q: the query names %s: %q", tl.o.ID, raw, name, uri.QueryString())
			}
		}
		body := r.Body()
		if len(body) == 0 || tl.o.Document && tl.o.DocumentMember == "" { // a bare document is the argument itself
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("%s: %q: the body %q is not a JSON object: %v", tl.o.ID, raw, body, err)
		}
		if _, ok := m["user_id"]; ok {
			t.Fatalf("%s: %q: the body names a user: %s", tl.o.ID, raw, body)
		}
		if ws, ok := m["workspace_id"]; ok && string(ws) != `"`+p.WorkspaceID+`"` {
			t.Fatalf("%s: %q: the body names workspace %s, not the credential's", tl.o.ID, raw, ws)
		}
		if tl.o.BodyWorkspaceRequired && string(m["workspace_id"]) != `"`+p.WorkspaceID+`"` {
			t.Fatalf("%s: %q: the body lacks the credential's workspace: %s", tl.o.ID, raw, body)
		}
	})
}
