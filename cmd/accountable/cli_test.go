package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/mod/sumdb/note"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/ledgerlog"
	"github.com/accountablework/accountable/passwords"
	"github.com/accountablework/accountable/store/storetest"
)

// cli points the command at this package's database and returns a runner of it.
func cli(t *testing.T) func(args ...string) (string, error) {
	t.Helper()
	t.Setenv("DATABASE_URL", storetest.URL(t))
	t.Setenv("MIGRATION_DATABASE_URL", storetest.OwnerURL(t))
	t.Setenv("LOG_LEVEL", "warn")
	return func(args ...string) (string, error) {
		var buf bytes.Buffer
		err := run(args, &buf)
		return buf.String(), err
	}
}

type createdKey struct {
	Key, KeyPrefix, WorkspaceID, UserID, Kind string
	AgentName                                 *string
}

var keyPattern = regexp.MustCompile(`^svk_[0-9a-f]{48}$`)

// decodeCreated checks that out is exactly one JSON object with exactly the fields of a
// created key, and returns them.
func decodeCreated(t *testing.T, out string) createdKey {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("keys create --json printed %q: %v", out, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("keys create --json printed more than one JSON value: %q", out)
	}
	var fields []string
	for k, v := range m {
		fields = append(fields, k)
		if _, ok := v.(string); !ok && !(k == "agent_name" && v == nil) {
			t.Errorf("field %s = %#v, want a string", k, v)
		}
	}
	sort.Strings(fields)
	if strings.Join(fields, ",") != "agent_name,key,key_prefix,kind,user_id,workspace_id" {
		t.Fatalf("fields %v, want exactly key, key_prefix, kind, agent_name, workspace_id, user_id", fields)
	}
	k := createdKey{Key: m["key"].(string), KeyPrefix: m["key_prefix"].(string), WorkspaceID: m["workspace_id"].(string),
		UserID: m["user_id"].(string), Kind: m["kind"].(string)}
	if name, ok := m["agent_name"].(string); ok {
		k.AgentName = &name
	}
	if (k.Kind == accountable.KeyKindAgent) != (k.AgentName != nil) || (k.Kind != accountable.KeyKindAgent && k.Kind != accountable.KeyKindHuman) {
		t.Errorf("kind %q with agent_name %v", k.Kind, k.AgentName)
	}
	if !keyPattern.MatchString(k.Key) {
		t.Errorf("key %q does not match %s", k.Key, keyPattern)
	}
	if len(k.Key) < 12 || k.KeyPrefix != k.Key[:12] {
		t.Errorf("key_prefix %q is not the first 12 characters of the key", k.KeyPrefix)
	}
	for name, id := range map[string]string{"workspace_id": k.WorkspaceID, "user_id": k.UserID} {
		if _, err := uuid.Parse(id); err != nil {
			t.Errorf("%s %q is not a UUID: %v", name, id, err)
		}
	}
	return k
}

// createKey runs `keys create ARGS --json` and decodes what it prints.
func createKey(t *testing.T, cmd func(...string) (string, error), args ...string) createdKey {
	t.Helper()
	out, err := cmd(append([]string{"keys", "create"}, append(args, "--json")...)...)
	if err != nil {
		t.Fatalf("keys create %v: %v (printed %q)", args, err, out)
	}
	return decodeCreated(t, out)
}

func TestCLIKeysCreate(t *testing.T) {
	cmd := cli(t)
	first := createKey(t, cmd, "--name", "ci", "--new-workspace", "CI", "--user", "ci@example.test")
	second := createKey(t, cmd, "--name", "second", "--workspace", first.WorkspaceID, "--user", "ci@example.test")
	if second.WorkspaceID != first.WorkspaceID || second.UserID != first.UserID {
		t.Errorf("second key in workspace %s for user %s; want %s, %s", second.WorkspaceID, second.UserID, first.WorkspaceID, first.UserID)
	}
	if second.Key == first.Key || second.KeyPrefix == first.KeyPrefix {
		t.Errorf("two keys share a secret or prefix: %q, %q", first.KeyPrefix, second.KeyPrefix)
	}
	// A new workspace per --new-workspace.
	third := createKey(t, cmd, "--name", "other", "--new-workspace", "CI 2", "--user", "ci@example.test")
	if third.WorkspaceID == first.WorkspaceID || third.UserID != first.UserID {
		t.Errorf("third key: workspace %s (first %s), user %s (first %s)", third.WorkspaceID, first.WorkspaceID, third.UserID, first.UserID)
	}
	if first.Kind != accountable.KeyKindHuman || first.AgentName != nil {
		t.Errorf("a key without --agent is %q %v", first.Kind, first.AgentName)
	}
	// --agent makes an agent's key, acting for the user.
	agent := createKey(t, cmd, "--name", "bot", "--workspace", first.WorkspaceID, "--user", "ci@example.test", "--agent", "release-bot")
	if agent.Kind != accountable.KeyKindAgent || agent.AgentName == nil || *agent.AgentName != "release-bot" || agent.UserID != first.UserID {
		t.Errorf("agent key %+v", agent)
	}
}

