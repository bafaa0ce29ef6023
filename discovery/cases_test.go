package discovery_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/discovery"
)

func TestTitleIdentifier(t *testing.T) {
	for _, c := range []struct {
		title string
		want  discovery.TitleID
		rest  string
	}{
		{"Draft post #12", discovery.TitleID{Key: "post 12", Label: "post #12", Bare: "#12", BareLabel: "#12"}, "Draft post"},
		{"Review post 12", discovery.TitleID{Key: "post 12", Label: "post 12"}, "Review post"},
		{"Publish post no. 012", discovery.TitleID{Key: "post 12", Label: "post 012"}, "Publish post"},
		{"Draft #12", discovery.TitleID{Key: "draft 12", Label: "draft #12", Bare: "#12", BareLabel: "#12"}, "Draft"},
		{"Post 12: review", discovery.TitleID{Key: "post 12", Label: "post 12"}, "Post review"},
		{"Fix ABC-123", discovery.TitleID{Key: "ABC-123", Label: "ABC-123"}, "Fix"},
		{"[OPS-7] Deploy the fix for #3", discovery.TitleID{Key: "OPS-7", Label: "OPS-7"}, "Deploy the fix"},
		{`Write "Onboarding guide"`, discovery.TitleID{Key: `"onboarding guide"`, Label: `"Onboarding guide"`}, "Write"},
		// A number after a word is taken out of the kind of work even when it is not the
		// identifier (it varies from case to case).
		{`Review “Onboarding  Guide” for 2 readers`, discovery.TitleID{Key: `"onboarding guide"`, Label: `"Onboarding Guide"`}, "Review for readers"},
		// Two things, or nothing numbered: no identifier.
		{"Merge ABC-1 into ABC-2", discovery.TitleID{}, "Merge into"},
		{"Compare #4 with #5", discovery.TitleID{}, "Compare"},
		{"Upgrade to Go 1.25", discovery.TitleID{}, "Upgrade to Go 1.25"},
		{"12 things", discovery.TitleID{}, "12 things"},
		{"Weekly sync", discovery.TitleID{}, "Weekly sync"},
		{"covid-19 notes", discovery.TitleID{}, "covid-19 notes"},
	} {
		got, rest := discovery.TitleIdentifier(c.title)
		if got != c.want || rest != c.rest {
			t.Errorf("TitleIdentifier(%q) = %+v, %q; want %+v, %q", c.title, got, rest, c.want, c.rest)
		}
	}
}

// doneItem is a completed work item of a test: its title and facts.
type doneItem struct {
	title string
	facts accountable.WorkFacts
}

var (
	inferT0  = time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	inferSeq int64
)

// completed makes the completed work items of one case, an hour apart from at.
func completed(at time.Time, items ...doneItem) []accountable.CompletedWork {
	out := make([]accountable.CompletedWork, len(items))
	for i, it := range items {
		inferSeq++
		f := it.facts
		f.Title = it.title
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", inferSeq)
		out[i] = accountable.CompletedWork{TaskID: id, EventID: "e" + id, At: at.Add(time.Duration(i) * time.Hour), Seq: inferSeq * 2, WorkFacts: f}
	}
	return out
}

func titled(titles ...string) []doneItem {
	out := make([]doneItem, len(titles))
	for i, s := range titles {
		out[i] = doneItem{title: s}
	}
	return out
}

func cardStages(c accountable.ProcessCard) []string {
	var out []string
	for _, s := range c.Stages {
		out = append(out, s.Key)
	}
	return out
}

// mineOrdinary mines ordinary work alone and checks that the result does not depend on
// the order the items come in.
func mineOrdinary(t *testing.T, items []accountable.CompletedWork) ([]accountable.ProcessCard, int) {
	t.Helper()
	cards, cases := discovery.MineWork("run-1", nil, items)
	for range 5 {
		shuffled := slices.Clone(items)
		rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		again, n := discovery.MineWork("run-1", nil, shuffled)
		if !reflect.DeepEqual(again, cards) || n != cases {
			t.Fatalf("not deterministic:\n%+v\n%+v", again, cards)
		}
	}
	return cards, cases
}

