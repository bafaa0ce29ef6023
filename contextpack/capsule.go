package contextpack

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// Options say how a capsule is delivered and bounded.
type Options struct {
	Tokens *Tokens
	// Budget is the most tokens the text may have, delivery metadata included.
	Budget int
	// ByteBound, when above 0, is the most bytes the text may have (the prepared profile).
	ByteBound int
	Mode      accountable.ContextDeliveryMode
	// BaseVerified and Rebootstrap say what became of the base the client acknowledged;
	// Reasons say why (each is one of the delivery's reasons).
	BaseVerified, Rebootstrap bool
	Reasons                   []string
	// AcknowledgedCapsuleID is the legacy acknowledgement, answered in full: a reason says
	// whether it names the capsule built.
	AcknowledgedCapsuleID *string
}

// Pack is a built capsule: its content, its delivery and the text that carries both.
type Pack struct {
	Capsule  accountable.ContextCapsule
	Delivery accountable.ContextDelivery
	Text     string
	Version  string
	Tokens   int
}

// serializedData is what the text holds: the object a client rebuilds and parses.
type serializedData struct {
	ContextCapsule  *accountable.ContextCapsule  `json:"context_capsule"`
	ContextDelivery *accountable.ContextDelivery `json:"context_delivery"`
}

// section is one ranked list of a capsule, trimmed from its end.
type section struct {
	name   string
	weight int // how much of the budget it keeps against the others: more is kept longer
	// omitted and status are its members of the capsule's omitted_counts and
	// source_completeness.
	omitted *int
	status  *accountable.ContextSourceStatus
	texts   []string // each item's lines as the text has them, made once (text)
	sizes   []int    // their lengths, when only those were needed (size)
	// indentation is what indenting adds to an item's JSON, the same for each item of a
	// section: an item's members and their nesting are its type's whatever its values (no
	// slice, map or omitted member; a pointer is null or a string), and indenting adds
	// bytes only around members and brackets (TestSectionText checks the sizes).
	indentation int
	shaped      bool // indentation is known
	read        int  // items read
	more        bool
	len         func() int
	keep        func(n int)
	// appendItem appends item i as json.Marshal writes it.
	appendItem func(buf []byte, i int) []byte
	scratch    *[]byte // the sections' buffer for an item's JSON
	// items, when not nil, keeps what builds made of items by their JSON (the pooled
	// space's), and known has each item's (found by size); held counts the keys and texts.
	items map[string]*itemText
	known []*itemText
	held  *int
}

// itemText is what builds made of an item, kept by its JSON (json.Marshal's, which size
// makes of every item read): its share of the text (section.text) and its indented
// canonical text in a capsule's list (canonWriter.item). Both are functions of that JSON:
// it has the item's members and values, its strings with each invalid UTF-8 byte made
// U+FFFD as canonical JSON makes them, and the indentation is that of every capsule's lists.
// A scope's capsules repeat most of their items from one request to the next.
type itemText struct {
	text, canon string
}

// knownItem is item i's itemText, found or made by its JSON.
func (s *section) knownItem(i int, json []byte) {
	if s.items == nil {
		return
	}
	if s.known == nil {
		s.known = make([]*itemText, s.read)
	}
	t, ok := s.items[string(json)] // a lookup: no copy of the JSON
	if !ok {
		t = &itemText{}
		s.items[string(json)] = t
		*s.held += len(json)
	}
	s.known[i] = t
}

