package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store/storetest"
)

// TestCompletionInOneStatementIsTheLongWays completes work items of every shape with a key
// and checks what the one-statement completion (store.CompleteWorkSQL) wrote against what
// the long way would: the answer and its replay are the same bytes, the chain verifies
// (the event's hash PostgreSQL made is the service's), and the read afterwards is the
// answer's task. The record shows which way ran (the statement's task JSON is PostgreSQL's
// json_build_object text, `{"id" : `): the one statement for every task but those whose
// due date is outside the years it writes, which take the long way.
func TestCompletionInOneStatementIsTheLongWays(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	p := storetest.NewTenant(t, db).Principal
	conn, err := pgx.Connect(ctx, storetest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rng := rand.New(rand.NewPCG(30, 1))
	texts := []string{"plain", `quote " and \ backslash`, "tab\tnew\nline\u0001", "é ü 日本 😀", "<&> \u2028", ""}
	metas := []string{`{}`, `{"b":1,"a":[1.50,"x",null,true]}`, `{"long key name":{"n":-0.0001,"e":1e300}}`, `{"s":"\u00e9\ud83d\ude00"}`}
	dues := []string{"", "2026-12-01", "2027-03-04T05:06:07.123456+02:00", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z", "0000-06-01"}
	ways := map[bool]int{}
	before, err := db.VerifyLedger(ctx, p.WorkspaceID, accountable.LedgerScope{})
	if err != nil || !before.Verified {
		t.Fatalf("verification %+v: %v", before, err)
	}
	for i := range 48 {
		in := accountable.CreateWork{Title: texts[rng.IntN(len(texts)-1)] + fmt.Sprint(i), Metadata: accountable.Object(metas[rng.IntN(len(metas))])}
		if d := texts[rng.IntN(len(texts))]; rng.IntN(3) > 0 {
			in.Description = &d
		}
		if c := rng.Int64N(1 << 40); rng.IntN(2) == 0 {
			in.EstimatedCostCents = &c
		}
		if rng.IntN(2) == 0 {
			id := "0190c7a2-1b2c-7d3e-8f40-" + fmt.Sprintf("%012x", rng.Int64N(1<<40))
			in.InitiativeID, in.MilestoneID = &id, &id
		}
		due := dues[rng.IntN(len(dues))]
		if due != "" {
			var d accountable.CalendarTime
			if err := d.UnmarshalJSON([]byte(`"` + due + `"`)); err != nil {
				t.Fatal(err)
			}
			in.DueDate = &d
		}
		created, _, err := db.CreateWork(ctx, p, nil, in)
		if err != nil {
			t.Fatalf("create %+v: %v", in, err)
		}
		task := created.Task
		complete := accountable.CompleteWork{TaskID: task.ID, VersionToken: ptr(task.Version().Token())}
		if s := texts[rng.IntN(len(texts))]; rng.IntN(2) == 0 {
			complete.Summary = &s
		}
		if rng.IntN(2) == 0 {
			h := rng.Float64() * 100
			complete.MeasuredDurationHours = &h
		}
		if rng.IntN(2) == 0 {
			complete.Evidence = accountable.Object(metas[rng.IntN(len(metas))])
		}
		idem := &accountable.Idempotency{Key: fmt.Sprintf("complete-%d", i), Operation: "completeWork", RequestDigest: fmt.Sprintf("sha256:%02x", i)}
		done, dup, err := db.CompleteWork(ctx, p, idem, complete)
		if err != nil || dup {
			t.Fatalf("complete %s: %v dup=%v", task.ID, err, dup)
		}
		var response string
		if err := conn.QueryRow(ctx, `SELECT response::text FROM idempotency_records WHERE workspace_id = $1 AND key = $2`,
			p.WorkspaceID, idem.Key).Scan(&response); err != nil {
			t.Fatal(err)
		}
		oneStatement := strings.Contains(response, `"task":{"id" : `)
		year := 2026
		if task.DueDate != nil {
			year = task.DueDate.Year()
		}
		if want := year >= 1 && year <= 9999; oneStatement != want {
			t.Fatalf("due %q (year %d): one statement %v, want %v; record %s", due, year, oneStatement, want, response)
		}
		ways[oneStatement]++
		again, dup, err := db.CompleteWork(ctx, p, idem, complete)
		if err != nil || !dup {
			t.Fatalf("replay %s: %v dup=%v", task.ID, err, dup)
		}
		// The replay of the record the long way writes for the same answer: its JSON.
		first, err := done.AppendJSON([]byte(`{"v":1,"data":`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `UPDATE idempotency_records SET response = $3 WHERE workspace_id = $1 AND key = $2`,
			p.WorkspaceID, idem.Key, string(first)+"}"); err != nil {
			t.Fatal(err)
		}
		longWay, dup, err := db.CompleteWork(ctx, p, idem, complete)
		if err != nil || !dup {
			t.Fatalf("replay of the long way's record %s: %v dup=%v", task.ID, err, dup)
		}
		replayed, _ := again.AppendJSON(nil)
		want, _ := longWay.AppendJSON(nil)
		if string(want) != string(replayed) {
			t.Fatalf("the replay differs from the long way's\n long way %s\n replay   %s\n record   %s", want, replayed, response)
		}
		if done.Task.Status != accountable.TaskCompleted || done.AggregateVersion != 2 || done.Task.AggregateVersion != 2 ||
			done.Receipt.TaskID != task.ID || !done.Task.UpdatedAt.Equal(done.Receipt.CreatedAt.Time) {
			t.Fatalf("completion %+v", done)
		}
		read, err := db.GetWork(ctx, p.WorkspaceID, task.ID)
		if err != nil {
			t.Fatal(err)
		}
		readJSON, _ := read.AppendJSON(nil)
		doneJSON, _ := done.Task.AppendJSON(nil)
		if string(readJSON) != string(doneJSON) {
			t.Fatalf("read after the completion\n got %s\nwant %s", readJSON, doneJSON)
		}
		receipt, err := db.WorkReceipt(ctx, p.WorkspaceID, task.ID)
		if err != nil || receipt.EventHash != done.EventHash || receipt.EventID != done.EventID {
			t.Fatalf("receipt %+v: %v; completion's event %s %s", receipt, err, done.EventID, done.EventHash)
		}
	}
	if ways[true] == 0 || ways[false] == 0 {
		t.Fatalf("ways taken %v: both must be", ways)
	}
	v, err := db.VerifyLedger(ctx, p.WorkspaceID, accountable.LedgerScope{})
	if err != nil || !v.Verified || v.EventCount != before.EventCount+2*48 {
		t.Fatalf("verification %+v: %v", v, err)
	}
}

// TestCompletionInOneStatementRefusesAsTheLongWay: what the one statement does not match
// (a stale version, a completed task, a task of another workspace or none) writes nothing
// and is answered by the long way, with its reason; a request whose key another request's
// completion holds waits for nothing.
func TestCompletionInOneStatementRefusesAsTheLongWay(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	p := storetest.NewTenant(t, db).Principal
	other := storetest.NewTenant(t, db).Principal
	task := createTask(t, db, p, "once")
	stale := accountable.TaskVersion{AggregateVersion: 1, UpdatedAt: task.UpdatedAt.Add(time.Microsecond)}
	before, err := db.VerifyLedger(ctx, p.WorkspaceID, accountable.LedgerScope{})
	if err != nil || !before.Verified {
		t.Fatalf("verification %+v: %v", before, err)
	}
	for _, c := range []struct {
		p    accountable.Principal
		in   accountable.CompleteWork
		code string
	}{
		{p, accountable.CompleteWork{TaskID: task.ID, VersionToken: ptr(stale.Token())}, accountable.ECodeTaskVersionStale},
		{other, accountable.CompleteWork{TaskID: task.ID, VersionToken: ptr(task.Version().Token())}, accountable.ECodeNotFound},
		{p, accountable.CompleteWork{TaskID: "0190c7a2-1b2c-7d3e-8f40-00000000dead", VersionToken: ptr(task.Version().Token())}, accountable.ECodeNotFound},
	} {
		if _, _, err := db.CompleteWork(ctx, c.p, &accountable.Idempotency{Key: "k-" + c.code + c.in.TaskID[30:] + c.p.WorkspaceID[30:], Operation: "completeWork", RequestDigest: "sha256:aa"}, c.in); accountable.ErrorCode(err) != c.code {
			t.Fatalf("%+v: %v, want %s", c.in, err, c.code)
		}
	}
	done, _, err := db.CompleteWork(ctx, p, nil, accountable.CompleteWork{TaskID: task.ID, VersionToken: ptr(task.Version().Token())})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = db.CompleteWork(ctx, p, nil, accountable.CompleteWork{TaskID: task.ID, VersionToken: ptr(done.Task.Version().Token())})
	if accountable.ErrorCode(err) != accountable.ECodeInvalidStateTransition {
		t.Fatalf("completing a completed task: %v", err)
	}
	v, err := db.VerifyLedger(ctx, p.WorkspaceID, accountable.LedgerScope{})
	if err != nil || !v.Verified || v.EventCount != before.EventCount+1 {
		t.Fatalf("verification %+v: %v (the refusals must write nothing)", v, err)
	}
	var records int
	conn, err := pgx.Connect(ctx, storetest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM idempotency_records WHERE workspace_id = ANY($1::uuid[])`,
		[]string{p.WorkspaceID, other.WorkspaceID}).Scan(&records); err != nil || records != 0 {
		t.Fatalf("records of refusals: %d %v", records, err)
	}
}