func wantOne(t *testing.T, cards []accountable.ProcessCard, cases, wantCases int, stages []string, grouping ...accountable.CaseGrouping) {
	t.Helper()
	if cases != wantCases || len(cards) != 1 || !slices.Equal(cardStages(cards[0]), stages) || !reflect.DeepEqual(cards[0].Grouping, grouping) {
		t.Fatalf("%d cases, cards %+v; want %d cases, one card %v grouped %+v", cases, cards, wantCases, stages, grouping)
	}
}

// Titles with numbers: the interleaved work of three posts is three cases of one process;
// the kind of work is the title without its identifier; one-off work (a typo fix in one
// post, a weekly sync) is left out.
func TestInferCasesFromNumberedTitles(t *testing.T) {
	var items []accountable.CompletedWork
	for i, n := range []int{12, 13, 14} {
		items = append(items, completed(inferT0.Add(time.Duration(i)*time.Minute),
			titled(fmt.Sprintf("Draft post #%d", n), fmt.Sprintf("Review post #%d", n), fmt.Sprintf("Publish post #%d", n))...)...)
	}
	items = append(items, completed(inferT0.Add(30*time.Minute), titled("Fix typo in post #12", "Weekly sync", "Draft newsletter")...)...)
	cards, cases := mineOrdinary(t, items)
	wantOne(t, cards, cases, 3, []string{"draft_post", "review_post", "publish_post"},
		accountable.CaseGrouping{Rule: accountable.GroupTitleIdentifier, Cases: 3, Evidence: "shared identifier in titles: post #12, post #13, post #14"})
	if cards[0].Stages[0].Name != "Draft post" || cards[0].Support != 3 || len(cards[0].Citations) != 9 || cards[0].Citations[0].Kind != "ledger_event" {
		t.Fatalf("card %+v", cards[0])
	}
	// "Draft #12", "Review #12": the word before the number is the verb; the number alone
	// groups them.
	items = nil
	for i := range 2 {
		items = append(items, completed(inferT0.Add(time.Duration(i)*time.Minute), titled(fmt.Sprintf("Draft #%d", i+1), fmt.Sprintf("Review #%d", i+1))...)...)
	}
	cards, cases = mineOrdinary(t, items)
	wantOne(t, cards, cases, 2, []string{"draft", "review"},
		accountable.CaseGrouping{Rule: accountable.GroupTitleIdentifier, Cases: 2, Evidence: "shared identifier in titles: #1, #2"})
}

func TestInferCasesFromTicketKeysAndQuotedNames(t *testing.T) {
	var items []accountable.CompletedWork
	for i, k := range []string{"ABC-123", "ABC-124", "OPS-9"} {
		items = append(items, completed(inferT0.Add(time.Duration(i)*time.Minute), titled("Triage "+k, k+": fix", "Verify "+k+" in staging")...)...)
	}
	cards, cases := mineOrdinary(t, items)
	wantOne(t, cards, cases, 3, []string{"triage", "fix", "verify_in_staging"},
		accountable.CaseGrouping{Rule: accountable.GroupTitleIdentifier, Cases: 3, Evidence: "shared identifier in titles: ABC-123, ABC-124, OPS-9"})

	items = nil
	for i, name := range []string{"Onboarding guide", "Pricing page"} {
		items = append(items, completed(inferT0.Add(time.Duration(i)*time.Minute), titled(`Write "`+name+`"`, `Review "`+name+`"`, `Ship “`+name+`”`)...)...)
	}
	cards, cases = mineOrdinary(t, items)
	wantOne(t, cards, cases, 2, []string{"write", "review", "ship"},
		accountable.CaseGrouping{Rule: accountable.GroupTitleIdentifier, Cases: 2, Evidence: `shared identifier in titles: "Onboarding guide", "Pricing page"`})
}

