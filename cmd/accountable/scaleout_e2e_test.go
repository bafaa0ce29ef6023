package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accountablework/accountable/passwords"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// Two API processes and two worker processes against one PostgreSQL and one Temporal
// (docs/scaling.md, section 3): they share nothing else, so they must behave as one. The
// same request sent to both at once under one Idempotency-Key makes one effect; the
// completions of one task version sent to both have one winner; ledger verifications
// started through either are delivered by either relay and run by either worker; the
// ledger verifies.
func TestTwoAPIProcessesAndTwoWorkers(t *testing.T) {
	bin := buildBinary(t)
	queue := fmt.Sprintf("e2e-scaleout-%d", time.Now().UnixNano())
	apis := []*serveProcess{startServeProcess(t, bin, queue), startServeProcess(t, bin, queue)}
	startWorkerProcess(t, bin, queue)
	startWorkerProcess(t, bin, queue)
	db := storetest.Open(t)
	tenant := storetest.NewTenant(t, db)

	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	type answer struct {
		status int
		body   map[string]any
		err    error
	}
	post := func(base, path, key string, body any) answer {
		var raw []byte
		if body != nil {
			raw, _ = json.Marshal(body)
		}
		req, _ := http.NewRequest("POST", base+"/api/v1"+path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+tenant.Key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		res, err := hc.Do(req)
		if err != nil {
			return answer{err: err}
		}
		defer res.Body.Close()
		a := answer{status: res.StatusCode}
		a.err = json.NewDecoder(res.Body).Decode(&a.body)
		return a
	}
	// burst sends n requests at once, alternately to each process; a request that meets its
	// key held by a running one (409 idempotency_request_in_progress) retries, as a client
	// is told to.
	burst := func(n int, send func(i int, base string) answer) []answer {
		out := make([]answer, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				for {
					out[i] = send(i, apis[i%len(apis)].base)
					if e, _ := out[i].body["error"].(map[string]any); out[i].status != http.StatusConflict || e["code"] != "idempotency_request_in_progress" {
						return
					}
					time.Sleep(5 * time.Millisecond) // a client's pause before it retries, as it is told to (not a wait of the test's)
				}
			})
		}
		close(start)
		wg.Wait()
		for i, a := range out {
			if a.err != nil {
				t.Fatalf("request %d: %v", i, a.err)
			}
		}
		return out
	}

	// One key, 40 identical creates across both processes: one task.
	created := burst(40, func(_ int, base string) answer {
		return post(base, "/work", "scaleout-create", map[string]any{"title": "one task, two processes"})
	})
	firsts, taskIDs := 0, map[string]bool{}
	var versionToken any
	for _, a := range created {
		data, _ := a.body["data"].(map[string]any)
		meta, _ := a.body["meta"].(map[string]any)
		switch {
		case a.status == http.StatusCreated && meta["duplicate"] == false:
			firsts++
			versionToken = data["task"].(map[string]any)["concurrency"].(map[string]any)["version_token"]
		case a.status == http.StatusOK && meta["duplicate"] == true:
		default:
			t.Fatalf("create: %d %v", a.status, a.body)
		}
		taskIDs[fmt.Sprint(data["taskId"])] = true
	}
	if firsts != 1 || len(taskIDs) != 1 {
		t.Fatalf("40 identical creates: %d first answers, %d tasks", firsts, len(taskIDs))
	}
	var taskID string
	for id := range taskIDs {
		taskID = id
	}

	// 20 completions of that version, each with its own key, across both: one winner.
	completed := burst(20, func(i int, base string) answer {
		return post(base, "/work/"+taskID+"/complete", fmt.Sprintf("scaleout-complete-%d", i),
			map[string]any{"version_token": versionToken, "summary": "done", "cost_cents": 100 + i})
	})
	winners := 0
	for _, a := range completed {
		switch a.status {
		case http.StatusOK:
			winners++
		case http.StatusConflict:
		default:
			t.Fatalf("complete: %d %v", a.status, a.body)
		}
	}
	if winners != 1 {
		t.Fatalf("20 completions of one version: %d winners", winners)
	}

	// Verifications through either process, run by either worker.
	c := apiClient{t: t, base: apis[0].base, key: tenant.Key}
	started := burst(8, func(i int, base string) answer {
		return post(base, "/events/verifications", fmt.Sprintf("scaleout-verify-%d", i), nil)
	})
	for _, a := range started {
		if a.status != http.StatusAccepted {
			t.Fatalf("verification: %d %v", a.status, a.body)
		}
		done := c.waitVerification(a.body["data"].(map[string]any)["id"].(string), 60*time.Second)
		if done["result"].(map[string]any)["verified"] != true {
			t.Fatalf("verification: %v", done)
		}
	}

	// The ledger: one work.created, one work.completed, and the chain verifies, read
	// through the other process.
	c.base = apis[1].base
	// The stream serves an event once every transaction older than it has ended (its
	// horizon is cluster-wide: another package's test holding a transaction delays it).
	for _, typ := range []string{"work.created", "work.completed"} {
		var status int
		var body map[string]any
		storetest.WaitFor(t, 10*time.Second, "the stream serves "+typ, func() bool {
			status, body = c.call("GET", "/events/stream?event_type="+typ, "", nil)
			return status != http.StatusOK || len(body["data"].([]any)) >= 1
		})
		if status != http.StatusOK || len(body["data"].([]any)) != 1 {
			t.Fatalf("%s events: %d %v", typ, status, body)
		}
	}
	status, body := c.call("GET", "/events/verify", "", nil)
	if status != http.StatusOK || body["data"].(map[string]any)["verified"] != true {
		t.Fatalf("verify: %d %v", status, body)
	}

	// A removal from a workspace reaches every process at once. The key's user joins
	// another workspace and both processes let the key act there (workspace_id), holding
	// it in their caches with that workspace; a third process (the CLI) removes the user
	// from it, and both refuse the key there (404, as an unknown workspace) within the
	// PostgreSQL notification, while it still acts in its own.
	other := storetest.NewTenant(t, db).Principal.WorkspaceID
	if _, err := db.CreateUser(t.Context(), store.CreateKeyRequest{UserEmail: tenant.Principal.UserEmail, WorkspaceID: other}); err != nil {
		t.Fatal(err)
	}
	for i, p := range apis {
		c.base = p.base
		storetest.WaitFor(t, 5*time.Second, fmt.Sprintf("process %d lets the key act in the workspace its user joined", i), func() bool {
			status, _ := c.call("GET", "/work?workspace_id="+other, "", nil)
			return status == http.StatusOK
		})
	}
	remove := exec.Command(bin, "users", "remove", "--email", tenant.Principal.UserEmail, "--workspace", other)
	remove.Env = append(os.Environ(), "DATABASE_URL="+storetest.URL(t), "MIGRATION_DATABASE_URL="+storetest.OwnerURL(t))
	if out, err := remove.CombinedOutput(); err != nil {
		t.Fatalf("accountable users remove: %v\n%s", err, out)
	}
	removed := time.Now()
	for i, p := range apis {
		c.base = p.base
		storetest.WaitFor(t, 5*time.Second-time.Since(removed), fmt.Sprintf("process %d to refuse the key in the workspace its user left", i), func() bool {
			status, _ := c.call("GET", "/work?workspace_id="+other, "", nil)
			if status != http.StatusOK && status != http.StatusNotFound {
				t.Fatalf("process %d, %s after the removal: %d", i, time.Since(removed).Round(time.Millisecond), status)
			}
			return status == http.StatusNotFound
		})
		t.Logf("process %d refuses the key in the workspace its user left %s after the CLI removed them", i, time.Since(removed).Round(time.Millisecond))
		if status, body := c.call("GET", "/work", "", nil); status != http.StatusOK {
			t.Fatalf("process %d, the key in its own workspace after the removal from another: %d %v", i, status, body)
		}
	}

	// A session signed in at one process works at the other: every process tags and checks
	// session tokens with the deployment's one key (service_secrets).
	const password = "the scale-out user's password"
	storetest.NoteSecrets(password)
	hash, err := passwords.Hash(password)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SetPassword(t.Context(), tenant.Principal.UserEmail, hash); err != nil {
		t.Fatal(err)
	}
	browser := clientFrom("127.0.0.1", 1)
	form := strings.NewReader(url.Values{"csrf": {"forged-by-the-script"}, "email": {tenant.Principal.UserEmail}, "password": {password}}.Encode())
	req, _ := http.NewRequest("POST", apis[0].base+"/sign-in", form)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Cookie", "__signin=forged-by-the-script")
	res, err := browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in at the first process: %d", res.StatusCode)
	}
	var session string
	for _, ck := range res.Cookies() {
		if ck.Name == "__session" {
			session = ck.Value
		}
	}
	req, _ = http.NewRequest("GET", apis[1].base+"/api/v1/events/stream?limit=1", nil)
	req.Header.Set("Cookie", "__session="+session)
	if res, err := hc.Do(req); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("the first process's session at the second: %v %v", err, res)
	} else {
		res.Body.Close()
	}

	// A revocation reaches every process at once. Both hold the key in their caches
	// (KEY_CACHE_TTL is a minute), a third process (the CLI) revokes it, and both refuse
	// it within the PostgreSQL notification, long before the cache entries would expire.
	for _, p := range apis {
		c.base = p.base
		if status, body := c.call("GET", "/credential", "", nil); status != http.StatusOK {
			t.Fatalf("credential before the revocation: %d %v", status, body)
		}
	}
	revoke := exec.Command(bin, "keys", "revoke", tenant.Principal.KeyPrefix)
	revoke.Env = append(os.Environ(), "DATABASE_URL="+storetest.URL(t), "MIGRATION_DATABASE_URL="+storetest.OwnerURL(t))
	if out, err := revoke.CombinedOutput(); err != nil {
		t.Fatalf("accountable keys revoke: %v\n%s", err, out)
	}
	revoked := time.Now()
	for i, p := range apis {
		c.base = p.base
		storetest.WaitFor(t, 5*time.Second-time.Since(revoked), fmt.Sprintf("process %d to refuse the revoked key", i), func() bool {
			status, _ := c.call("GET", "/credential", "", nil)
			if status != http.StatusOK && status != http.StatusUnauthorized {
				t.Fatalf("process %d, %s after the revocation: %d", i, time.Since(revoked).Round(time.Millisecond), status)
			}
			return status == http.StatusUnauthorized
		})
		t.Logf("process %d refuses the revoked key %s after the CLI revoked it", i, time.Since(revoked).Round(time.Millisecond))
	}
}
