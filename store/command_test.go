package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// The command path maps failures once: lost races (serialization failure, deadlock, a
// unique violation the command does not name) run again, a bounded number of times, then
// answer write_conflict; a constraint the command relies on is its domain error at once.
func TestCommandFailuresAreRetriedOrMapped(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	p := storetest.NewTenant(t, db).Principal
	errFirstClaimant := accountable.Errorf(accountable.ECodeInvalidStateTransition, "already claimed")
	named := map[string]error{"claims_first_wins": errFirstClaimant}
	for _, c := range []struct {
		name, code, constraint string
		failures, attempts     int
		want                   string // error code; "" for success
	}{
		{"serialization failure once", "40001", "", 1, 2, ""},
		{"deadlock twice", "40P01", "", 2, 3, ""},
		{"unnamed unique violation once", "23505", "some_other_unique", 1, 2, ""},
		{"serialization failures beyond the bound", "40001", "", 10, 4, accountable.ECodeWriteConflict},
		{"deadlocks beyond the bound", "40P01", "", 10, 4, accountable.ECodeWriteConflict},
		{"a named constraint", "23505", "claims_first_wins", 10, 1, accountable.ECodeInvalidStateTransition},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := ledgerEvents(t, p.WorkspaceID)
			attempts, err := store.RunFailing(ctx, db, p, c.code, c.constraint, c.failures, named)
			if attempts != c.attempts {
				t.Errorf("%d attempts, want %d", attempts, c.attempts)
			}
			var ae *accountable.Error
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("error %v", err)
			case c.want != "" && (!errors.As(err, &ae) || ae.Code != c.want):
				t.Fatalf("error %v, want %s", err, c.want)
			}
			wantEvents := 1
			if c.want != "" {
				wantEvents = 0
			}
			if got := ledgerEvents(t, p.WorkspaceID) - before; got != wantEvents {
				t.Fatalf("%d events written, want %d (the failed attempts must leave nothing)", got, wantEvents)
			}
		})
	}
}

// Appending to an existing aggregate without its locked head is refused, never retried,
// and writes nothing: it would restart the chain at version 1 with a null previousHash.
func TestAppendWithoutTheLockedHeadIsRefused(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	p := storetest.NewTenant(t, db).Principal
	task := createTask(t, db, p, "chained")
	before := ledgerEvents(t, p.WorkspaceID)
	err := store.AppendUndeclared(ctx, db, p, task.ID)
	if !errors.Is(err, store.ErrMissingPredecessor) {
		t.Fatalf("undeclared append: %v", err)
	}
	if got := ledgerEvents(t, p.WorkspaceID); got != before {
		t.Fatalf("%d events written", got-before)
	}
	// Declaring a new aggregate besides does not make the violation a creation race
	// (errCreatedMeanwhile, retried): the declared aggregate still has no head.
	if err := store.AppendUndeclared(ctx, db, p, task.ID, uuid.NewString()); !errors.Is(err, store.ErrMissingPredecessor) {
		t.Fatalf("undeclared append beside a declared new aggregate: %v", err)
	}
	if got := ledgerEvents(t, p.WorkspaceID); got != before {
		t.Fatalf("%d events written", got-before)
	}
	if v, err := db.VerifyLedger(ctx, p.WorkspaceID, accountable.LedgerScope{}); err != nil || !v.Verified {
		t.Fatalf("ledger after the refusal: %+v %v", v, err)
	}
}

