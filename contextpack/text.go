package contextpack

import (
	"slices"
	"strconv"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// The capsule and its delivery are written by hand, as canonical.JSON writes them (members
// sorted by name, canonical strings and numbers) and, for the text, indented as
// json.Indent indents that form: a capsule is written three or four times a request (its
// digest, then its text after each trim), and canonical's reflective pass and json.Indent's
// scanner were most of its CPU. TestCanonicalWriter compares the two on random capsules; a
// field added to one of the types must be added here too (the test fails until it is).

// canonWriter appends canonical JSON, compact or indented one member or element per line.
type canonWriter struct {
	buf []byte
	// indent: each member or element on a line of its own, indented as json.Indent does with
	// prefix depth spaces and indent " " (the value itself starts where the caller is).
	indent bool
	depth  int
	level  int  // containers open
	empty  bool // the innermost container has nothing written yet
	// spans, when not nil, gets where each object of a list is in buf when indented.
	spans []itemSpan
	// idAt and digestAt are where the capsule's capsule_id and content_digest values are.
	idAt, digestAt int
	// known, when not nil, has what a build knows of its lists' items, by the list's
	// member name (a section's name): an item's indented text is copied from there once
	// written (list).
	known map[string][]*itemText
	held  *int   // the bytes known holds (space.itemsHeld)
	named string // the last member name written
}

// itemSpan is a list's object in the indented text: its lines but the closing one,
// [from, to).
type itemSpan struct{ from, to int }

func (w *canonWriter) newline() {
	if w.indent {
		w.buf = append(w.buf, '\n')
		n := w.depth + w.level
		for n > len(blanks) {
			w.buf = append(w.buf, blanks...)
			n -= len(blanks)
		}
		w.buf = append(w.buf, blanks[:n]...) // one copy, not a byte at a time
	}
}

// blanks are the indentation newline copies.
const blanks = "                                "

func (w *canonWriter) open(c byte) {
	w.buf = append(w.buf, c)
	w.level++
	w.empty = true
}

func (w *canonWriter) close(c byte) {
	w.level--
	if !w.empty {
		w.newline()
	}
	w.buf = append(w.buf, c)
	w.empty = false
}

// element starts the next element of an array.
func (w *canonWriter) element() {
	if !w.empty {
		w.buf = append(w.buf, ',')
	}
	w.empty = false
	w.newline()
}

// name starts the member name (a plain ASCII name, its own canonical form).
func (w *canonWriter) name(name string) {
	w.named = name
	w.element()
	w.buf = append(w.buf, '"')
	w.buf = append(w.buf, name...)
	w.buf = append(w.buf, '"', ':')
	if w.indent {
		w.buf = append(w.buf, ' ')
	}
}

func (w *canonWriter) str(s string) {
	if canonPlain(s) { // most of a capsule's strings: ids, names, ASCII titles
		w.buf = append(w.buf, '"')
		w.buf = append(w.buf, s...)
		w.buf = append(w.buf, '"')
		return
	}
	w.buf = canonical.AppendString(w.buf, s)
}

// canonPlain reports whether s is its own canonical JSON string's content: ASCII without
// control characters, quotes or backslashes. It reads eight bytes at a time, with the bit
// tricks that flag a byte below n or equal to c in a word (a borrow only runs upwards,
// past a byte already flagged, so a word has a flag exactly when one of its bytes is one).
func canonPlain(s string) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := s[i : i+8]
		x := uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
		quote, slash := x^(ones*'"'), x^(ones*'\\')
		if (x|(x-ones*0x20)&^x|(quote-ones)&^quote|(slash-ones)&^slash)&highs != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

func (w *canonWriter) strPtr(s *string) {
	if s == nil {
		w.buf = append(w.buf, "null"...)
		return
	}
	w.str(*s)
}

func (w *canonWriter) int(n int64) { w.buf = canonical.AppendInt(w.buf, n) }

func (w *canonWriter) intPtr(n *int64) {
	if n == nil {
		w.buf = append(w.buf, "null"...)
		return
	}
	w.int(*n)
}

func (w *canonWriter) count(n *int) {
	if n == nil {
		w.buf = append(w.buf, "null"...)
		return
	}
	w.int(int64(*n))
}

func (w *canonWriter) bool(b bool) { w.buf = strconv.AppendBool(w.buf, b) }

// time is a Time as its MarshalJSON writes it: a plain string, its own canonical form.
func (w *canonWriter) time(t accountable.Time) {
	raw, _ := t.MarshalJSON() // never fails
	w.buf = append(w.buf, raw...)
}

func (w *canonWriter) timePtr(t *accountable.Time) {
	if t == nil {
		w.buf = append(w.buf, "null"...)
		return
	}
	w.time(*t)
}

func (w *canonWriter) ref(r accountable.ContextRef) {
	w.open('{')
	w.name("id")
	w.str(r.ID)
	w.name("system")
	w.str(r.System)
	w.name("type")
	w.str(r.Type)
	w.close('}')
}

// list writes items with each, or null for a nil slice.
func list[T any](w *canonWriter, items []T, each func(*canonWriter, *T)) {
	if items == nil {
		w.buf = append(w.buf, "null"...)
		return
	}
	var known []*itemText
	if w.known != nil && w.indent {
		known = w.known[w.named]
	}
	w.open('[')
	for i := range items {
		w.element()
		if w.spans == nil || !w.indent {
			w.item(known, i, func() { each(w, &items[i]) })
			continue
		}
		from := len(w.buf) - w.depth - w.level // after the newline element wrote
		w.item(known, i, func() { each(w, &items[i]) })
		// An object's closing line is its indentation and "}".
		if to := len(w.buf) - 1 - w.depth - w.level; to > from && w.buf[to-1] == '\n' && w.buf[len(w.buf)-1] == '}' {
			w.spans = append(w.spans, itemSpan{from, to})
		}
	}
	w.close(']')
}

// item writes item i of a list with write, or copies its text from known[i]: an item's
// indented text is a function of its JSON (known's key) at the depth every capsule list
// is written (itemText), and is kept there once written.
func (w *canonWriter) item(known []*itemText, i int, write func()) {
	if i >= len(known) || known[i] == nil || w.depth+w.level != capsuleItemDepth {
		write()
		return
	}
	if t := known[i]; t.canon != "" {
		w.buf = append(w.buf, t.canon...)
		return
	}
	start := len(w.buf)
	write()
	known[i].canon = string(w.buf[start:])
	if w.held != nil {
		*w.held += len(known[i].canon)
	}
}

// capsuleItemDepth is the indentation of a capsule's list items: the text's own member
// (depth 1), the capsule's object and the list.
const capsuleItemDepth = 1 + 2

func (w *canonWriter) capsule(c *accountable.ContextCapsule) {
	w.open('{')
	w.name("active_constraints")
	list(w, c.ActiveConstraints, (*canonWriter).decision)
	w.name("artifacts")
	list(w, c.Artifacts, (*canonWriter).artifact)
	w.name("as_of_global_sequence")
	w.int(c.AsOfGlobalSequence)
	w.name("authoritative_decisions")
	list(w, c.AuthoritativeDecisions, (*canonWriter).decision)
	w.name("capsule_id")
	w.idAt = len(w.buf)
	w.str(c.CapsuleID)
	w.name("content_digest")
	w.digestAt = len(w.buf)
	w.str(c.ContentDigest)
	w.name("current_intent")
	if c.CurrentIntent == nil {
		w.buf = append(w.buf, "null"...)
	} else {
		w.open('{')
		w.name("ref")
		w.ref(c.CurrentIntent.Ref)
		w.name("status")
		w.str(c.CurrentIntent.Status)
		w.name("summary")
		w.str(c.CurrentIntent.Summary)
		w.close('}')
	}
	w.name("omitted_counts")
	w.counts(&c.OmittedCounts)
	w.name("open_risks")
	list(w, c.OpenRisks, (*canonWriter).handoff)
	w.name("projection_consistency")
	w.str(c.ProjectionConsistency)
	w.name("recent_events")
	list(w, c.RecentEvents, (*canonWriter).event)
	w.name("recent_receipt_refs")
	list(w, c.RecentReceiptRefs, func(w *canonWriter, r *accountable.ContextRef) { w.ref(*r) })
	w.name("runs")
	list(w, c.Runs, (*canonWriter).run)
	w.name("schema_version")
	w.str(c.SchemaVersion)
	w.name("scope")
	w.scope(&c.Scope)
	w.name("source_completeness")
	w.completeness(&c.SourceCompleteness)
	w.name("workspace_id")
	w.str(c.WorkspaceID)
	w.close('}')
}

func (w *canonWriter) scope(s *accountable.ContextScope) {
	w.open('{')
	w.name("initiative")
	if i := s.Initiative; i == nil {
		w.buf = append(w.buf, "null"...)
	} else {
		w.open('{')
		w.name("ref")
		w.ref(i.Ref)
		w.name("status")
		w.str(i.Status)
		w.name("summary")
		w.str(i.Summary)
		w.name("title")
		w.str(i.Title)
		w.close('}')
	}
	w.name("kind")
	w.str(string(s.Kind))
	w.name("task")
	if t := s.Task; t == nil {
		w.buf = append(w.buf, "null"...)
	} else {
		w.open('{')
		w.name("aggregate_version")
		w.int(t.AggregateVersion)
		w.name("description")
		w.strPtr(t.Description)
		w.name("due_date")
		w.timePtr(t.DueDate)
		w.name("estimated_cost_cents")
		w.intPtr(t.EstimatedCostCents)
		w.name("priority")
		w.str(t.Priority)
		w.name("ref")
		w.ref(t.Ref)
		w.name("status")
		w.str(t.Status)
		w.name("title")
		w.str(t.Title)
		w.close('}')
	}
	w.name("workstream")
	if ws := s.Workstream; ws == nil {
		w.buf = append(w.buf, "null"...)
	} else {
		w.open('{')
		w.name("agent_name")
		w.strPtr(ws.AgentName)
		w.name("domain")
		w.str(ws.Domain)
		w.name("goal")
		w.str(ws.Goal)
		w.name("name")
		w.str(ws.Name)
		w.name("ref")
		w.ref(ws.Ref)
		w.close('}')
	}
	w.close('}')
}

func (w *canonWriter) decision(d *accountable.ContextDecision) {
	w.open('{')
	w.name("due_at")
	w.timePtr(d.DueAt)
	w.name("provenance")
	w.str(d.Provenance)
	w.name("ref")
	w.ref(d.Ref)
	w.name("selected_option")
	w.strPtr(d.SelectedOption)
	w.name("status")
	w.str(d.Status)
	w.name("summary")
	w.str(d.Summary)
	w.name("urgency")
	w.str(d.Urgency)
	w.close('}')
}

func (w *canonWriter) handoff(h *accountable.ContextHandoff) {
	w.open('{')
	w.name("due_at")
	w.timePtr(h.DueAt)
	w.name("from_stage_key")
	w.str(h.From)
	w.name("priority")
	w.str(h.Priority)
	w.name("ref")
	w.ref(h.Ref)
	w.name("sla_breached")
	w.bool(h.SLABreached)
	w.name("status")
	w.str(h.Status)
	w.name("summary")
	w.str(h.Summary)
	w.name("to_stage_key")
	w.str(h.To)
	w.close('}')
}

func (w *canonWriter) run(r *accountable.ContextRun) {
	w.open('{')
	w.name("cost_cents")
	w.int(r.CostCents)
	w.name("outcome_kind")
	w.strPtr(r.OutcomeKind)
	w.name("ref")
	w.ref(r.Ref)
	w.name("status")
	w.str(r.Status)
	w.name("summary")
	w.str(r.Summary)
	w.name("workstream_id")
	w.str(r.WorkstreamID)
	w.close('}')
}

func (w *canonWriter) event(e *accountable.ContextEvent) {
	w.open('{')
	w.name("aggregate_id")
	w.str(e.AggregateID)
	w.name("aggregate_type")
	w.str(e.AggregateType)
	w.name("aggregate_version")
	w.int(e.AggregateVersion)
	w.name("event_hash")
	w.str(e.EventHash)
	w.name("event_type")
	w.str(e.EventType)
	w.name("recorded_at")
	w.time(e.RecordedAt)
	w.name("ref")
	w.ref(e.Ref)
	w.close('}')
}

func (w *canonWriter) artifact(a *accountable.ContextArtifact) {
	w.open('{')
	w.name("artifact_type")
	w.str(a.ArtifactType)
	w.name("ref")
	w.ref(a.Ref)
	w.name("status")
	w.str(a.Status)
	w.name("summary")
	w.str(a.Summary)
	w.name("version")
	w.int(a.Version)
	w.close('}')
}

func (w *canonWriter) counts(c *accountable.ContextSectionCounts) {
	w.open('{')
	for _, m := range [...]struct {
		name string
		n    int
	}{{"active_constraints", c.ActiveConstraints}, {"artifacts", c.Artifacts}, {"authoritative_decisions", c.AuthoritativeDecisions},
		{"open_risks", c.OpenRisks}, {"recent_events", c.RecentEvents}, {"recent_receipt_refs", c.RecentReceiptRefs}, {"runs", c.Runs}} {
		w.name(m.name)
		w.int(int64(m.n))
	}
	w.close('}')
}

func (w *canonWriter) completeness(c *accountable.ContextSourceCompleteness) {
	w.open('{')
	for _, m := range [...]struct {
		name string
		s    *accountable.ContextSourceStatus
	}{{"active_constraints", &c.ActiveConstraints}, {"artifacts", &c.Artifacts}, {"authoritative_decisions", &c.AuthoritativeDecisions},
		{"open_risks", &c.OpenRisks}, {"recent_events", &c.RecentEvents}, {"recent_receipt_refs", &c.RecentReceiptRefs}, {"runs", &c.Runs}} {
		w.name(m.name)
		w.open('{')
		w.name("returned")
		w.int(int64(m.s.Returned))
		w.name("status")
		w.str(m.s.Status)
		w.close('}')
	}
	w.close('}')
}

func (w *canonWriter) delivery(d *accountable.ContextDelivery) {
	w.open('{')
	w.name("accounting")
	a := &d.Accounting
	w.open('{')
	w.name("model_input_tokens")
	w.count(a.ModelInputTokens)
	w.name("serialized_data_bytes")
	w.int(int64(a.SerializedDataBytes))
	w.name("serialized_data_tokens")
	w.count(a.SerializedDataTokens)
	w.name("source_expansion_tokens")
	w.count(a.SourceExpansionTokens)
	w.name("tokenizer")
	w.strPtr(a.Tokenizer)
	w.close('}')
	w.name("base_verified")
	w.bool(d.BaseVerified)
	w.name("completeness")
	w.str(d.Completeness)
	w.name("consistency")
	w.str(d.Consistency)
	w.name("meets_prepared_byte_bound")
	w.bool(d.MeetsPreparedByteBound)
	w.name("mode")
	w.str(d.Mode)
	w.name("performance_profile")
	w.str(d.PerformanceProfile)
	w.name("reasons")
	list(w, d.Reasons, func(w *canonWriter, s *string) { w.str(*s) })
	w.name("rebootstrap_required")
	w.bool(d.RebootstrapRequired)
	w.name("reusable_for_consequential_action")
	w.bool(d.ReusableForConsequentialAction)
	w.name("schema_version")
	w.str(d.SchemaVersion)
	w.close('}')
}

// indentJSON appends src, JSON as json.Marshal writes it (no space outside strings),
// indented as json.Indent indents it with prefix and indent, without its scanner.
func indentJSON(dst, src []byte, prefix, indent string) []byte {
	depth := 0
	needIndent := false // a container was just opened: {} and [] stay on their line
	newline := func() {
		dst = append(dst, '\n')
		dst = append(dst, prefix...)
		for range depth {
			dst = append(dst, indent...)
		}
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		if needIndent && c != '}' && c != ']' {
			needIndent = false
			depth++
			newline()
		}
		switch c {
		case '"':
			j := stringEnd(src, i)
			dst = append(dst, src[i:j+1]...)
			i = j
		case '{', '[':
			needIndent = true
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, c, ' ')
		case '}', ']':
			if needIndent {
				needIndent = false
			} else {
				depth--
				newline()
			}
			dst = append(dst, c)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// indentedLen is len(indentJSON(nil, src, prefix, indent)) for a prefix and an indent of
// those lengths, without writing it.
func indentedLen(src []byte, prefix, indent int) int {
	n, depth := 0, 0
	needIndent := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if needIndent && c != '}' && c != ']' {
			needIndent = false
			depth++
			n += 1 + prefix + depth*indent
		}
		switch c {
		case '"':
			j := stringEnd(src, i)
			n += j + 1 - i
			i = j
		case '{', '[':
			needIndent = true
			n++
		case ',':
			n += 2 + prefix + depth*indent
		case ':':
			n += 2
		case '}', ']':
			if needIndent {
				needIndent = false
			} else {
				depth--
				n += 1 + prefix + depth*indent
			}
			n++
		default:
			n++
		}
	}
	return n
}

// fill puts the capsule's id and digest (plain ASCII: their own canonical strings) into
// the empty values the capsule was written with, moving what follows them (and the spans
// there) along.
func (w *canonWriter) fill(id, digest string) {
	if string(w.buf[w.idAt:w.idAt+2]) != `""` || string(w.buf[w.digestAt:w.digestAt+2]) != `""` || !canonPlain(id) || !canonPlain(digest) {
		panic("contextpack: fill: the capsule was not written with an empty id and digest")
	}
	n1, n2, end := len(id), len(digest), len(w.buf)
	w.buf = slices.Grow(w.buf, n1+n2)[:end+n1+n2]
	copy(w.buf[w.digestAt+1+n1+n2:], w.buf[w.digestAt+1:end])
	copy(w.buf[w.idAt+1+n1:], w.buf[w.idAt+1:w.digestAt+1])
	copy(w.buf[w.idAt+1:], id)
	copy(w.buf[w.digestAt+1+n1:], digest)
	for i := range w.spans {
		if w.spans[i].from > w.digestAt {
			w.spans[i].from += n1 + n2
			w.spans[i].to += n1 + n2
		} else if w.spans[i].from > w.idAt {
			w.spans[i].from += n1
			w.spans[i].to += n1
		}
	}
}

// dedent appends src, JSON indented as canonWriter indents it, without the indentation:
// the spaces and newlines outside strings.
func dedent(dst, src []byte) []byte {
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case ' ', '\n':
		case '"':
			j := stringEnd(src, i)
			dst = append(dst, src[i:j+1]...)
			i = j
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// stringEnd is the index of the quote that closes the JSON string opening at src[i] (the
// last byte for a string cut short).
func stringEnd(src []byte, i int) int {
	if j := accountable.JSONStringEnd(src, i); j >= 0 {
		return j
	}
	return len(src) - 1
}
