package ledgerlog_test

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/accountablework/accountable/ledgerlog"
)

// auditFixture is a log's key, a workspace's origin and an auditor of it.
type auditFixture struct {
	key     *ledgerlog.Key
	origin  string
	auditor *ledgerlog.Auditor
}

func newAuditFixture(t *testing.T) auditFixture {
	t.Helper()
	skey, err := ledgerlog.GenerateKey("accountable.example")
	if err != nil {
		t.Fatal(err)
	}
	key, err := ledgerlog.ParseKey(skey)
	if err != nil {
		t.Fatal(err)
	}
	origin := ledgerlog.Origin(key.Name(), workspaceID)
	a, err := ledgerlog.NewAuditor(key.VerifierKey, origin)
	if err != nil {
		t.Fatal(err)
	}
	return auditFixture{key: key, origin: origin, auditor: a}
}

func (f auditFixture) sign(t *testing.T, origin string, tree tlog.Tree) []byte {
	t.Helper()
	signed, err := f.key.SignCheckpoint(origin, tree)
	if err != nil {
		t.Fatal(err)
	}
	return signed
}

// logOf is a log of n events, event rewritten (if in range) given another title.
func logOf(n, rewritten int) *memoryLog {
	m := &memoryLog{}
	for i := range n {
		title := "task"
		if i == rewritten {
			title = "rewritten"
		}
		m.append(entryOf(i, title))
	}
	return m
}

// wantError fails unless err is (or is not, wrapped nil) sentinel and says every part.
func wantError(t *testing.T, err, sentinel error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one saying %q", parts)
	}
	t.Log(err)
	if sentinel != nil && !errors.Is(err, sentinel) {
		t.Fatalf("%v: does not wrap %v", err, sentinel)
	}
	if sentinel == nil && (errors.Is(err, ledgerlog.ErrNotConsistent) || errors.Is(err, ledgerlog.ErrNotIncluded)) {
		t.Fatalf("%v: a bad checkpoint proves nothing about the log, yet the error says it does", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("%v: does not say %q", err, p)
		}
	}
}

func TestAuditorChecksConsistency(t *testing.T) {
	f := newAuditFixture(t)
	honest := logOf(7, -1)
	small := logOf(4, -1)
	kept := f.sign(t, f.origin, small.tree())
	later := f.sign(t, f.origin, honest.tree())
	proof, err := tlog.ProveTree(7, 4, honest)
	if err != nil {
		t.Fatal(err)
	}

	tree, err := f.auditor.CheckConsistency(kept, later, proof)
	if err != nil || tree != honest.tree() {
		t.Fatalf("an honest log grown from 4 to 7: %v, %v", tree, err)
	}
	if tree, err := f.auditor.CheckConsistency(kept, kept, nil); err != nil || tree.N != 4 {
		t.Fatalf("the same checkpoint again: %v, %v", tree, err)
	}
	if _, err := f.auditor.CheckConsistency(kept, later, proof[1:]); err == nil {
		t.Fatal("a proof cut short passed")
	}

	// Each is signed with the log's own key: what the key holder can do is still caught.
	rewritten := logOf(7, 2)
	rewrittenProof, err := tlog.ProveTree(7, 4, rewritten)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.auditor.CheckConsistency(kept, f.sign(t, f.origin, rewritten.tree()), rewrittenProof)
	wantError(t, err, ledgerlog.ErrNotConsistent, "size 7", "size 4")

	// The rewrite of an event after the kept tree: the kept tree is still a prefix.
	appended := logOf(7, 5)
	appendedProof, err := tlog.ProveTree(7, 4, appended)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.auditor.CheckConsistency(kept, f.sign(t, f.origin, appended.tree()), appendedProof); err != nil {
		t.Fatalf("a different event after the kept tree is not a fork of it: %v", err)
	}

	_, err = f.auditor.CheckConsistency(later, kept, nil)
	wantError(t, err, ledgerlog.ErrNotConsistent, "truncated", "size 4", "size 7")
	_, err = f.auditor.CheckConsistency(later, f.sign(t, f.origin, rewritten.tree()), nil)
	wantError(t, err, ledgerlog.ErrNotConsistent, "fork", "size 7")

	// Checkpoints the auditor must not take: another key's, another workspace's.
	other := newAuditFixture(t)
	_, err = f.auditor.CheckConsistency(kept, other.sign(t, f.origin, honest.tree()), proof)
	wantError(t, err, nil, "newer checkpoint", "not signed by")
	_, err = f.auditor.CheckConsistency(other.sign(t, f.origin, small.tree()), later, proof)
	wantError(t, err, nil, "checkpoint kept", "not signed by")
	elsewhere := ledgerlog.Origin(f.key.Name(), "0190f7b4-5d1e-7c3a-9a4e-000000000000")
	_, err = f.auditor.CheckConsistency(kept, f.sign(t, elsewhere, honest.tree()), proof)
	wantError(t, err, nil, elsewhere)
}