// text is item i's share of the text: its lines, indented as they are there (plus the
// separators around it, which its size counts). It is json.MarshalIndent's text of the
// item, as it always was (its size and tokens decide which items are left out, so the
// same sources keep making the same capsule), written by the items' own encoders and
// indentJSON (TestSectionText checks it).
func (s *section) text(i int) string {
	if s.texts == nil {
		s.texts = make([]string, s.read)
	}
	if s.texts[i] == "" && s.known != nil && s.known[i] != nil && s.known[i].text != "" {
		s.texts[i] = s.known[i].text
	}
	if s.texts[i] == "" {
		buf := s.appendItem((*s.scratch)[:0], i)
		n := len(buf)
		buf = indentJSON(buf, buf[:n], "   ", " ") // the indented text after the JSON
		*s.scratch = buf[:0]
		s.texts[i] = string(buf[n:])
		if s.known != nil && s.known[i] != nil {
			s.known[i].text = s.texts[i]
			*s.held += len(s.texts[i])
		}
	}
	return s.texts[i]
}

// size is len(s.text(i)), without making the text: the items that surely do not fit
// are left out by their sizes alone.
func (s *section) size(i int) int {
	if s.texts != nil && s.texts[i] != "" {
		return len(s.texts[i])
	}
	if s.sizes == nil {
		s.sizes = make([]int, s.read)
	}
	if s.sizes[i] == 0 {
		buf := s.appendItem((*s.scratch)[:0], i)
		*s.scratch = buf[:0]
		if !s.shaped {
			s.indentation, s.shaped = indentedLen(buf, len("   "), len(" "))-len(buf), true
		}
		s.sizes[i] = len(buf) + s.indentation
		s.knownItem(i, buf)
	}
	return s.sizes[i]
}

func sectionOf[T interface{ AppendJSON([]byte) []byte }](name string, weight int, items *[]T, more int, omitted *int, status *accountable.ContextSourceStatus) *section {
	if *items == nil {
		*items = []T{}
	}
	return &section{name: name, weight: weight, read: len(*items), more: more > 0, omitted: omitted, status: status,
		len:        func() int { return len(*items) },
		keep:       func(n int) { *items = (*items)[:n] },
		appendItem: func(buf []byte, i int) []byte { return (*items)[i].AppendJSON(buf) }}
}

// scopeTextLimits are the lengths, in characters, the scope's long texts (a task's
// description, an initiative's summary, a workstream's goal) are cut to, in turn, when the
// sections are empty and the text is still over the budget.
var scopeTextLimits = []int{2000, 500, 120}

// Build makes the capsule of src, trimmed to o's bounds: while the text is over them, the
// last item of the section with the most items for its weight is left out (pending
// decisions weigh most, then open handoffs, decided decisions and events, runs and
// artifacts, receipts least), then the scope's long texts are cut.
func Build(src accountable.ContextSources, o Options) (Pack, error) {
	if o.Tokens == nil {
		return Pack{}, errors.New("contextpack: no tokenizer")
	}
	c := accountable.ContextCapsule{
		SchemaVersion:          accountable.ContextCapsuleSchema,
		WorkspaceID:            src.WorkspaceID,
		AsOfGlobalSequence:     src.AsOfGlobalSequence,
		ProjectionConsistency:  "database_snapshot",
		Scope:                  src.Scope,
		CurrentIntent:          intentOf(src.Scope),
		ActiveConstraints:      src.Pending,
		AuthoritativeDecisions: src.Decided,
		OpenRisks:              src.Handoffs,
		Runs:                   src.Runs,
		RecentEvents:           src.Events,
		Artifacts:              src.Artifacts,
		RecentReceiptRefs:      src.Receipts,
	}
	m, om, sc := src.MoreOfEach, &c.OmittedCounts, &c.SourceCompleteness
	space := spaces.Get().(*space)
	defer space.release()
	if space.tokens != o.Tokens { // the counts it holds are another vocabulary's
		clear(space.lines)
		clear(space.parts)
		space.tokens, space.held = o.Tokens, 0
	}
	b := &builder{o: o, c: &c, space: space, count: &lineCounter{tokens: o.Tokens, seen: space.lines, held: &space.held}, parts: space.parts, buf: space.text, scratch: space.item, sections: []*section{
		sectionOf("active_constraints", 8, &c.ActiveConstraints, m.ActiveConstraints, &om.ActiveConstraints, &sc.ActiveConstraints),
		sectionOf("open_risks", 6, &c.OpenRisks, m.OpenRisks, &om.OpenRisks, &sc.OpenRisks),
		sectionOf("authoritative_decisions", 4, &c.AuthoritativeDecisions, m.AuthoritativeDecisions, &om.AuthoritativeDecisions, &sc.AuthoritativeDecisions),
		sectionOf("recent_events", 4, &c.RecentEvents, m.RecentEvents, &om.RecentEvents, &sc.RecentEvents),
		sectionOf("runs", 3, &c.Runs, m.Runs, &om.Runs, &sc.Runs),
		sectionOf("artifacts", 3, &c.Artifacts, m.Artifacts, &om.Artifacts, &sc.Artifacts),
		sectionOf("recent_receipt_refs", 2, &c.RecentReceiptRefs, m.RecentReceiptRefs, &om.RecentReceiptRefs, &sc.RecentReceiptRefs),
	}}
	for _, s := range b.sections {
		s.scratch = &b.scratch
		s.items, s.held = space.items, &space.itemsHeld
	}
	b.reasons = append(append([]string{}, src.Reasons...), o.Reasons...)
	defer func() { space.text, space.item = b.buf, b.scratch }()
	return b.fit()
}