type listedKey struct {
	KeyPrefix   string  `json:"key_prefix"`
	Name        string  `json:"name"`
	UserEmail   string  `json:"user_email"`
	WorkspaceID string  `json:"workspace_id"`
	CreatedAt   string  `json:"created_at"`
	RevokedAt   *string `json:"revoked_at"`
}

func listKeys(t *testing.T, cmd func(...string) (string, error), secrets ...string) map[string]listedKey {
	t.Helper()
	out, err := cmd("keys", "list", "--json")
	if err != nil {
		t.Fatalf("keys list: %v", err)
	}
	for _, s := range secrets {
		if strings.Contains(out, s) || strings.Contains(out, s[12:]) {
			t.Fatalf("keys list printed a secret key: %q", out)
		}
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("keys list --json printed %q: %v", out, err)
	}
	keys := map[string]listedKey{}
	for _, row := range rows {
		if _, ok := row["key"]; ok {
			t.Fatalf("keys list row has a key field: %v", row)
		}
		raw, _ := json.Marshal(row)
		var k listedKey
		if err := json.Unmarshal(raw, &k); err != nil {
			t.Fatal(err)
		}
		keys[k.KeyPrefix] = k
	}
	return keys
}

func TestCLIKeysListAndRevoke(t *testing.T) {
	cmd := cli(t)
	first := createKey(t, cmd, "--name", "ci", "--new-workspace", "CI list", "--user", "ci-list@example.test")
	second := createKey(t, cmd, "--name", "second", "--workspace", first.WorkspaceID, "--user", "ci-list@example.test")

	keys := listKeys(t, cmd, first.Key, second.Key)
	for _, k := range []createdKey{first, second} {
		got, ok := keys[k.KeyPrefix]
		if !ok {
			t.Fatalf("keys list lacks %s: %v", k.KeyPrefix, keys)
		}
		if got.WorkspaceID != first.WorkspaceID || got.UserEmail != "ci-list@example.test" || got.RevokedAt != nil || got.CreatedAt == "" {
			t.Errorf("listed %+v", got)
		}
	}
	if keys[first.KeyPrefix].Name != "ci" || keys[second.KeyPrefix].Name != "second" {
		t.Errorf("names %q, %q", keys[first.KeyPrefix].Name, keys[second.KeyPrefix].Name)
	}

	out, err := cmd("keys", "revoke", first.KeyPrefix)
	if err != nil || !strings.Contains(out, first.KeyPrefix) {
		t.Fatalf("keys revoke: %v (printed %q)", err, out)
	}
	keys = listKeys(t, cmd, first.Key, second.Key)
	if k := keys[first.KeyPrefix]; k.RevokedAt == nil || *k.RevokedAt == "" {
		t.Errorf("revoked key listed as %+v", k)
	}
	if k := keys[second.KeyPrefix]; k.RevokedAt != nil {
		t.Errorf("the other key was revoked too: %+v", k)
	}
	// Revoking again is a no-op that still succeeds; an unknown prefix is not found.
	if _, err := cmd("keys", "revoke", first.KeyPrefix); err != nil {
		t.Errorf("second revoke: %v", err)
	}
	if _, err := cmd("keys", "revoke", "svk_00000000"); accountable.ErrorCode(err) != accountable.ECodeNotFound {
		t.Errorf("revoking an unknown prefix: %v", err)
	}
	// The access grants and the revocation are in the workspace's ledger, which still
	// verifies: workspace.created, user.created, workspace.member_added, 2 x api_key.created,
	// api_key.revoked.
	report := verifyWorkspace(t, cmd, first.WorkspaceID, nil)
	if report.EventCount != 6 {
		t.Errorf("eventCount %d, want 6", report.EventCount)
	}
}

