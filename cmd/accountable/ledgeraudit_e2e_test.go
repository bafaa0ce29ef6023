package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/accountablework/accountable/ledgerlog"
	"github.com/accountablework/accountable/ledgerlog/litewitness"
	"github.com/accountablework/accountable/store/storetest"
)

// `make run`'s flow, end to end: the dev app with its local witness (litewitness, a
// process of its own) signs and has cosigned every workspace's checkpoints; a completion's
// receipt comes back with its proof; `accountable ledger audit`, given only the log's and
// the witness's public keys, checks the receipt offline and the log online, keeps the
// checkpoint, and checks the next one against it. Then the database's owner, holding the
// signing key as well (a compromised key), replaces the newest checkpoint by a forged one
// of the same size: the auditor that kept the real one exits non-zero naming the fork, and
// a fresh auditor refuses it for want of the witness's cosignature.
func TestLedgerAuditWithALocalWitness(t *testing.T) {
	temporalAddr := requireTemporal(t)
	t.Setenv("LEDGER_LOCAL_WITNESS_ADDR", freeAddr(t))
	dir, err := os.MkdirTemp("", "lw-e2e") // short: litewitness's ssh-agent socket lives here
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg := startApp(t, func(cfg Config) fx.Option {
		opt, err := withLocalWitness(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		return fx.Options(opt, devOptions(cfg))
	}, func(cfg *Config) {
		cfg.TemporalAddress = temporalAddr
		cfg.TaskQueue = fmt.Sprintf("e2e-audit-%d", time.Now().UnixNano())
		cfg.DevKeyFile = filepath.Join(dir, "dev-api-key")
	})
	o, err := localWitnessOptions(cfg)
	if err != nil {
		t.Fatal(err)
	}
	witness, err := litewitness.WitnessOf(o)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ledgerlog.ParseKey(os.Getenv("LEDGER_SIGNING_KEY"))
	if err != nil {
		t.Fatal(err)
	}

	db := storetest.Open(t)
	tenant := storetest.NewTenant(t, db)
	c := apiClient{t: t, base: cfg.SiteURL, key: tenant.Key}
	taskID := completeOne(t, c, "audited")

	// The receipt, once a checkpoint cosigned by the witness holds its event.
	var receipt map[string]any
	storetest.WaitFor(t, 30*time.Second, "the receipt's proof in a cosigned checkpoint", func() bool {
		status, body := c.call("GET", "/work/"+taskID+"/receipt", "", nil)
		if status != http.StatusOK {
			t.Fatalf("GET receipt: %d %v", status, body)
		}
		receipt = body
		p, _ := body["data"].(map[string]any)["ledger_proof"].(map[string]any)
		return p != nil && strings.Contains(p["checkpoint"].(string), "\n— "+localWitnessName+" ")
	})
	receiptFile := filepath.Join(t.TempDir(), "receipt.json")
	if err := os.WriteFile(receiptFile, mustJSON(receipt), 0o600); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "checkpoint")
	audit := func(args ...string) (string, error) {
		t.Helper()
		t.Setenv("ACCOUNTABLE_API_KEY", tenant.Key)
		var out bytes.Buffer
		err := run(append([]string{"ledger", "audit", "--url", cfg.SiteURL + "/api/v1", "--key", key.VerifierKey,
			"--witness", witness.Key}, args...), &out)
		return out.String(), err
	}

	out, err := audit("--receipt", receiptFile, "--offline")
	if err != nil || !strings.Contains(out, `"checked":"receipt"`) {
		t.Fatalf("the receipt offline: %v\n%s", err, out)
	}
	out, err = audit("--receipt", receiptFile, "--state", state)
	if err != nil || !strings.Contains(out, `"checked":"checkpoint"`) {
		t.Fatalf("the first audit: %v\n%s", err, out)
	}
	kept, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	auditor, err := ledgerlog.NewAuditor(key.VerifierKey, ledgerlog.Origin(cfg.LedgerLogName, tenant.Principal.WorkspaceID))
	if err != nil {
		t.Fatal(err)
	}
	first, err := auditor.Open(kept)
	if err != nil {
		t.Fatal(err)
	}

	// The log grows: the next audit checks the newest checkpoint against the kept one.
	completeOne(t, c, "audited again")
	storetest.WaitFor(t, 30*time.Second, "a newer cosigned checkpoint", func() bool {
		_, body := c.call("GET", "/events/checkpoint", "", nil)
		d, _ := body["data"].(map[string]any)
		ws, _ := d["witnesses"].([]any)
		return d != nil && int64(d["treeSize"].(float64)) > first.N && len(ws) == 1 &&
			int64(ws[0].(map[string]any)["cosignedTreeSize"].(float64)) == int64(d["treeSize"].(float64))
	})
	out, err = audit("--state", state)
	if err != nil || !strings.Contains(out, fmt.Sprintf(`"consistentFrom":%d`, first.N)) {
		t.Fatalf("the second audit: %v\n%s", err, out)
	}
	kept, _ = os.ReadFile(state)
	second, err := auditor.Open(kept)
	if err != nil {
		t.Fatal(err)
	}

	// The owner forges the newest checkpoint: the same size, another root, signed with the
	// key (compromised with the database), the witness's cosignature dropped.
	conn := storetest.Conn(t)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, `SET session_replication_role = replica`); err != nil {
		t.Fatal(err)
	}
	var forgedRoot tlog.Hash
	rand.Read(forgedRoot[:])
	forged, err := key.SignCheckpoint(ledgerlog.Origin(cfg.LedgerLogName, tenant.Principal.WorkspaceID), tlog.Tree{N: second.N, Hash: forgedRoot})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`DELETE FROM ledger_cosignatures WHERE workspace_id = $1 AND tree_size >= $2`,
		`DELETE FROM ledger_checkpoints WHERE workspace_id = $1 AND tree_size >= $2`,
	} {
		if _, err := conn.Exec(ctx, q, tenant.Principal.WorkspaceID, second.N); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, `INSERT INTO ledger_checkpoints (workspace_id, tree_size, root_hash, signed_note, signed_at)
		VALUES ($1, $2, $3, $4, now())`, tenant.Principal.WorkspaceID, second.N, forgedRoot[:], string(forged)); err != nil {
		t.Fatal(err)
	}
	out, err = audit("--state", state)
	if !errors.Is(err, errAuditFailed) || !strings.Contains(out, "cosignature of witness "+localWitnessName) {
		t.Fatalf("an audit of the forged checkpoint: %v\n%s", err, out)
	}
	// Without the witness, the kept checkpoint still tells the fork.
	t.Setenv("ACCOUNTABLE_API_KEY", tenant.Key)
	var buf bytes.Buffer
	err = run([]string{"ledger", "audit", "--url", cfg.SiteURL + "/api/v1", "--key", key.VerifierKey, "--state", state}, &buf)
	if !errors.Is(err, errAuditFailed) || !strings.Contains(buf.String(), fmt.Sprintf("a fork: two different trees of size %d", second.N)) {
		t.Fatalf("an audit of the forged checkpoint against the kept one: %v\n%s", err, buf.String())
	}
	if after, _ := os.ReadFile(state); !bytes.Equal(after, kept) {
		t.Fatal("a failed audit replaced the kept checkpoint")
	}
	var report map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(buf.String())), &report); err != nil || report["ok"] != false {
		t.Fatalf("the failed audit's report: %v %q", err, buf.String())
	}
}

// completeOne creates a work item and completes it; it returns its id.
func completeOne(t *testing.T, c apiClient, title string) string {
	t.Helper()
	status, body := c.call("POST", "/work", fmt.Sprintf("complete-one-%d", time.Now().UnixNano()), map[string]any{"title": title})
	if status != http.StatusCreated {
		t.Fatalf("create: %d %v", status, body)
	}
	id := body["data"].(map[string]any)["taskId"].(string)
	status, body = c.call("GET", "/work/"+id, "", nil)
	if status != http.StatusOK {
		t.Fatalf("get: %d %v", status, body)
	}
	token := body["data"].(map[string]any)["concurrency"].(map[string]any)["version_token"]
	status, body = c.call("POST", "/work/"+id+"/complete", "", map[string]any{"version_token": token, "summary": "done"})
	if status != http.StatusOK {
		t.Fatalf("complete: %d %v", status, body)
	}
	return id
}