// space is what a build writes into and what it counted: its text's buffer, an item's,
// and the token counts of the lines and parts it saw. Builds reuse them (a capsule's text
// is tens of KB, grown anew each time otherwise), and with them the counts: a scope's
// capsules repeat most of their lines and parts from one request to the next, and a
// count found here costs one map read where the shared cache (Tokens.lines) takes a lock.
type space struct {
	text, item []byte
	tokens     *Tokens // whose counts lines and parts hold
	lines      map[string]int
	parts      map[string]int // of the parts of texts countPart counts
	held       int            // the bytes of the keys of lines and parts
	itemsHeld  int            // the bytes of items' keys and texts (bounded apart: the counts are kept longer)
	digests    [4]digested    // the last texts digested, and their digests
	nextDigest int            // the slot of digests written next
	items      map[string]*itemText
}

// digested is a text hashed (or the indented capsule whose canonical form was) and its
// digest. A capsule's text is hashed three times a build (its capsule's canonical form
// after each of two renders, then the text itself), each tens of KB: a scope asked for
// again unchanged, as an agent's turns ask, gives the same bytes, and comparing them is a
// fraction of making the canonical form and hashing it.
type digested struct {
	of     []byte
	digest string
}

// maxDigested is the longest text whose digest is kept (a large budget's are made anew).
const maxDigested = 256 << 10

// digest is compute(of), remembered: the digest kept for the same bytes, or compute's,
// kept. compute must be a function of of's bytes alone.
func (s *space) digest(of []byte, compute func([]byte) string) string {
	for i := range s.digests {
		if d := &s.digests[i]; len(d.of) == len(of) && d.digest != "" && bytes.Equal(d.of, of) {
			return d.digest
		}
	}
	digest := compute(of)
	if len(of) <= maxDigested {
		d := &s.digests[s.nextDigest]
		d.of, d.digest = append(d.of[:0], of...), digest
		s.nextDigest = (s.nextDigest + 1) % len(s.digests)
	}
	return digest
}

var spaces = sync.Pool{New: func() any {
	return &space{lines: make(map[string]int, 1024), parts: make(map[string]int, 256), items: make(map[string]*itemText, 256)}
}}

// maxSpace is the most bytes a space's buffers keep between builds (a capsule of a large
// budget's are left to the collector), and the most its counts hold in keys.
const maxSpace = 1 << 20

func (s *space) release() {
	if cap(s.text) > maxSpace || cap(s.item) > maxSpace {
		return
	}
	if s.held > maxSpace {
		clear(s.lines)
		clear(s.parts)
		s.held = 0
	}
	if s.itemsHeld > maxSpace {
		clear(s.items)
		s.itemsHeld = 0
	}
	s.text, s.item = s.text[:0], s.item[:0]
	spaces.Put(s)
}

