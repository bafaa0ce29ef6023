package contextpack

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// sources makes a scope with n items in each section, with texts of every script the
// vocabularies split differently.
func sources(n int, seed uint64) accountable.ContextSources {
	r := rand.New(rand.NewPCG(seed, 1))
	words := []string{"ship", "the", "receipt", "résumé", "中文", "émoji 🚀", "line\u2028sep", "<|endoftext|>", "\"quoted\"", "tab\there", "42", "1e-7"}
	text := func(k int) string {
		var b strings.Builder
		for i := range k {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[r.IntN(len(words))])
		}
		return b.String()
	}
	id := func() string {
		return fmt.Sprintf("%08x-0000-4000-8000-%012x", r.Uint32(), r.Uint64()&0xffffffffffff)
	}
	at := accountable.Time{Time: time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)}
	desc := text(200)
	s := accountable.ContextSources{
		WorkspaceID: id(), AsOfGlobalSequence: 123456,
		Scope: accountable.ContextScope{Kind: accountable.ContextScopeTask,
			Initiative: &accountable.ContextInitiative{Ref: accountable.Ref("initiative", id()), Title: text(5), Summary: text(80), Status: "active"},
			Workstream: &accountable.ContextWorkstream{Ref: accountable.Ref("workstream", id()), Name: text(3), Goal: text(40), Domain: "engineering"},
			Task: &accountable.ContextTask{Ref: accountable.Ref("task", id()), Title: text(6), Description: &desc, Status: "todo",
				Priority: "high", AggregateVersion: 3}},
	}
	for i := range n {
		s.Pending = append(s.Pending, accountable.ContextDecision{Ref: accountable.Ref("decision", id()), Summary: text(8), Status: "pending", Provenance: "requested", Urgency: "high"})
		s.Decided = append(s.Decided, accountable.ContextDecision{Ref: accountable.Ref("decision", id()), Summary: text(8), Status: "approved", Provenance: "decided", Urgency: "low"})
		s.Handoffs = append(s.Handoffs, accountable.ContextHandoff{Ref: accountable.Ref("handoff", id()), Summary: text(6), Status: "open", Priority: "normal", From: "a", To: "b", DueAt: &at, SLABreached: i%3 == 0})
		s.Runs = append(s.Runs, accountable.ContextRun{Ref: accountable.Ref("run", id()), Summary: text(4), Status: "succeeded", CostCents: int64(i), WorkstreamID: id()})
		s.Events = append(s.Events, accountable.ContextEvent{Ref: accountable.Ref("ledger_event", id()), EventType: "task.created", AggregateType: "task",
			AggregateID: id(), AggregateVersion: int64(i + 1), RecordedAt: at, EventHash: fmt.Sprintf("sha256:%064x", i)})
		s.Artifacts = append(s.Artifacts, accountable.ContextArtifact{Ref: accountable.Ref("artifact", id()), Summary: text(3), ArtifactType: "document", Status: "draft", Version: 1})
		s.Receipts = append(s.Receipts, accountable.Ref("work_receipt", id()))
	}
	return s
}

