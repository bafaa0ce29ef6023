package store_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// addMember makes the user with email a member of the workspace (`users create
// --workspace`).
func addMember(t *testing.T, db *store.DB, email, workspaceID string) {
	t.Helper()
	if _, err := db.CreateUser(context.Background(), store.CreateKeyRequest{UserEmail: email, WorkspaceID: workspaceID}); err != nil {
		t.Fatal(err)
	}
}

// The key lookup of authentication answers the workspaces the key's user is a member of
// now, and no key once its user left the key's own workspace; the command line still
// finds it (to revoke it), and it is back when the user is.
func TestMembershipDecidesWhereAKeyActs(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	a, b := storetest.NewTenant(t, db), storetest.NewTenant(t, db)
	email, prefix := a.Principal.UserEmail, a.Principal.KeyPrefix
	memberOf := func() ([]string, error) {
		k, _, err := db.KeyByPrefix(ctx, prefix)
		return k.MemberOf, err
	}
	if ws, err := memberOf(); err != nil || !slices.Equal(ws, []string{a.Principal.WorkspaceID}) {
		t.Fatalf("a's key acts in %v (%v)", ws, err)
	}
	addMember(t, db, email, b.Principal.WorkspaceID)
	if ws, err := memberOf(); err != nil || len(ws) != 2 || !slices.Contains(ws, b.Principal.WorkspaceID) {
		t.Fatalf("after joining b, a's key acts in %v (%v)", ws, err)
	}
	if user, err := db.RemoveMember(ctx, b.Principal.WorkspaceID, email); err != nil || user != a.Principal.UserID {
		t.Fatalf("remove from b: %q %v", user, err)
	}
	if ws, err := memberOf(); err != nil || !slices.Equal(ws, []string{a.Principal.WorkspaceID}) {
		t.Fatalf("after leaving b, a's key acts in %v (%v)", ws, err)
	}
	if _, err := db.RemoveMember(ctx, b.Principal.WorkspaceID, email); accountable.ErrorCode(err) != accountable.ECodeNotFound {
		t.Fatalf("removing a non-member: %v", err)
	}
	if _, err := db.RemoveMember(ctx, "0190c0de-0000-7000-8000-000000000000", email); accountable.ErrorCode(err) != accountable.ECodeNotFound {
		t.Fatalf("removing from an unknown workspace: %v", err)
	}
	if _, err := db.RemoveMember(ctx, a.Principal.WorkspaceID, email); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.KeyByPrefix(ctx, prefix); accountable.ErrorCode(err) != accountable.ECodeNotFound {
		t.Fatalf("the key of a user who left its workspace: %v", err)
	}
	addMember(t, db, email, a.Principal.WorkspaceID)
	if ws, err := memberOf(); err != nil || !slices.Equal(ws, []string{a.Principal.WorkspaceID}) {
		t.Fatalf("back in a, the key acts in %v (%v)", ws, err)
	}
	if _, err := db.RemoveMember(ctx, a.Principal.WorkspaceID, email); err != nil {
		t.Fatal(err)
	}
	if k, err := db.RevokeKey(ctx, prefix); err != nil || k.RevokedAt == nil {
		t.Fatalf("the command line revokes a removed member's key: %+v %v", k, err)
	}

	// Each removal is the workspace's event, in its chain, which verifies.
	var removed []string
	rows, err := storetest.Conn(t).Query(ctx, `SELECT payload->>'user_id' FROM ledger_events
		WHERE workspace_id = $1 AND event_type = 'workspace.member_removed' ORDER BY aggregate_version`, a.Principal.WorkspaceID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			t.Fatal(err)
		}
		removed = append(removed, u)
	}
	if len(removed) != 2 || removed[0] != a.Principal.UserID || removed[1] != a.Principal.UserID {
		t.Fatalf("removals recorded in a: %v", removed)
	}
	for _, ws := range []string{a.Principal.WorkspaceID, b.Principal.WorkspaceID} {
		if v, err := db.VerifyLedger(ctx, ws, accountable.LedgerScope{}); err != nil || !v.Verified {
			t.Fatalf("ledger of %s: %+v %v", ws, v, err)
		}
	}
}