// Work of one workstream is a case when nothing more specific links it.
func TestInferCasesFromMembership(t *testing.T) {
	var items []accountable.CompletedWork
	for i, ws := range []string{"Blog", "Docs"} {
		in := accountable.WorkFacts{InitiativeID: "i-1", InitiativeName: "Content", WorkstreamID: "w-" + ws, WorkstreamName: ws}
		var its []doneItem
		for j, title := range []string{"Write copy", "Review copy", "Publish"} {
			f := in
			f.MilestoneID, f.MilestoneName = fmt.Sprintf("m-%s-%d", ws, j), fmt.Sprintf("%s step %d", ws, j) // one item per milestone: not a case
			its = append(its, doneItem{title: title, facts: f})
		}
		items = append(items, completed(inferT0.Add(time.Duration(i)*time.Minute), its...)...)
	}
	cards, cases := mineOrdinary(t, items)
	wantOne(t, cards, cases, 2, []string{"write_copy", "review_copy", "publish"},
		accountable.CaseGrouping{Rule: accountable.GroupWorkstream, Cases: 2, Evidence: "same workstream: Blog, Docs"})
}

// Commands that share a correlation_id link their work (the creating command's, else the
// completing one's); so does a causation_id that names another item's task, event or
// command.
func TestInferCasesFromCorrelationAndCausation(t *testing.T) {
	var items []accountable.CompletedWork
	for i, order := range []string{"order-1", "order-2"} {
		c := completed(inferT0.Add(time.Duration(i)*time.Minute), titled("Pick items", "Pack box", "Ship")...)
		c[0].CreatedCorrelationID = order
		c[1].CreatedCorrelationID = order
		c[2].CorrelationID = order
		items = append(items, c...)
	}
	cards, cases := mineOrdinary(t, items)
	wantOne(t, cards, cases, 2, []string{"pick_items", "pack_box", "ship"},
		accountable.CaseGrouping{Rule: accountable.GroupCorrelationID, Cases: 2, Evidence: "same correlation_id: order-1, order-2"})

	items = nil
	for i := range 2 {
		c := completed(inferT0.Add(time.Duration(i)*time.Minute), titled(fmt.Sprintf("Interview candidate #%d", i+1), "Decide", "Send offer")...)
		c[0].CommandID = fmt.Sprintf("cmd-%d", i)
		c[1].CreatedCausationID = c[0].CommandID // created because the interview was completed
		c[2].CausationID = c[1].TaskID           // completed citing the decision
		items = append(items, c...)
	}
	cards, cases = mineOrdinary(t, items)
	wantOne(t, cards, cases, 2, []string{"interview_candidate", "decide", "send_offer"},
		accountable.CaseGrouping{Rule: accountable.GroupCausationID, Cases: 2,
			Evidence: "each work item caused by another's commands (causation_id), chains from: Interview candidate #1, Interview candidate #2"})
}

func TestInferCasesFromMetadataIdentifiers(t *testing.T) {
	var items []accountable.CompletedWork
	for i, post := range []string{"12", "13"} {
		var its []doneItem
		for _, title := range []string{"Draft", "Review", "Publish"} {
			its = append(its, doneItem{title: title, facts: accountable.WorkFacts{Metadata: map[string]string{"post_id": post, "agent_id": "writer-bot"}}})
		}
		items = append(items, completed(inferT0.Add(time.Duration(i)*time.Minute), its...)...)
	}
	cards, cases := mineOrdinary(t, items)
	wantOne(t, cards, cases, 2, []string{"draft", "review", "publish"},
		accountable.CaseGrouping{Rule: accountable.GroupMetadataIdentifier, Cases: 2, Evidence: "shared identifier in metadata: post_id=12, post_id=13"})
	// Who did the work is not a case.
	for i := range items {
		items[i].Metadata = map[string]string{"agent_id": "writer-bot", "assigneeId": "ann"}
	}
	if cards, cases := mineOrdinary(t, items); len(cards) != 0 || cases != 0 {
		t.Fatalf("grouped by the agent: %d cases, %+v", cases, cards)
	}
	for k, want := range map[string]bool{"post_id": true, "ticketKey": true, "order-number": true, "slug": true, "id": true,
		"agent_id": false, "userId": false, "project_id": false, "run_id": false, "case_id": false, "title": false, "postid": false} {
		if got := discovery.MetadataIdentifierKey(k); got != want {
			t.Errorf("MetadataIdentifierKey(%q) = %v", k, got)
		}
	}
}