type verifyReport struct {
	WorkspaceID        string  `json:"workspaceId"`
	Verified           bool    `json:"verified"`
	EventCount         int64   `json:"eventCount"`
	HeadHash           *string `json:"headHash"`
	FirstBrokenEventID *string `json:"firstBrokenEventId"`
	FirstBrokenReason  *string `json:"firstBrokenReason"`
}

// verifyWorkspace runs `ledger verify --workspace id`, checks its error against wantErr
// and returns the one report line it prints.
func verifyWorkspace(t *testing.T, cmd func(...string) (string, error), id string, wantErr error) verifyReport {
	t.Helper()
	out, err := cmd("ledger", "verify", "--workspace", id)
	if !errors.Is(err, wantErr) || (wantErr == nil) != (err == nil) {
		t.Fatalf("ledger verify: err = %v, want %v (printed %q)", err, wantErr, out)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("ledger verify --workspace printed %d lines: %q", len(lines), out)
	}
	var r verifyReport
	if err := json.Unmarshal([]byte(lines[0]), &r); err != nil {
		t.Fatalf("ledger verify printed %q: %v", out, err)
	}
	if r.WorkspaceID != id {
		t.Fatalf("report for workspace %q, want %q", r.WorkspaceID, id)
	}
	return r
}

func TestCLILedgerVerify(t *testing.T) {
	ctx := context.Background()
	cmd := cli(t)
	k := createKey(t, cmd, "--name", "ci", "--new-workspace", "CI verify", "--user", "ci-verify@example.test")
	bystander := createKey(t, cmd, "--name", "ci", "--new-workspace", "CI bystander", "--user", "ci-verify@example.test")

	r := verifyWorkspace(t, cmd, k.WorkspaceID, nil)
	if !r.Verified || r.EventCount != 4 || r.HeadHash == nil || !strings.HasPrefix(*r.HeadHash, "sha256:") || r.FirstBrokenEventID != nil {
		t.Fatalf("intact ledger: %+v", r)
	}

	// Tamper with the workspace.created event, bypassing the append-only trigger.
	conn := storetest.Conn(t)
	if _, err := conn.Exec(ctx, `SET session_replication_role = replica`); err != nil {
		t.Fatal(err)
	}
	var tampered string
	err := conn.QueryRow(ctx, `UPDATE ledger_events SET payload = jsonb_set(payload, '{name}', '"tampered"')
		WHERE workspace_id = $1 AND event_type = 'workspace.created' RETURNING id::text`, k.WorkspaceID).Scan(&tampered)
	if err != nil {
		t.Fatalf("tamper: %v", err)
	}

	r = verifyWorkspace(t, cmd, k.WorkspaceID, errBrokenLedger)
	if r.Verified || r.EventCount != 4 || r.FirstBrokenEventID == nil || *r.FirstBrokenEventID != tampered ||
		r.FirstBrokenReason == nil || *r.FirstBrokenReason == "" {
		t.Fatalf("tampered ledger: %+v (tampered event %s)", r, tampered)
	}
	// The bystander's user already existed: its workspace has no user.created.
	if r := verifyWorkspace(t, cmd, bystander.WorkspaceID, nil); !r.Verified || r.EventCount != 3 {
		t.Fatalf("bystander: %+v", r)
	}

	// Without --workspace every workspace gets a line, and the broken one fails the run.
	out, err := cmd("ledger", "verify")
	if !errors.Is(err, errBrokenLedger) {
		t.Fatalf("ledger verify (all): err = %v, want errBrokenLedger", err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		var r verifyReport
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("ledger verify printed %q: %v", line, err)
		}
		if r.WorkspaceID == k.WorkspaceID || r.WorkspaceID == bystander.WorkspaceID {
			seen[r.WorkspaceID] = r.Verified
		}
	}
	if v, ok := seen[k.WorkspaceID]; !ok || v {
		t.Errorf("tampered workspace in the full run: present=%v verified=%v", ok, v)
	}
	if v, ok := seen[bystander.WorkspaceID]; !ok || !v {
		t.Errorf("bystander in the full run: present=%v verified=%v", ok, v)
	}
}