// A key served from memory follows its user's memberships at once, however long keys and
// unknown prefixes are kept: joining a workspace, leaving it, leaving the key's own
// workspace (not found) and coming back.
func TestKeyCacheFollowsMembershipChangesAtOnce(t *testing.T) {
	ctx := context.Background()
	db, kc, _, prefix := cachedKey(t, time.Hour)
	kc.UnknownTTL = time.Hour
	k, _, err := kc.KeyByPrefix(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	home, email := k.WorkspaceID, k.UserEmail
	other := storetest.NewTenant(t, db).Principal.WorkspaceID
	actsIn := func(ws string) bool {
		k, _, err := kc.KeyByPrefix(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(k.MemberOf, ws)
	}
	if actsIn(other) {
		t.Fatal("the key acts in a workspace its user is not a member of")
	}
	addMember(t, db, email, other)
	storetest.WaitFor(t, 5*time.Second, "the cache to see the user join", func() bool { return actsIn(other) })
	if _, err := db.RemoveMember(ctx, other, email); err != nil {
		t.Fatal(err)
	}
	storetest.WaitFor(t, 5*time.Second, "the cache to see the user leave", func() bool { return !actsIn(other) })
	if _, err := db.RemoveMember(ctx, home, email); err != nil {
		t.Fatal(err)
	}
	storetest.WaitFor(t, 5*time.Second, "the cache to stop serving the key of a user who left its workspace", func() bool {
		_, _, err := kc.KeyByPrefix(ctx, prefix)
		return accountable.ErrorCode(err) == accountable.ECodeNotFound
	})
	if !kc.UnknownPrefix(prefix) {
		t.Fatal("the key of a removed member is not remembered as unknown (each request would cost a query)")
	}
	addMember(t, db, email, home)
	storetest.WaitFor(t, 5*time.Second, "the cache to see the user come back", func() bool {
		_, _, err := kc.KeyByPrefix(ctx, prefix)
		return err == nil
	})
}

// A workspace's keys are those that can act in it: its current members' keys, made in it
// or (live ones) in their other workspaces; a non-member's is neither listed nor
// revocable through it; revoking a member's key of another workspace records, in that
// workspace, who revoked it and from where.
func TestWorkspaceKeysAreTheKeysThatActInIt(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	a, b, outsider := storetest.NewTenant(t, db), storetest.NewTenant(t, db), storetest.NewTenant(t, db)
	bws := b.Principal.WorkspaceID
	// a joins b; a's second key of a's workspace is revoked (it acts nowhere); the outsider
	// keeps a key in a's workspace without being a member of b.
	addMember(t, db, a.Principal.UserEmail, bws)
	dead, err := db.CreateKey(ctx, store.CreateKeyRequest{Name: "dead", UserEmail: a.Principal.UserEmail, WorkspaceID: a.Principal.WorkspaceID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.RevokeKey(ctx, dead.KeyPrefix); err != nil {
		t.Fatal(err)
	}
	addMember(t, db, outsider.Principal.UserEmail, a.Principal.WorkspaceID)
	inA, err := db.CreateKey(ctx, store.CreateKeyRequest{Name: "outsider's", UserEmail: outsider.Principal.UserEmail, WorkspaceID: a.Principal.WorkspaceID})
	if err != nil {
		t.Fatal(err)
	}
	listed := func() []string {
		keys, err := db.WorkspaceKeys(ctx, bws)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, k := range keys {
			out = append(out, k.Prefix+"@"+k.WorkspaceName)
		}
		return out
	}
	want := []string{b.Principal.KeyPrefix + "@ws " + b.Principal.UserEmail, a.Principal.KeyPrefix + "@ws " + a.Principal.UserEmail}
	if got := listed(); !slices.Equal(got, want) {
		t.Fatalf("b's keys: %v, want %v", got, want)
	}
	for _, p := range []string{outsider.Principal.KeyPrefix, inA.KeyPrefix, dead.KeyPrefix, "svk_00000000"} {
		if _, err := db.RevokeWorkspaceKey(ctx, bws, p, accountable.Actor{Type: accountable.ActorHuman, ID: b.Principal.UserID}); accountable.ErrorCode(err) != accountable.ECodeNotFound {
			t.Fatalf("b revokes %s: %v", p, err)
		}
	}
	by := accountable.Actor{Type: accountable.ActorHuman, ID: b.Principal.UserID}
	k, err := db.RevokeWorkspaceKey(ctx, bws, a.Principal.KeyPrefix, by)
	if err != nil || k.RevokedAt == nil {
		t.Fatalf("b revokes a's key: %+v %v", k, err)
	}
	if got := listed(); !slices.Equal(got, want[:1]) {
		t.Fatalf("b's keys after the revocation: %v", got)
	}
	var actor, payload string
	err = storetest.Conn(t).QueryRow(ctx, `SELECT actor_id, payload::text FROM ledger_events
		WHERE workspace_id = $1 AND event_type = 'api_key.revoked' AND payload->>'key_prefix' = $2`,
		a.Principal.WorkspaceID, a.Principal.KeyPrefix).Scan(&actor, &payload)
	var p map[string]string
	if err != nil || json.Unmarshal([]byte(payload), &p) != nil || actor != b.Principal.UserID || p["revoked_from_workspace_id"] != bws {
		t.Fatalf("the revocation in a's ledger: by %s %s (%v)", actor, payload, err)
	}
	// Once a leaves b, a's keys are not b's to list or revoke.
	if _, err := db.RemoveMember(ctx, bws, a.Principal.UserEmail); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RevokeWorkspaceKey(ctx, bws, a.Principal.KeyPrefix, by); accountable.ErrorCode(err) != accountable.ECodeNotFound {
		t.Fatalf("b revokes the key of a former member: %v", err)
	}
}