func ledgerEvents(t *testing.T, workspaceID string) int {
	t.Helper()
	var n int
	if err := storetest.Conn(t).QueryRow(context.Background(), `SELECT count(*) FROM ledger_events WHERE workspace_id = $1`,
		workspaceID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A workflow run whose request released its claim stores nothing. The request's start of
// the run failed (as far as it could tell: Temporal may take a start as the caller's
// deadline runs out) and it answered that nothing was stored; the run that began anyway
// must keep that true. With the claim held, the same store succeeds and completes it.
func TestReleasedClaimCompletesNothing(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	p := storetest.NewTenant(t, db).Principal
	idem := &accountable.Idempotency{Key: "released-claim", Operation: "initiative_proposal.generate", RequestDigest: "sha256:released"}
	wfID := "proposal-generation/" + p.WorkspaceID
	proposal := accountable.InitiativeProposal{ProposalID: uuid.Must(uuid.NewV7()).String(), ProposalDigest: "sha256:x",
		Status: accountable.ProposalProposed, ExpiresAt: accountable.TimeOf(time.Now().Add(time.Hour))}
	count := func() (proposals, records int) {
		t.Helper()
		conn := storetest.Conn(t)
		if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM initiative_proposals WHERE workspace_id = $1),
				(SELECT count(*) FROM idempotency_records WHERE workspace_id = $1 AND key = $2)`,
			p.WorkspaceID, idem.Key).Scan(&proposals, &records); err != nil {
			t.Fatal(err)
		}
		return proposals, records
	}

	claim, err := db.ClaimProposalGeneration(ctx, p.WorkspaceID, idem, wfID, 6)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.ReleaseProposalGeneration(ctx, p.WorkspaceID, idem, "", claim.Slot); err != nil {
		t.Fatal(err)
	}
	events := ledgerEvents(t, p.WorkspaceID)
	_, err = db.StoreProposal(ctx, p.WorkspaceID, p.Actor(), idem, accountable.Causation{}, proposal, "Released")
	if accountable.ErrorCode(err) != accountable.ECodeInvalidStateTransition {
		t.Fatalf("store after the release: %v, want invalid_state_transition", err)
	}
	if proposals, records := count(); proposals != 0 || records != 0 || ledgerEvents(t, p.WorkspaceID) != events {
		t.Fatalf("a released claim's run stored %d proposals, %d records, %d events", proposals, records, ledgerEvents(t, p.WorkspaceID)-events)
	}

	// Claimed (a retry of the request), the same run's store completes it, once.
	if _, err := db.ClaimProposalGeneration(ctx, p.WorkspaceID, idem, wfID, 6); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		stored, err := db.StoreProposal(ctx, p.WorkspaceID, p.Actor(), idem, accountable.Causation{}, proposal, "Claimed")
		if err != nil || stored.ProposalID != proposal.ProposalID {
			t.Fatalf("store with the claim held: %v %+v", err, stored)
		}
	}
	if proposals, records := count(); proposals != 1 || records != 1 || ledgerEvents(t, p.WorkspaceID) != events+1 {
		t.Fatalf("with the claim: %d proposals, %d records, %d events", proposals, records, ledgerEvents(t, p.WorkspaceID)-events)
	}
}

// A run releases only the pending record that names it, or, for a start that failed, the
// one naming no run: a late release of a failed run must not take a retry's fresh claim.
func TestARunReleasesOnlyItsOwnClaim(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	p := storetest.NewTenant(t, db).Principal
	idem := &accountable.Idempotency{Key: "own-claim", Operation: "initiative_proposal.generate", RequestDigest: "sha256:own"}
	wfID := "proposal-generation/" + p.WorkspaceID
	pending := func() bool {
		t.Helper()
		var n int
		if err := storetest.Conn(t).QueryRow(ctx, `SELECT count(*) FROM idempotency_records
			WHERE workspace_id = $1 AND key = $2 AND status = 'pending'`, p.WorkspaceID, idem.Key).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	release := func(runID string) {
		t.Helper()
		if err := db.ReleaseProposalGeneration(ctx, p.WorkspaceID, idem, runID, ""); err != nil {
			t.Fatal(err)
		}
	}
	first, retry := uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String()

	if _, err := db.ClaimProposalGeneration(ctx, p.WorkspaceID, idem, wfID, 6); err != nil {
		t.Fatal(err)
	}
	if err := db.SetWorkflowRun(ctx, p.WorkspaceID, idem, first); err != nil {
		t.Fatal(err)
	}
	release(retry)
	release("")
	if !pending() {
		t.Fatal("a release by another run, or by a failed start, removed the record naming the first run")
	}
	release(first)
	if pending() {
		t.Fatal("the first run's release left its record")
	}

	// The retry claims the key afresh; the first run's release arrives late.
	if _, err := db.ClaimProposalGeneration(ctx, p.WorkspaceID, idem, wfID, 6); err != nil {
		t.Fatal(err)
	}
	release(first)
	if !pending() {
		t.Fatal("the first run's late release removed the retry's claim (no run named yet)")
	}
	if err := db.SetWorkflowRun(ctx, p.WorkspaceID, idem, retry); err != nil {
		t.Fatal(err)
	}
	release(first)
	if !pending() {
		t.Fatal("the first run's late release removed the retry's claim")
	}
	release(retry)
	if pending() {
		t.Fatal("the retry's own release left its record")
	}
}