func TestAuditorChecksInclusion(t *testing.T) {
	f := newAuditFixture(t)
	log := logOf(6, -1)
	checkpoint := f.sign(t, f.origin, log.tree())
	proof, err := tlog.ProveRecord(6, 3, log)
	if err != nil {
		t.Fatal(err)
	}
	entry := entryOf(3, "task")
	in := ledgerlog.Inclusion{Entry: entry, Index: 3, Checkpoint: checkpoint, Proof: proof, EventHash: ledgerlog.EventHashOf(entry)}
	if tree, err := f.auditor.CheckInclusion(in); err != nil || tree != log.tree() {
		t.Fatalf("leaf 3: %v, %v", tree, err)
	}
	noHash := in
	noHash.EventHash = ""
	if _, err := f.auditor.CheckInclusion(noHash); err != nil {
		t.Fatalf("leaf 3 without an eventHash to compare: %v", err)
	}

	const event3 = "event 0190f7b4-5d1e-7c3a-9a4e-000000000003"
	for name, c := range map[string]struct {
		change func(*ledgerlog.Inclusion)
		says   []string
	}{
		"the receipt's eventHash is another event's": {
			func(in *ledgerlog.Inclusion) { in.EventHash = ledgerlog.EventHashOf(entryOf(4, "task")) },
			[]string{"leaf 3", event3, "not the eventHash"}},
		"the entry rewritten": {
			func(in *ledgerlog.Inclusion) { in.Entry, in.EventHash = entryOf(3, "rewritten"), "" },
			[]string{"leaf 3", event3}},
		"another leaf": {
			func(in *ledgerlog.Inclusion) { in.Index = 2 },
			[]string{"leaf 2", event3}},
		"outside the tree": {
			func(in *ledgerlog.Inclusion) { in.Index = 6 },
			[]string{"leaf 6", "size 6", event3}},
		"not an event": {
			func(in *ledgerlog.Inclusion) { in.Entry, in.EventHash = []byte("not json"), "" },
			[]string{"leaf 3", "not an event header"}},
	} {
		t.Run(name, func(t *testing.T) {
			bad := in
			c.change(&bad)
			_, err := f.auditor.CheckInclusion(bad)
			wantError(t, err, ledgerlog.ErrNotIncluded, c.says...)
		})
	}

	// The proof of a tree of another size than the checkpoint's.
	smaller := logOf(5, -1)
	bad := in
	bad.Proof, err = tlog.ProveRecord(5, 3, smaller)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.auditor.CheckInclusion(bad)
	wantError(t, err, ledgerlog.ErrNotIncluded, "leaf 3", "size 6")

	bad = in
	bad.Checkpoint = newAuditFixture(t).sign(t, f.origin, log.tree())
	_, err = f.auditor.CheckInclusion(bad)
	wantError(t, err, nil, "not signed by")
}

func TestNewAuditorNeedsAKeyAndAnOrigin(t *testing.T) {
	f := newAuditFixture(t)
	if _, err := ledgerlog.NewAuditor(f.key.VerifierKey, ""); err == nil {
		t.Error("an auditor without an origin would take any workspace's checkpoint")
	}
	if _, err := ledgerlog.NewAuditor("PRIVATE+KEY+not+a+verifier", f.origin); err == nil {
		t.Error("an auditor took a malformed key")
	}
}