func tokens(t *testing.T, name accountable.ContextTokenizer) *Tokens {
	t.Helper()
	tk, err := Tokenizer(name)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// The line-by-line count Build uses is the whole text's count, in both vocabularies.
func TestLineCountIsWholeCount(t *testing.T) {
	for _, name := range []accountable.ContextTokenizer{accountable.TokenizerO200k, accountable.TokenizerCl100k} {
		tk := tokens(t, name)
		for seed := range uint64(5) {
			p, err := Build(sources(20, seed), Options{Tokens: tk, Budget: 200000, Mode: accountable.ContextDeliveryFull})
			if err != nil {
				t.Fatal(err)
			}
			if whole := tk.Count(p.Text); whole != p.Tokens || *p.Delivery.Accounting.SerializedDataTokens != whole {
				t.Fatalf("%s seed %d: whole text %d tokens, lines %d, accounting %d", name, seed, whole, p.Tokens, *p.Delivery.Accounting.SerializedDataTokens)
			}
		}
	}
}

// The text is the JSON of {context_capsule, context_delivery}; its accounting is its own
// size and count; the version is its digest; the budget holds, trimming the lowest weight
// first and saying so.
func TestBuildFitsTheBudget(t *testing.T) {
	tk := tokens(t, accountable.TokenizerO200k)
	full, err := Build(sources(50, 7), Options{Tokens: tk, Budget: 200000, Mode: accountable.ContextDeliveryFull})
	if err != nil {
		t.Fatal(err)
	}
	// Below what the scope alone needs, the capsule is the scope, saying so.
	small, err := Build(sources(50, 7), Options{Tokens: tk, Budget: 256, Mode: accountable.ContextDeliveryFull})
	if err != nil || small.Tokens <= 256 || !strings.HasPrefix(small.Delivery.Reasons[0], "the scope alone is over the bounds") ||
		len(small.Capsule.Runs) != 0 {
		t.Fatalf("budget 256: %d tokens, reasons %q (%v)", small.Tokens, small.Delivery.Reasons, err)
	}
	for _, budget := range []int{2048, 4000, 8192} {
		p, err := Build(sources(50, 7), Options{Tokens: tk, Budget: budget, Mode: accountable.ContextDeliveryFull})
		if err != nil {
			t.Fatal(err)
		}
		if p.Tokens > budget || p.Tokens != tk.Count(p.Text) {
			t.Fatalf("budget %d: %d tokens (whole count %d)", budget, p.Tokens, tk.Count(p.Text))
		}
		var data struct {
			Capsule  accountable.ContextCapsule  `json:"context_capsule"`
			Delivery accountable.ContextDelivery `json:"context_delivery"`
		}
		if err := json.Unmarshal([]byte(p.Text), &data); err != nil {
			t.Fatal(err)
		}
		if data.Delivery.Accounting.SerializedDataBytes != len(p.Text) || p.Version != Version(p.Text) || data.Capsule.CapsuleID != p.Capsule.CapsuleID {
			t.Fatalf("budget %d: accounting %d bytes of %d, version %s", budget, data.Delivery.Accounting.SerializedDataBytes, len(p.Text), p.Version)
		}
		c := data.Capsule
		if c.OmittedCounts.ActiveConstraints > c.OmittedCounts.RecentReceiptRefs || data.Delivery.Completeness != "incomplete" ||
			c.SourceCompleteness.RecentReceiptRefs.Status != "partial" || len(data.Delivery.Reasons) == 0 {
			t.Fatalf("budget %d: omitted %+v, completeness %s, reasons %q", budget, c.OmittedCounts, data.Delivery.Completeness, data.Delivery.Reasons)
		}
		if p.Tokens < budget*6/10 {
			t.Fatalf("budget %d: only %d tokens used (of %d untrimmed)", budget, p.Tokens, full.Tokens)
		}
	}
	// The same sources make the same text: the capsule id and version name the content.
	again, err := Build(sources(50, 7), Options{Tokens: tk, Budget: 200000, Mode: accountable.ContextDeliveryFull})
	if err != nil || again.Text != full.Text || again.Capsule.CapsuleID != full.Capsule.CapsuleID {
		t.Fatalf("the same sources made another text (%v)", err)
	}
	if full.Delivery.Completeness != "unknown" || full.Capsule.SourceCompleteness.Runs.Status != "complete" {
		t.Fatalf("untrimmed: %+v", full.Delivery)
	}
}

// A prepared capsule is kept under its byte bound.
func TestBuildKeepsTheByteBound(t *testing.T) {
	tk := tokens(t, accountable.TokenizerCl100k)
	p, err := Build(sources(50, 3), Options{Tokens: tk, Budget: 200000, ByteBound: 16 << 10, Mode: accountable.ContextDeliveryFull})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Text) > 16<<10 || !p.Delivery.MeetsPreparedByteBound {
		t.Fatalf("%d bytes, meets %v", len(p.Text), p.Delivery.MeetsPreparedByteBound)
	}
}

// Delta and Apply round-trip for random line edits of random texts, including texts
// without a final newline, empty ones and repeated lines.
func TestDeltaRoundTrips(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 42))
	line := func() string {
		return []string{"{\n", "}\n", " \"a\": 1,\n", " \"b\": \"中文\",\n", "x\n", "\n", "tail"}[r.IntN(7)]
	}
	for i := range 2000 {
		var base []string
		for range r.IntN(40) {
			base = append(base, line())
		}
		next := append([]string{}, base...)
		for range r.IntN(6) {
			switch k := r.IntN(3); {
			case k == 0 || len(next) == 0:
				at := r.IntN(len(next) + 1)
				next = append(next[:at], append([]string{line()}, next[at:]...)...)
			case k == 1:
				at := r.IntN(len(next))
				next = append(next[:at], next[at+1:]...)
			default:
				next[r.IntN(len(next))] = line()
			}
		}
		b, n := strings.Join(base, ""), strings.Join(next, "")
		ops := Delta(b, n)
		got, err := Apply(b, ops)
		if err != nil || got != n {
			t.Fatalf("case %d: %v\nbase %q\nnext %q\ngot  %q\nops %s", i, err, b, n, got, mustJSON(ops))
		}
		for _, op := range ops {
			if op.Insert != nil && *op.Insert == "" {
				t.Fatalf("case %d: an empty insert", i)
			}
		}
	}
}