func TestCLIKeysCreateRejectsInvalidInput(t *testing.T) {
	cmd := cli(t)
	if out, err := cmd("keys", "create"); err == nil {
		t.Fatalf("bare keys create succeeded, printed %q", out)
	}
	out, err := cmd("keys", "create", "--new-workspace", "no name", "--json")
	if err == nil || accountable.ErrorCode(err) != accountable.ECodeValidationFailed {
		t.Fatalf("keys create without --name: err = %v (printed %q), want validation_failed", err, out)
	}
	if out != "" {
		t.Errorf("keys create without --name printed %q", out)
	}

	missing := uuid.NewString()
	out, err = cmd("keys", "create", "--name", "x", "--workspace", missing)
	if accountable.ErrorCode(err) != accountable.ECodeNotFound {
		t.Fatalf("keys create in an unknown workspace: err = %v (printed %q), want not_found", err, out)
	}
	if strings.Contains(out, "svk_") {
		t.Errorf("a key was printed for an unknown workspace: %q", out)
	}
	// Nothing was created for it.
	out, err = cmd("keys", "list", "--workspace", missing, "--json")
	if err != nil || strings.TrimSpace(out) != "[]" {
		t.Errorf("keys list of the unknown workspace: %q %v", out, err)
	}
	// Both a workspace id and a new workspace is refused too.
	if _, err := cmd("keys", "create", "--name", "x", "--workspace", missing, "--new-workspace", "y"); err == nil {
		t.Errorf("keys create with --workspace and --new-workspace succeeded")
	}
}

func TestCLIRefusesMalformedWorkspaceIDs(t *testing.T) {
	t.Setenv("DATABASE_URL", storetest.URL(t))
	t.Setenv("MIGRATION_DATABASE_URL", storetest.OwnerURL(t))
	for _, args := range [][]string{
		{"keys", "create", "--name", "x", "--workspace", "not-a-uuid"},
		{"keys", "list", "--workspace", "not-a-uuid"},
		{"ledger", "verify", "--workspace", "not-a-uuid"},
		{"users", "remove", "--email", "someone@example.test", "--workspace", "not-a-uuid"},
	} {
		var out bytes.Buffer
		err := run(args, &out)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "UUID") || out.Len() != 0 {
			t.Errorf("%v: err=%v out=%q", args, err, out.String())
		}
	}
}

// users create makes a member without a key; users set-password stores an Argon2id hash
// of standard input's first line (never the password), refusing a short one.
func TestUsersCommands(t *testing.T) {
	cmd := cli(t)
	email := "person-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "@example.test"
	out, err := cmd("users", "create", "--email", email, "--new-workspace", "People")
	if err != nil || !strings.Contains(out, "workspace id:") {
		t.Fatalf("users create: %v %s", err, out)
	}
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := usersCommand(cfg, []string{"set-password", "--email", email}, strings.NewReader("short\n"), &buf); !errors.Is(err, errUsage) {
		t.Fatalf("a short password: %v", err)
	}
	if err := usersCommand(cfg, []string{"set-password", "--email", email}, strings.NewReader("a long enough password\nignored\n"), &buf); err != nil {
		t.Fatal(err)
	}
	if err := usersCommand(cfg, []string{"set-password", "--email", "nobody@example.test"}, strings.NewReader("a long enough password\n"), &buf); accountable.ErrorCode(err) != accountable.ECodeNotFound {
		t.Fatalf("an unknown user: %v", err)
	}
	db := storetest.Open(t)
	_, hash, _, err := db.SignInTarget(t.Context(), email)
	if err != nil || !strings.HasPrefix(hash, "$argon2id$") || strings.Contains(hash, "long enough") {
		t.Fatalf("stored %q %v", hash, err)
	}
	if ok, err := passwords.Verify(hash, "a long enough password"); err != nil || !ok {
		t.Fatalf("verify: %v %v", ok, err)
	}
	if keys, _ := cmd("keys", "list", "--json"); strings.Contains(keys, email) {
		t.Fatal("users create issued a key")
	}

	// users remove ends the membership, as the ledger records: the person cannot sign in
	// to the workspace any more; removing a non-member is not_found.
	ws := regexp.MustCompile(`workspace id: +(\S+)`).FindStringSubmatch(out)
	if err := usersCommand(cfg, []string{"remove", "--email", email}, nil, &buf); !errors.Is(err, errUsage) {
		t.Fatalf("remove without --workspace: %v", err)
	}
	out, err = cmd("users", "remove", "--email", email, "--workspace", ws[1])
	if err != nil || !strings.Contains(out, "removed user "+email) {
		t.Fatalf("users remove: %v %s", err, out)
	}
	if _, _, _, err := db.SignInTarget(t.Context(), email); accountable.ErrorCode(err) != accountable.ECodeNotFound {
		t.Fatalf("a removed member signs in: %v", err)
	}
	if _, err := cmd("users", "remove", "--email", email, "--workspace", ws[1]); accountable.ErrorCode(err) != accountable.ECodeNotFound {
		t.Fatalf("removing a non-member: %v", err)
	}
	var eventType, actorType, removed string
	err = storetest.Conn(t).QueryRow(t.Context(), `SELECT event_type, actor_type, payload->>'user_id' FROM ledger_events
		WHERE workspace_id = $1 AND aggregate_type = 'workspace' ORDER BY aggregate_version DESC LIMIT 1`, ws[1]).Scan(&eventType, &actorType, &removed)
	if err != nil || eventType != accountable.EventMemberRemoved || actorType != string(accountable.ActorSystem) || !strings.Contains(out, removed) {
		t.Fatalf("the workspace's last event: %s by %s of %s (%v)", eventType, actorType, removed, err)
	}
	if out, err := cmd("ledger", "verify", "--workspace", ws[1]); err != nil {
		t.Fatalf("ledger verify: %v %s", err, out)
	}
}