type builder struct {
	o        Options
	space    *space
	known    map[string][]*itemText // the sections' items' texts, by section
	c        *accountable.ContextCapsule
	count    *lineCounter
	sections []*section
	reasons  []string
	cut      int // how many of scopeTextLimits were applied
	d        accountable.ContextDelivery
	tokens   int
	buf      []byte         // the text being written, kept from one render to the next
	scratch  []byte         // an item's JSON, its indented text, the capsule's canonical JSON
	parts    map[string]int // the counts of parts of texts (space.parts)
	spans    []itemSpan     // where the items are in the text
}

// bytesPerToken is what a first trim assumes of the text (JSON of English is 3 to 4 bytes
// a token): the items read beyond what the budget can hold are left out before any is
// counted, so a scope with much more than its budget is not tokenized whole.
const bytesPerToken = 3

func (b *builder) fit() (Pack, error) {
	b.presize()
	b.known = make(map[string][]*itemText, len(b.sections))
	for _, s := range b.sections {
		b.known[s.name] = s.known // a section's name is its list's member name
	}
	for {
		text, err := b.render()
		if err != nil {
			return Pack{}, err
		}
		overTokens := b.tokens - b.o.Budget
		overBytes := 0
		if b.o.ByteBound > 0 {
			overBytes = len(text) - b.o.ByteBound
		}
		if overTokens <= 0 && overBytes <= 0 {
			return b.pack(text), nil
		}
		if b.drop(overTokens, overBytes) {
			continue
		}
		if b.cut < len(scopeTextLimits) {
			cutScope(&b.c.Scope, scopeTextLimits[b.cut])
			b.c.CurrentIntent = intentOf(b.c.Scope)
			b.cut++
			continue
		}
		// The scope alone is over the bounds: it is answered as it is, saying so.
		b.reasons = append(b.reasons, fmt.Sprintf("the scope alone is over the bounds: %d tokens of %d", b.tokens, b.o.Budget))
		text, err = b.render()
		if err != nil {
			return Pack{}, err
		}
		return b.pack(text), nil
	}
}

// pack is the capsule built, with text (the builder's buffer) as its text.
func (b *builder) pack(text []byte) Pack {
	return Pack{Capsule: *b.c, Delivery: b.d, Text: string(text), Version: b.space.digest(text, canonical.Digest), Tokens: b.tokens}
}

// presize leaves out, by the byte size of their lines, the items that surely do not fit.
func (b *builder) presize() {
	limit := b.o.Budget * bytesPerToken
	if b.o.ByteBound > 0 && b.o.ByteBound < limit {
		limit = b.o.ByteBound
	}
	size := 0
	for _, s := range b.sections {
		for j := range s.len() {
			size += s.size(j) + 4
		}
	}
	for size > limit {
		i := b.heaviest()
		if i < 0 {
			return
		}
		s := b.sections[i]
		size -= s.size(s.len()-1) + 4
		s.keep(s.len() - 1)
	}
}

// heaviest is the index of the section with the most items for its weight, -1 when all
// are empty.
func (b *builder) heaviest() int {
	best := -1
	for i, t := range b.sections {
		if t.len() > 0 && (best < 0 || t.len()*b.sections[best].weight > b.sections[best].len()*t.weight) {
			best = i
		}
	}
	return best
}

// drop leaves out items, the last of the section with the most items for its weight
// first, until what they weigh covers the excess; false when no section has any left.
func (b *builder) drop(overTokens, overBytes int) bool {
	dropped := false
	for overTokens > 0 || overBytes > 0 {
		i := b.heaviest()
		if i < 0 {
			return dropped
		}
		s := b.sections[i]
		text := s.text(s.len() - 1)
		overTokens -= b.countItem(text) + 1
		overBytes -= len(text) + 4
		s.keep(s.len() - 1)
		dropped = true
	}
	return dropped
}

