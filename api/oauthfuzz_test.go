package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable/store/storetest"
)

// The authorization server's endpoints and /mcp are not operations of the API
// description, so the request fuzz run does not reach them: this run does. Requests made
// from valid ones (a registration, authorization and token requests, revocations, MCP
// tool calls with a key) with their members, parameters and headers mutated: whatever
// comes in, no 5xx and an answer within the timeout; nothing is registered but by a 201;
// no grant exists but for a consent; a tool call's answer is JSON-RPC (a result, or an
// error object), never a transport failure. OAUTH_FUZZ_REQUESTS (default 1000; make soak
// sends more) and OAUTH_FUZZ_SEED (default: random, logged) repeat a run.
func TestOAuthAndMCPRefuseHostileInput(t *testing.T) {
	e := newEnv(t, nil, withSiteURLOfListener)
	ten := newPerson(t, e)
	conn := storetest.Conn(t)
	seed := uint64(time.Now().UnixNano())
	if n, err := strconv.ParseUint(os.Getenv("OAUTH_FUZZ_SEED"), 10, 64); err == nil {
		seed = n
	}
	t.Logf("OAUTH_FUZZ_SEED=%d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	app := registerApp(t, e, map[string]any{"client_name": "Fuzz", "redirect_uris": []string{"http://127.0.0.1:9/cb"}, "token_endpoint_auth_method": "none"})
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	count := func(table string) int {
		var n int
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	clients, grants := count("oauth_clients"), count("oauth_grants")

	junk := []any{nil, "", " ", "\u0000", "😀", strings.Repeat("a", 5000), -1, 1e308, true, []any{}, map[string]any{}, []any{"x", 1},
		"http://127.0.0.1:9/cb#x", "javascript:alert(1)", "S256", "plain", app.id, "../../etc", "%00", "' OR 1=1 --"}
	pick := func() any { return junk[rng.IntN(len(junk))] }
	text := func(v any) string {
		if s, ok := v.(string); ok {
			return s
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	mutateJSON := func(base map[string]any) string {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		for range 1 + rng.IntN(3) {
			switch keys := mapKeys(m); rng.IntN(3) {
			case 0:
				if len(keys) > 0 {
					delete(m, keys[rng.IntN(len(keys))])
				}
			case 1:
				if len(keys) > 0 {
					m[keys[rng.IntN(len(keys))]] = pick()
				}
			default:
				m[fmt.Sprint("x", rng.IntN(5))] = pick()
			}
		}
		if rng.IntN(10) == 0 {
			return `{"redirect_uris": [` // truncated
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	mutateForm := func(base url.Values) url.Values {
		f := url.Values{}
		for k, v := range base {
			f[k] = append([]string(nil), v...)
		}
		for range 1 + rng.IntN(3) {
			keys := mapKeys(f)
			if len(keys) == 0 {
				break
			}
			switch rng.IntN(3) {
			case 0:
				f.Del(keys[rng.IntN(len(keys))])
			case 1:
				f.Set(keys[rng.IntN(len(keys))], text(pick()))
			default:
				f.Add(keys[rng.IntN(len(keys))], text(pick())) // repeated parameter
			}
		}
		return f
	}
	registration := map[string]any{"client_name": "x", "redirect_uris": []string{"http://127.0.0.1:9/cb"}, "grant_types": []string{"authorization_code"},
		"token_endpoint_auth_method": "none", "scope": "work:read"}
	authorize := url.Values{"response_type": {"code"}, "client_id": {app.id}, "redirect_uri": {app.redirect}, "state": {"state-0123456789"},
		"code_challenge": {strings.Repeat("A", 43)}, "code_challenge_method": {"S256"}, "scope": {"work:read"}, "resource": {e.base + "/mcp"}}
	token := url.Values{"grant_type": {"authorization_code"}, "code": {"ory_ac_x.y"}, "redirect_uri": {app.redirect}, "client_id": {app.id},
		"code_verifier": {strings.Repeat("v", 43)}, "refresh_token": {"ory_rt_x.y"}}
	toolArgs := map[string]any{"title": "t", "idempotency_key": "k", "taskId": "00000000-0000-0000-0000-000000000000", "limit": 5}

	requests := 1000 // make soak: OAUTH_FUZZ_REQUESTS
	if n, err := strconv.Atoi(os.Getenv("OAUTH_FUZZ_REQUESTS")); err == nil && n > 0 {
		requests = n
	}
	registered := 0
	for i := range requests {
		var req *http.Request
		var err error
		kind := rng.IntN(5)
		switch kind {
		case 0:
			req, err = http.NewRequest("POST", e.base+"/oauth/register", strings.NewReader(mutateJSON(registration)))
			req.Header.Set("Content-Type", "application/json")
		case 1:
			req, err = http.NewRequest("GET", e.base+"/oauth/authorize?"+mutateForm(authorize).Encode(), nil)
		case 2:
			req, err = http.NewRequest("POST", e.base+"/oauth/token", strings.NewReader(mutateForm(token).Encode()))
			req.Header.Set("Content-Type", []string{"application/x-www-form-urlencoded", "application/json", "text/plain"}[rng.IntN(3)])
		case 3:
			req, err = http.NewRequest("POST", e.base+"/oauth/revoke", strings.NewReader(mutateForm(url.Values{"token": {"ory_at_x.y"}, "client_id": {app.id}}).Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		default:
			args := toolArgs
			name := []string{"create_work", "get_work", "complete_work", "page_events", "validate_receipt", "nope"}[rng.IntN(6)]
			method := []string{"tools/call", "tools/list", "initialize", "x"}[rng.IntN(4)]
			body := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"name":%q,"arguments":%s}}`, i, method, name, mutateJSON(args))
			if rng.IntN(8) == 0 {
				body = body[:rng.IntN(len(body))]
			}
			req, err = http.NewRequest("POST", e.base+"/mcp", strings.NewReader(string(body)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+ten.Key)
		}
		if err != nil {
			t.Fatal(err)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("request %d (%s %s): %v", i, req.Method, req.URL.Path, err)
		}
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode >= 500 {
			t.Fatalf("request %d (%s %s): %d %s", i, req.Method, req.URL, res.StatusCode, raw)
		}
		if kind == 0 && res.StatusCode == http.StatusCreated {
			registered++
		}
		if kind == 4 && res.StatusCode == http.StatusOK {
			var msg map[string]any
			if err := json.Unmarshal(raw, &msg); err != nil || (msg["result"] == nil && msg["error"] == nil) {
				t.Fatalf("request %d (MCP): not a JSON-RPC answer: %s", i, raw)
			}
		}
	}
	if got := count("oauth_clients"); got != clients+registered {
		t.Fatalf("clients %d, want %d (%d registrations answered 201)", got, clients+registered, registered)
	}
	if got := count("oauth_grants"); got != grants {
		t.Fatalf("grants %d before, %d after: nothing consented, nothing may be granted", grants, got)
	}
}

func mapKeys[M ~map[string]V, V any](m M) []string { return slices.Sorted(maps.Keys(m)) } // sorted: a function of the seed alone