// Apply refuses what the clients refuse.
func TestApplyRefusesBadOperations(t *testing.T) {
	base := "a\nb\nc"
	s := "x"
	for name, ops := range map[string][]accountable.ContextOperation{
		"negative start": {{Copy: &[2]int64{-1, 1}}},
		"zero count":     {{Copy: &[2]int64{0, 0}}},
		"past the end":   {{Copy: &[2]int64{2, 2}}},
		"both":           {{Copy: &[2]int64{0, 1}, Insert: &s}},
		"neither":        {{}},
	} {
		if _, err := Apply(base, ops); err == nil {
			t.Errorf("%s: applied", name)
		}
	}
	if got, err := Apply(base, []accountable.ContextOperation{{Copy: &[2]int64{1, 2}}, {Insert: &s}}); err != nil || got != "b\ncx" {
		t.Fatalf("%q %v", got, err)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// The text Build puts together from its two members is the one Serialize makes of them.
func TestTextIsTheSerializedData(t *testing.T) {
	tk := tokens(t, accountable.TokenizerO200k)
	for _, budget := range []int{2048, 200000} {
		p, err := Build(sources(30, 11), Options{Tokens: tk, Budget: budget, Mode: accountable.ContextDeliveryDelta, BaseVerified: true})
		if err != nil {
			t.Fatal(err)
		}
		want, err := Serialize(serializedData{ContextCapsule: &p.Capsule, ContextDelivery: &p.Delivery})
		if err != nil || want != p.Text {
			t.Fatalf("budget %d: the text is not the serialized data (%v)\n%s\n%s", budget, err, p.Text, want)
		}
	}
}

// A build's digests are the digests of what it built, whichever texts the pooled space
// remembers: the same scope again, one changed within the same lengths (a summary's
// letter), and others in between.
func TestDigestsAreTheTexts(t *testing.T) {
	tk := tokens(t, accountable.TokenizerO200k)
	check := func(step string, p Pack) {
		t.Helper()
		if p.Version != canonical.Digest([]byte(p.Text)) {
			t.Fatalf("%s: version %s is not the text's", step, p.Version)
		}
		c := p.Capsule
		c.CapsuleID, c.ContentDigest = "", ""
		want, err := canonical.DigestOf(c)
		if err != nil {
			t.Fatal(err)
		}
		if p.Capsule.ContentDigest != want || p.Capsule.CapsuleID != "cap_"+want[len("sha256:"):len("sha256:")+32] {
			t.Fatalf("%s: content digest %s and capsule id %s, want %s", step, p.Capsule.ContentDigest, p.Capsule.CapsuleID, want)
		}
	}
	build := func(src accountable.ContextSources, budget int) Pack {
		p, err := Build(src, Options{Tokens: tk, Budget: budget, Mode: accountable.ContextDeliveryFull})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	versions := map[string]bool{}
	for i := range 12 {
		budget := []int{2048, 8192, 200000}[i%3]
		var texts [2]string // of the sources as made, and changed
		for step := range 4 {
			src := sources(30, 11)
			if step%2 == 1 { // a letter of the scope and of the first items: the same lengths, another text
				src.Scope.Initiative.Status = "Active"
				src.Pending[0].Summary = strings.Replace(src.Pending[0].Summary, "e", "E", 1)
				src.Handoffs[0].Summary = strings.Replace(src.Handoffs[0].Summary, "e", "E", 1)
				src.Decided[0].Summary = strings.Replace(src.Decided[0].Summary, "e", "E", 1)
			}
			p := build(src, budget)
			check(fmt.Sprintf("budget %d step %d", budget, step), p)
			if texts[step%2] == "" {
				texts[step%2] = p.Text
			} else if p.Text != texts[step%2] {
				t.Fatalf("budget %d step %d: another text of the same sources", budget, step)
			}
			versions[p.Version] = true
		}
	}
	if len(versions) != 6 {
		t.Fatalf("%d versions, not two for each budget", len(versions))
	}
}

// Builds that share items through the pooled space's texts (itemText) still make each
// capsule's own text: random items, strings that escape and invalid UTF-8 among them
// ("\xff" and "\xfe" have the same JSON), built in turn with items recurring, each text
// compared with what Serialize makes of its capsule and delivery.
func TestBuildsSharingItemTexts(t *testing.T) {
	tk := tokens(t, accountable.TokenizerO200k)
	r := rand.New(rand.NewPCG(30, 3))
	base := sources(24, 12)
	summaries := []string{"\xff bad", "\xfe bad", "<b>&amp;</b>", "line\u2028sep", "a \"quoted\" word", "back\\slash", "plain", "中文 🚀"}
	for round := range 60 {
		src := base
		src.Pending = append([]accountable.ContextDecision(nil), base.Pending...)
		src.Handoffs = append([]accountable.ContextHandoff(nil), base.Handoffs...)
		src.Artifacts = append([]accountable.ContextArtifact(nil), base.Artifacts...)
		for range 6 { // some items changed, most as before
			src.Pending[r.IntN(len(src.Pending))].Summary = summaries[r.IntN(len(summaries))] + randomText(r)
			src.Handoffs[r.IntN(len(src.Handoffs))].Summary = summaries[r.IntN(len(summaries))]
			src.Artifacts[r.IntN(len(src.Artifacts))].Summary = summaries[r.IntN(len(summaries))]
		}
		budget := []int{1024, 4096, 200000}[round%3]
		p, err := Build(src, Options{Tokens: tk, Budget: budget, Mode: accountable.ContextDeliveryFull})
		if err != nil {
			t.Fatal(err)
		}
		want, err := Serialize(serializedData{ContextCapsule: &p.Capsule, ContextDelivery: &p.Delivery})
		if err != nil || want != p.Text {
			t.Fatalf("round %d: the text is not the serialized data (%v)\n%s\n%s", round, err, p.Text, want)
		}
	}
}