// What is not a process: unrelated one-off work, a single case, the same kinds of work in
// different orders, a batch that spans several posts.
func TestInferCasesIsConservative(t *testing.T) {
	oneOff := completed(inferT0, titled("Renew domain", "Draft post #3", "Call supplier 7", "Review ABC-9", `Read "Dune"`)...)
	if cards, cases := mineOrdinary(t, oneOff); len(cards) != 0 || cases != 0 {
		t.Fatalf("one-off work: %d cases, %+v", cases, cards)
	}
	single := completed(inferT0, titled("Draft post #12", "Review post #12", "Publish post #12")...)
	if cards, cases := mineOrdinary(t, single); len(cards) != 0 || cases != 0 {
		t.Fatalf("a single case: %d cases, %+v", cases, cards)
	}
	orders := append(completed(inferT0, titled("Draft post #1", "Review post #1")...), completed(inferT0, titled("Review post #2", "Draft post #2")...)...)
	if cards, cases := mineOrdinary(t, orders); len(cards) != 0 || cases != 2 {
		t.Fatalf("different orders: %d cases, %+v", cases, cards)
	}
	// One correlation_id over the work of two posts is a batch, not a case: the titles
	// group it instead.
	var batch []accountable.CompletedWork
	for i, n := range []int{1, 2, 3, 4} {
		c := completed(inferT0.Add(time.Duration(i)*time.Minute), titled(fmt.Sprintf("Draft post #%d", n), fmt.Sprintf("Publish post #%d", n))...)
		for j := range c {
			c[j].CreatedCorrelationID = fmt.Sprintf("batch-%d", i/2)
		}
		batch = append(batch, c...)
	}
	cards, cases := mineOrdinary(t, batch)
	wantOne(t, cards, cases, 4, []string{"draft_post", "publish_post"},
		accountable.CaseGrouping{Rule: accountable.GroupTitleIdentifier, Cases: 4, Evidence: "shared identifier in titles: post #1, post #2, post #3, post #4"})
}

// Explicit metadata is the strongest signal: an item naming case_id and process_stage is
// never regrouped; one naming case_id alone stays in that case, its stage the kind of work.
// The candidates the explicit rules find keep their ids.
func TestInferCasesKeepsExplicitMetadata(t *testing.T) {
	var explicit []accountable.TraceEvent
	var items []accountable.CompletedWork
	for i, n := range []int{1, 2} {
		c := completed(inferT0.Add(time.Duration(i)*time.Minute), titled(fmt.Sprintf("Draft post #%d", n), fmt.Sprintf("Review post #%d", n), fmt.Sprintf("Publish post #%d", n))...)
		c[1].CaseID, c[1].Stage = fmt.Sprintf("order-%d", n), "pack" // explicit: never in post n's case
		c[2].CaseID = fmt.Sprintf("order-%d", n)                     // case_id alone: order n's case, stage publish_post
		items = append(items, c...)
		explicit = append(explicit, trace(fmt.Sprintf("order-%d", n), inferT0.Add(time.Duration(i)*time.Minute-time.Hour), "pick")...)
	}
	for _, e := range discovery.InferCases(items) {
		if e.Stage == "pack" || e.CaseID != "order-1" && e.CaseID != "order-2" && e.Stage == "publish_post" {
			t.Fatalf("explicit metadata regrouped: %+v", e)
		}
	}
	for i := range explicit {
		explicit[i].Basis = accountable.CaseBasis{Rule: accountable.GroupCaseMetadata, Label: explicit[i].CaseID}
	}
	// The explicit items' events come from TraceEventsOf, not from inference: here, by hand.
	for _, it := range items {
		if it.Explicit() {
			explicit = append(explicit, accountable.TraceEvent{CaseID: it.CaseID, Stage: it.Stage, At: it.At, Seq: it.Seq,
				Basis: accountable.CaseBasis{Rule: accountable.GroupCaseMetadata, Label: it.CaseID}})
		}
	}
	old, _ := discovery.Mine("run-1", explicit)
	cards, cases := discovery.MineWork("run-1", explicit, items)
	if len(old) != 1 || !slices.Equal(cardStages(old[0]), []string{"pick", "pack"}) || cases != 2 || len(cards) != 1 ||
		!slices.Equal(cardStages(cards[0]), []string{"pick", "pack", "publish_post"}) {
		t.Fatalf("old %+v\nnew %d cases %+v", old, cases, cards)
	}
	// Explaining the grouping changes no id: the same events without their bases give the
	// same candidate ids.
	bare := slices.Clone(explicit)
	for i := range bare {
		bare[i].Basis = accountable.CaseBasis{}
	}
	plain, _ := discovery.Mine("run-1", bare)
	if plain[0].ID != old[0].ID || len(plain[0].Grouping) != 0 || !reflect.DeepEqual(old[0].Grouping,
		[]accountable.CaseGrouping{{Rule: accountable.GroupCaseMetadata, Cases: 2, Evidence: "metadata case_id: order-1, order-2"}}) {
		t.Fatalf("plain %+v, old %+v", plain, old)
	}
}