// render writes the capsule's counts, digest and delivery, and returns the text. The
// delivery's accounting counts the text it is part of, so the text is made again until
// the numbers it holds are its own (a number's digits change its size: twice or three
// times).
func (b *builder) render() ([]byte, error) {
	c := b.c
	partial := b.cut > 0
	reasons := append([]string{}, b.reasons...)
	if b.cut > 0 {
		reasons = append(reasons, fmt.Sprintf("the scope's long texts are cut to %d characters to fit", scopeTextLimits[b.cut-1]))
	}
	for _, s := range b.sections {
		left := s.read - s.len()
		status := accountable.ContextSourceStatus{Status: "complete", Returned: s.len()}
		if left > 0 || s.more {
			status.Status = "partial"
			partial = true
		}
		if s.more {
			reasons = append(reasons, fmt.Sprintf("%s: more than %d in scope; the first %d by rank were read", s.name, s.read, s.read))
		}
		if left > 0 {
			reasons = append(reasons, fmt.Sprintf("%s: %d of %d left out to fit the budget", s.name, left, s.read))
		}
		*s.omitted, *s.status = left, status
	}
	// The capsule is written once, indented as the text has it, without its id and digest:
	// the digest is of its canonical JSON (the text without its indentation), and the two
	// are then put in their places.
	c.CapsuleID, c.ContentDigest = "", ""
	w := canonWriter{buf: append(b.buf[:0], "{\n \"context_capsule\": "...), indent: true, depth: 1, spans: b.spans[:0],
		known: b.known, held: &b.space.itemsHeld}
	if w.spans == nil {
		w.spans = make([]itemSpan, 0, 128)
	}
	w.capsule(c)
	// The digest is of the capsule's canonical form, a function of its indented text.
	digest := b.space.digest(w.buf[len("{\n \"context_capsule\": "):], func(indented []byte) string {
		b.scratch = dedent(b.scratch[:0], indented)
		return canonical.Digest(b.scratch)
	})
	c.ContentDigest = digest
	c.CapsuleID = "cap_" + digest[len("sha256:"):len("sha256:")+32]
	w.fill(c.CapsuleID, c.ContentDigest)
	rebootstrap := b.o.Rebootstrap
	if a := b.o.AcknowledgedCapsuleID; a != nil {
		if *a == c.CapsuleID {
			reasons = append(reasons, "acknowledged_capsule_id is the current capsule (the legacy acknowledgement is answered in full; "+
				"delivery_mode delta with acknowledged_context_version gets deltas)")
		} else {
			rebootstrap = true
			reasons = append(reasons, "acknowledged_capsule_id is not the current capsule: answered in full")
		}
	}

	tokenizer := string(b.o.Tokens.Name())
	completeness := "unknown"
	if partial {
		completeness = "incomplete"
	}
	b.d = accountable.ContextDelivery{
		SchemaVersion: accountable.ContextDeliverySchema, Mode: string(b.o.Mode),
		Consistency: "database_snapshot", Completeness: completeness,
		BaseVerified: b.o.BaseVerified, RebootstrapRequired: rebootstrap, Reasons: reasons,
		Accounting:         accountable.ContextAccounting{Tokenizer: &tokenizer},
		PerformanceProfile: "unqualified_snapshot", MeetsPreparedByteBound: true,
	}
	// The capsule is written once; only the delivery, which counts the text, is written
	// again until its numbers are its own. The text is what Serialize makes of
	// serializedData (members in canonical order: context_capsule, context_delivery), put
	// together from its two members (TestTextIsTheSerializedData checks it).
	text := append(w.buf, ",\n"...)
	head := len(text)
	// Whole lines: the head is counted apart from the tail's, each item's lines but its
	// closing one (which ends in a comma or not) at once.
	headTokens, at := 0, 0
	for _, s := range w.spans {
		headTokens += b.countPart(text[at:s.from]) + b.countPart(text[s.from:s.to])
		at = s.to
	}
	headTokens += b.countPart(text[at:])
	b.spans = w.spans
	size, tokens := 0, 0
	for range 8 {
		b.d.Accounting.SerializedDataBytes = size
		b.d.Accounting.SerializedDataTokens = &tokens
		b.d.MeetsPreparedByteBound = size <= accountable.ContextPreparedMaxBytes
		w = canonWriter{buf: append(text[:head], " \"context_delivery\": "...), indent: true, depth: 1}
		w.delivery(&b.d)
		text = append(w.buf, "\n}"...)
		n := headTokens + b.countPart(text[head:])
		if len(text) == size && n == tokens {
			b.buf = text
			b.tokens = n
			counted := n
			b.d.Accounting.SerializedDataTokens = &counted
			return text, nil
		}
		size, tokens = len(text), n
	}
	b.buf = text
	return nil, errors.New("contextpack: the accounting did not settle")
}