// TestCLILedgerKey: with no key configured, the first start makes one in
// LEDGER_SIGNING_KEY_FILE (readable by its owner only) and `ledger key` prints its public
// half; the next run reads the same key; a configured LEDGER_SIGNING_KEY wins; a malformed
// key is refused.
func TestCLILedgerKey(t *testing.T) {
	cmd := cli(t)
	file := filepath.Join(t.TempDir(), "keys", "ledger-signing-key")
	t.Setenv("LEDGER_SIGNING_KEY", "")
	t.Setenv("LEDGER_SIGNING_KEY_FILE", file)
	t.Setenv("LEDGER_LOG_NAME", "audit.example/accountable")
	first, err := cmd("ledger", "key")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first, "audit.example/accountable+") {
		t.Fatalf("ledger key printed %q, want a verifier key named after the log", first)
	}
	if _, err := note.NewVerifier(strings.TrimSpace(first)); err != nil {
		t.Fatalf("ledger key printed %q: %v", first, err)
	}
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("the key file has mode %v, want 0600", st.Mode().Perm())
	}
	if again, err := cmd("ledger", "key"); err != nil || again != first {
		t.Fatalf("a second run printed %q (%v), want the same key %q", again, err, first)
	}
	other, err := ledgerlog.GenerateKey("other.example")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("LEDGER_SIGNING_KEY", other)
	if out, err := cmd("ledger", "key"); err != nil || !strings.HasPrefix(out, "other.example+") {
		t.Fatalf("with LEDGER_SIGNING_KEY set: %q, %v", out, err)
	}
	t.Setenv("LEDGER_SIGNING_KEY", "PRIVATE+KEY+nonsense")
	if _, err := cmd("ledger", "key"); err == nil {
		t.Fatal("a malformed LEDGER_SIGNING_KEY was taken")
	}
}

// TestCLILedgerLogList: the log list names every workspace's log with the key, in the
// form witnessctl pull-logs reads.
func TestCLILedgerLogList(t *testing.T) {
	cmd := cli(t)
	k := createKey(t, cmd, "--name", "log-list", "--new-workspace", "Log list")
	out, err := cmd("ledger", "log-list")
	if err != nil {
		t.Fatal(err)
	}
	vkey, err := cmd("ledger", "key")
	if err != nil {
		t.Fatal(err)
	}
	want := "vkey " + strings.TrimSpace(vkey) + "\norigin accountable.localhost/workspaces/" + k.WorkspaceID + "\n"
	if !strings.HasPrefix(out, "logs/v0\n") || !strings.Contains(out, want) {
		t.Fatalf("ledger log-list printed %q, want a logs/v0 list with %q", out, want)
	}
}