// The ledger side: a completion whose work item names case_id and process_stage is mined
// as it says; any other goes to inference with its completing command's ids.
func TestTraceEventsOfSplitsExplicitFromOrdinaryWork(t *testing.T) {
	corr := "corr-1"
	completion := func(id, task string, payload string, corr *string) accountable.Event {
		return accountable.Event{EventHeader: accountable.EventHeader{ID: id, AggregateType: accountable.AggregateTask, AggregateID: task,
			EventType: accountable.EventWorkCompleted, OccurredAt: accountable.TimeOf(inferT0), CorrelationID: corr}, Payload: accountable.Object(payload)}
	}
	events := []accountable.Event{
		completion("ev-1", "task-1", `{"command_id":"cmd-1"}`, nil),
		completion("ev-2", "task-2", `{"command_id":"cmd-2"}`, &corr),
		completion("ev-3", "task-3", `{}`, nil), // no such work item any more
	}
	work := map[string]accountable.WorkFacts{
		"task-1": {Title: "Draft post #1", CaseID: "order-1", Stage: "pack"},
		"task-2": {Title: "Draft post #2", CaseID: "order-2"},
	}
	traced, ordinary := discovery.TraceEventsOf(events, work, 10, func(accountable.SourceKind) bool { return true })
	if len(traced) != 1 || traced[0].CaseID != "order-1" || traced[0].Stage != "pack" || traced[0].Citation.EventID != "ev-1" ||
		traced[0].Basis != (accountable.CaseBasis{Rule: accountable.GroupCaseMetadata, Label: "order-1"}) {
		t.Fatalf("traced %+v", traced)
	}
	if len(ordinary) != 1 || ordinary[0].TaskID != "task-2" || ordinary[0].EventID != "ev-2" || ordinary[0].CommandID != "cmd-2" ||
		ordinary[0].CorrelationID != "corr-1" || ordinary[0].CaseID != "order-2" || ordinary[0].Seq != 22 {
		t.Fatalf("ordinary %+v", ordinary)
	}
	if traced, ordinary := discovery.TraceEventsOf(events, work, 10, func(k accountable.SourceKind) bool { return k != accountable.SourceWork }); len(traced)+len(ordinary) != 0 {
		t.Fatalf("work not mined, yet %+v %+v", traced, ordinary)
	}
}

// Inference over 100,000 completed work items (a third of them each stage of a post):
// one pass per rule, so its cost grows with the items, not their pairs.
func BenchmarkInferCases(b *testing.B) {
	var items []accountable.CompletedWork
	for n := 0; len(items) < 100000; n++ {
		items = append(items, completed(inferT0.Add(time.Duration(n)*time.Minute),
			titled(fmt.Sprintf("Draft post #%d", n), fmt.Sprintf("Review post #%d", n), fmt.Sprintf("Publish post #%d", n))...)...)
	}
	b.ResetTimer()
	for range b.N {
		discovery.MineWork("run", nil, items)
	}
}