// countPart is the count of whole lines of the text: an item's, the lines between two,
// the delivery. Parts are counted as one each (one map read where their lines take one
// each), and their counts kept (in the pooled space) as their lines' are: a scope's
// capsules repeat most of their parts from one request to the next.
func (b *builder) countPart(part []byte) int {
	if i := bytes.IndexByte(part, '\n'); i < 0 || i == len(part)-1 { // one line
		return b.count.count(part)
	}
	k, ok := b.parts[string(part)] // a lookup: no copy of the part
	if !ok {
		k = b.count.count(part)
		b.parts[string(part)] = k
		*b.count.held += len(part)
	}
	return k
}

// countItem is countPart of an item's text (section.text).
func (b *builder) countItem(text string) int {
	k, ok := b.parts[text]
	if !ok {
		k = b.count.countString(text)
		b.parts[text] = k
		*b.count.held += len(text)
	}
	return k
}

// serializeAt is Serialize of v as a member's value at depth (its lines after the first
// indented as deep).
func serializeAt(v any, depth int) (string, error) {
	raw, err := canonical.JSON(v)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	out.Grow(len(raw) + len(raw)/4)
	if err := json.Indent(&out, raw, strings.Repeat(" ", depth), " "); err != nil {
		return "", err
	}
	return out.String(), nil
}

// intentOf is the scope's narrowest resource, as the capsule's current intent.
func intentOf(s accountable.ContextScope) *accountable.ContextIntent {
	switch {
	case s.Task != nil:
		return &accountable.ContextIntent{Ref: s.Task.Ref, Summary: s.Task.Title, Status: s.Task.Status}
	case s.Workstream != nil:
		// A workstream has no status of its own: its initiative's is the one it works under.
		status := ""
		if s.Initiative != nil {
			status = s.Initiative.Status
		}
		return &accountable.ContextIntent{Ref: s.Workstream.Ref, Summary: s.Workstream.Goal, Status: status}
	case s.Initiative != nil:
		return &accountable.ContextIntent{Ref: s.Initiative.Ref, Summary: s.Initiative.Title, Status: s.Initiative.Status}
	}
	return nil
}

// cutScope cuts the scope's long texts to limit characters.
func cutScope(s *accountable.ContextScope, limit int) {
	cut := func(p *string) {
		if r := []rune(*p); len(r) > limit {
			*p = string(r[:limit]) + "…"
		}
	}
	if s.Task != nil {
		t := *s.Task
		if t.Description != nil {
			d := *t.Description
			cut(&d)
			t.Description = &d
		}
		s.Task = &t
	}
	if s.Initiative != nil {
		i := *s.Initiative
		cut(&i.Summary)
		s.Initiative = &i
	}
	if s.Workstream != nil {
		w := *s.Workstream
		cut(&w.Goal)
		s.Workstream = &w
	}
}
