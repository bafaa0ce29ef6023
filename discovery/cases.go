package discovery

import (
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/accountablework/accountable"
)

// Cases of ordinary work. A team that completes the same kinds of work in the same order,
// case after case, without ever setting metadata.case_id and metadata.process_stage, still
// links its work in what the ledger holds: the commands' correlation and causation ids,
// the identifiers its titles and metadata share ("Draft post #12", "Review post #12"), the
// milestone, workstream or initiative an item belongs to, a handoff key in its metadata.
// InferCases turns completed work items into trace events by those links, with rules that
// are
//
//   - deterministic: the same items give the same cases, keys and order;
//   - bounded: each rule is one pass over the items not yet grouped (maps, no pairing);
//   - conservative: explicit metadata is never regrouped; a rule groups only where it
//     finds at least MinCaseSupport cases of two kinds of work or more; a group that holds
//     one kind of work under two different title identifiers spans several cases and is
//     not one; a kind of work seen in fewer than MinCaseSupport cases is left out.
//
// The stage of an inferred event is the kind of work: metadata.process_stage when given,
// else the title with its identifiers taken out ("Draft post #12" → draft_post, named
// "Draft post").

// rank is a rule's place in accountable.GroupingRules: the lower, the stronger.
func rank(r accountable.GroupingRule) int {
	for i, g := range accountable.GroupingRules {
		if g == r {
			return i
		}
	}
	return len(accountable.GroupingRules)
}

// describe is how evidence of the rule begins.
func describe(r accountable.GroupingRule) string {
	switch r {
	case accountable.GroupCaseMetadata:
		return "metadata case_id"
	case accountable.GroupHandoffKey:
		return "same handoff_key"
	case accountable.GroupEpisode:
		return "recorded episodes"
	case accountable.GroupReceiptRequest:
		return "imported receipts of one request"
	case accountable.GroupObservation:
		return "supplied observations' case_id"
	case accountable.GroupCorrelationID:
		return "same correlation_id"
	case accountable.GroupCausationID:
		return "each work item caused by another's commands (causation_id), chains from"
	case accountable.GroupMetadataIdentifier:
		return "shared identifier in metadata"
	case accountable.GroupTitleIdentifier:
		return "shared identifier in titles"
	case accountable.GroupMilestone:
		return "same milestone"
	case accountable.GroupWorkstream:
		return "same workstream"
	case accountable.GroupInitiative:
		return "same initiative"
	}
	return string(r)
}

// maxGroupingLabels bounds the cases an evidence line names.
const maxGroupingLabels = 10

// groupingOf explains the cases of a variant (each case by the basis of its strongest
// event).
func groupingOf(bases []accountable.CaseBasis) []accountable.CaseGrouping {
	byRule := map[accountable.GroupingRule][]string{}
	for _, b := range bases {
		if b.Rule == "" {
			continue
		}
		byRule[b.Rule] = append(byRule[b.Rule], b.Label)
	}
	out := []accountable.CaseGrouping{}
	for _, r := range accountable.GroupingRules {
		labels := byRule[r]
		if len(labels) == 0 {
			continue
		}
		sort.Strings(labels)
		shown := dedupSorted(labels)
		more := ""
		if len(shown) > maxGroupingLabels {
			more = fmt.Sprintf(" and %d more", len(shown)-maxGroupingLabels)
			shown = shown[:maxGroupingLabels]
		}
		out = append(out, accountable.CaseGrouping{Rule: r, Cases: len(labels), Evidence: describe(r) + ": " + strings.Join(shown, ", ") + more})
	}
	return out
}

func dedupSorted(s []string) []string {
	out := s[:0:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// workKind is what inference makes of an item: its stage (key and name) and the
// identifier its title carries (see TitleIdentifier).
type workKind struct {
	stage, name string
	TitleID
}

// kindOf reads an item's kind of work: metadata.process_stage when given, else its title
// without identifiers.
func kindOf(w *accountable.CompletedWork) workKind {
	id, rest := TitleIdentifier(w.Title)
	k := workKind{TitleID: id}
	if w.Stage != "" {
		k.stage, k.name = w.Stage, w.StageName
		return k
	}
	k.stage, k.name = stageKey(rest), rest
	return k
}

// inferred is an item on its way to a case.
type inferred struct {
	*accountable.CompletedWork
	workKind
	caseKey string
	basis   accountable.CaseBasis
}

// InferCases groups completed work items without explicit case metadata into cases (see
// the top of this file) and returns their mining events. Items are taken in stream order;
// rules are tried in precedence order, each over the items no earlier rule grouped.
func InferCases(items []accountable.CompletedWork) []accountable.TraceEvent {
	all := make([]*inferred, 0, len(items))
	for i := range items {
		w := &items[i]
		if w.Explicit() {
			continue
		}
		it := &inferred{CompletedWork: w, workKind: kindOf(w)}
		if it.stage == "" {
			continue
		}
		all = append(all, it)
	}
	sort.SliceStable(all, func(i, j int) bool {
		if !all[i].At.Equal(all[j].At) {
			return all[i].At.Before(all[j].At)
		}
		return all[i].Seq < all[j].Seq
	})
	var rest []*inferred
	for _, it := range all {
		if it.CaseID != "" { // metadata.case_id alone: the case is explicit, the stage is the kind of work
			it.caseKey, it.basis = it.CaseID, accountable.CaseBasis{Rule: accountable.GroupCaseMetadata, Label: it.CaseID}
			continue
		}
		if hk := it.Metadata["handoff_key"]; hk != "" { // joins the handoff key's own case
			it.caseKey, it.basis = hk, accountable.CaseBasis{Rule: accountable.GroupHandoffKey, Label: hk}
			continue
		}
		rest = append(rest, it)
	}
	rest = groupBy(rest, accountable.GroupCorrelationID, func(it *inferred) (string, string) {
		c := it.CreatedCorrelationID // the creating command's, else the completing one's
		if c == "" {
			c = it.CorrelationID
		}
		return c, c
	})
	rest = groupByCausation(rest)
	rest = groupByMetadata(rest)
	rest = groupBy(rest, accountable.GroupTitleIdentifier, func(it *inferred) (string, string) { return it.Key, it.Label })
	// A "#" number its qualified key left ungrouped ("Draft #12", "Review #12": the word
	// before it is the verb) is tried alone.
	rest = groupBy(rest, accountable.GroupTitleIdentifier, func(it *inferred) (string, string) { return it.Bare, it.BareLabel })
	rest = groupBy(rest, accountable.GroupMilestone, func(it *inferred) (string, string) { return it.MilestoneID, nameOr(it.MilestoneName, it.MilestoneID) })
	rest = groupBy(rest, accountable.GroupWorkstream, func(it *inferred) (string, string) {
		return it.WorkstreamID, nameOr(it.WorkstreamName, it.WorkstreamID)
	})
	groupBy(rest, accountable.GroupInitiative, func(it *inferred) (string, string) {
		return it.InitiativeID, nameOr(it.InitiativeName, it.InitiativeID)
	})
	return emitInferred(all)
}

func nameOr(name, id string) string {
	if name != "" {
		return name
	}
	return id
}

// groupBy groups items by key under rule, when the rule finds enough cases (see
// assignGroups), and returns the items it left.
func groupBy(items []*inferred, rule accountable.GroupingRule, key func(*inferred) (string, string)) []*inferred {
	groups := map[string][]*inferred{}
	var keys []string
	labels := map[string]string{}
	for _, it := range items {
		k, label := key(it)
		if k == "" {
			continue
		}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
			labels[k] = label
		}
		groups[k] = append(groups[k], it)
	}
	return assignGroups(items, rule, string(rule)+":", keys, groups, labels)
}

// assignGroups makes cases of the groups that are cases (two kinds of work or more, and
// no kind under two different title identifiers), when there are at least MinCaseSupport
// of them; fewer is no evidence that the rule is how this workspace's work is linked.
func assignGroups(items []*inferred, rule accountable.GroupingRule, prefix string, keys []string, groups map[string][]*inferred, labels map[string]string) []*inferred {
	var cases []string
	for _, k := range keys {
		if isCase(groups[k]) {
			cases = append(cases, k)
		}
	}
	if len(cases) < MinCaseSupport {
		return items
	}
	for _, k := range cases {
		for _, it := range groups[k] {
			it.caseKey, it.basis = prefix+k, accountable.CaseBasis{Rule: rule, Label: labels[k]}
		}
	}
	left := items[:0:0]
	for _, it := range items {
		if it.caseKey == "" {
			left = append(left, it)
		}
	}
	return left
}

func isCase(group []*inferred) bool {
	if len(group) < 2 {
		return false
	}
	idents := make(map[string]string, min(len(group), 64))
	for _, it := range group {
		id, seen := idents[it.stage]
		if !seen {
			idents[it.stage] = it.ident()
			continue
		}
		if id != it.ident() { // one kind of work for two different things: several cases
			return false
		}
	}
	return len(idents) >= 2
}

// groupByCausation links an item to the items whose ids its commands name as their
// causation_id (the task, its events, its commands) and makes a case of each chain.
func groupByCausation(items []*inferred) []*inferred {
	causes := map[string]bool{}
	for _, it := range items {
		for _, cause := range []string{it.CreatedCausationID, it.CausationID} {
			if cause != "" {
				causes[cause] = true
			}
		}
	}
	if len(causes) == 0 {
		return items
	}
	owners := map[string][]int{} // of the ids named as causes only
	for i, it := range items {
		for _, id := range []string{it.TaskID, it.EventID, it.CommandID, it.CreatedEventID, it.CreatedCommandID} {
			if id != "" && causes[id] {
				owners[id] = append(owners[id], i)
			}
		}
	}
	parent := make([]int, len(items))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	linked := make([]bool, len(items))
	for i, it := range items {
		for _, cause := range []string{it.CreatedCausationID, it.CausationID} {
			for _, j := range owners[cause] {
				if j == i {
					continue
				}
				a, b := find(i), find(j)
				if a != b { // the earlier item (in stream order) heads the chain
					if a < b {
						parent[b] = a
					} else {
						parent[a] = b
					}
				}
				linked[i], linked[j] = true, true
			}
		}
	}
	index := make(map[*inferred]int, len(items))
	for i, it := range items {
		index[it] = i
	}
	return groupBy(items, accountable.GroupCausationID, func(it *inferred) (string, string) {
		i := index[it]
		if !linked[i] {
			return "", ""
		}
		head := items[find(i)]
		return head.TaskID, head.Title
	})
}

// groupByMetadata groups by each metadata key that reads as an identifier (see
// metadataIdentifierKey), keys in name order, each over its carriers that earlier keys
// left (so the cost is the number of such members, not keys times items).
func groupByMetadata(items []*inferred) []*inferred {
	carriers := map[string][]*inferred{}
	var keys []string
	for _, it := range items {
		for k, v := range it.Metadata {
			if strings.TrimSpace(v) == "" || !metadataIdentifierKey(k) {
				continue
			}
			if _, ok := carriers[k]; !ok {
				keys = append(keys, k)
			}
			carriers[k] = append(carriers[k], it)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		var open []*inferred
		for _, it := range carriers[k] {
			if it.caseKey == "" {
				open = append(open, it)
			}
		}
		groupBy(open, accountable.GroupMetadataIdentifier, func(it *inferred) (string, string) {
			v := k + "=" + strings.TrimSpace(it.Metadata[k])
			return v, v
		})
	}
	left := items[:0:0]
	for _, it := range items {
		if it.caseKey == "" {
			left = append(left, it)
		}
	}
	return left
}

// metadataIdentifierKey reports whether a metadata key names an identifier of the thing
// worked on: its last word is id, key, ref, number or slug (post_id, ticketKey), and no
// word names who or what did the work or where it sits (agent_id, user_id, project_id,
// workspace_id, run_id): those group by person or place, not by case.
func metadataIdentifierKey(k string) bool {
	words := keyWords(k)
	if len(words) == 0 {
		return false
	}
	switch words[len(words)-1] {
	case "id", "key", "ref", "number", "slug":
	default:
		return false
	}
	for _, w := range words {
		switch w {
		case "agent", "user", "owner", "assignee", "actor", "author", "reviewer", "requester", "creator", "created", "updated",
			"member", "team", "workspace", "tenant", "org", "organization", "account", "customer", "client", "model",
			"session", "run", "launch", "job", "trace", "span", "request", "source", "channel", "project", "initiative",
			"workstream", "milestone", "process", "stage", "case", "handoff", "command", "causation", "correlation",
			"idempotency", "external", "parent", "task":
			return false
		}
	}
	return true
}

// keyWords splits snake_case, kebab-case and camelCase into lower-case words.
func keyWords(k string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	prevLower := false
	for _, r := range k {
		switch {
		case r == '_' || r == '-' || r == '.' || r == ' ':
			flush()
			prevLower = false
			continue
		case unicode.IsUpper(r) && prevLower:
			flush()
		}
		cur = append(cur, r)
		prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
	}
	flush()
	return words
}

// emitInferred keeps the kinds of work that recur (seen in at least MinCaseSupport cases
// among the inferred ones) and the cases a rule made that still hold two kinds or more,
// and makes their events.
func emitInferred(all []*inferred) []accountable.TraceEvent {
	type pair struct{ a, b string }
	seen := map[pair]bool{}
	casesOf := map[string]int{} // kind of work → cases it is seen in
	for _, it := range all {
		if it.caseKey != "" && !seen[pair{it.stage, it.caseKey}] {
			seen[pair{it.stage, it.caseKey}] = true
			casesOf[it.stage]++
		}
	}
	// Also for the items that join a case named in metadata: a one-off kind of work would
	// only break that case's trace.
	keep := func(it *inferred) bool { return it.caseKey != "" && casesOf[it.stage] >= MinCaseSupport }
	clear(seen)
	kinds := map[string]int{} // case → kinds of work kept in it
	for _, it := range all {
		if keep(it) && !seen[pair{it.caseKey, it.stage}] {
			seen[pair{it.caseKey, it.stage}] = true
			kinds[it.caseKey]++
		}
	}
	out := make([]accountable.TraceEvent, 0, len(seen))
	for _, it := range all {
		// A case a rule made must still hold two kinds of work; a case named in metadata
		// (case_id, handoff_key) has its other events elsewhere.
		if !keep(it) || (rank(it.basis.Rule) > rank(accountable.GroupHandoffKey) && kinds[it.caseKey] < 2) {
			continue
		}
		out = append(out, accountable.TraceEvent{CaseID: it.caseKey, Stage: it.stage, StageName: it.name, At: it.At, Seq: it.Seq, Basis: it.basis,
			Citation: accountable.Citation{Kind: "ledger_event", EventID: it.EventID, CaseID: it.caseKey}})
	}
	return out
}

// stageKey makes a stage key of a kind of work: lower-case letters and digits, words
// joined by "_" ("Draft post" → draft_post).
func stageKey(s string) string {
	var b strings.Builder
	gap := false
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if gap && b.Len() > 0 {
				b.WriteByte('_')
			}
			gap = false
			b.WriteRune(r)
			continue
		}
		gap = true
	}
	key := b.String()
	if len(key) > 200 { // a process stage's key is at most 200 bytes
		key = strings.ToValidUTF8(key[:200], "")
	}
	return key
}

// TitleID is the identifier a work item's title carries, as inference keys it: Key, the
// identifier with the word that qualifies a number ("post 12" for "Draft post #12"), and
// Bare, a "#" number alone ("#12"), each with its Label as the evidence shows it.
// Ticket keys and quoted names need no qualifier (Bare is empty).
type TitleID struct {
	Key, Label      string
	Bare, BareLabel string
}

// ident is the identifier, qualified when it can be.
func (t TitleID) ident() string {
	if t.Key != "" {
		return t.Key
	}
	return t.Bare
}

// titleStopwords are the words that do not qualify a number ("post no. 12" is post's).
var titleStopwords = map[string]bool{"a": true, "an": true, "the": true, "for": true, "of": true, "on": true, "in": true,
	"to": true, "and": true, "with": true, "from": true, "re": true, "about": true, "per": true, "at": true, "by": true,
	"no": true, "nr": true, "num": true, "number": true}

// Quotation marks that enclose a name in a title (straight double quotes and the
// typographic pairs; single quotes double as apostrophes and are not read).
var titleQuotes = map[rune]rune{'"': '"', '“': '”', '«': '»', '„': '“'}

// TitleIdentifier finds the identifier of the thing a title's work is about, and the
// title without it (the kind of work). Identifiers, strongest first: a ticket key
// (ABC-123), a "#" number (#12), a quoted name ("Onboarding guide"), a plain number after
// the word it numbers (post 12). The strongest kind found is the identifier, unless the
// title holds two different ones of that kind (then it has none: it is about several
// things). A number's qualifier is the nearest word before it that is not a stopword
// (for, of, no, ...). Every identifier is taken out of the kind of work.
func TitleIdentifier(title string) (TitleID, string) {
	// Quoted names first: they may hold spaces and numbers of their own.
	var quoted []string
	var outside strings.Builder
	runes := []rune(title)
	for i := 0; i < len(runes); i++ {
		closeQ, ok := titleQuotes[runes[i]]
		if !ok {
			outside.WriteRune(runes[i])
			continue
		}
		j := i + 1
		for j < len(runes) && runes[j] != closeQ {
			j++
		}
		if j == len(runes) { // unclosed: plain text
			outside.WriteRune(runes[i])
			continue
		}
		if name := strings.Join(strings.Fields(string(runes[i+1:j])), " "); name != "" && len([]rune(name)) <= 100 {
			quoted = append(quoted, name)
		}
		outside.WriteRune(' ')
		i = j
	}
	type token struct {
		raw, core string
		kind      int // 0 word, 1 ticket, 2 hash number, 3 plain number
	}
	var tokens []token
	for _, raw := range strings.Fields(outside.String()) {
		core := strings.TrimLeftFunc(strings.TrimRightFunc(raw, edgePunct), func(r rune) bool { return r != '#' && edgePunct(r) })
		t := token{raw: raw, core: core}
		switch {
		case isTicketKey(core):
			t.kind = 1
		case len(core) > 1 && core[0] == '#' && allDigits(core[1:]):
			t.kind = 2
		case allDigits(core):
			t.kind = 3
		}
		tokens = append(tokens, t)
	}
	qualifier := func(i int) string {
		for j := i - 1; j >= 0; j-- {
			w := strings.ToLower(tokens[j].core)
			if tokens[j].kind != 0 || w == "" || !allLetters(w) {
				return ""
			}
			if !titleStopwords[w] {
				return w
			}
		}
		return ""
	}
	var id TitleID
	pick := func(kind int) bool {
		var found []TitleID
		for i, t := range tokens {
			if t.kind != kind {
				continue
			}
			var c TitleID
			switch kind {
			case 1:
				c = TitleID{Key: t.core, Label: t.core}
			default:
				n := strings.TrimLeft(strings.TrimPrefix(t.core, "#"), "0")
				if n == "" {
					n = "0"
				}
				q := qualifier(i)
				if kind == 2 {
					c.Bare, c.BareLabel = "#"+n, t.core
				}
				if q != "" {
					c.Key, c.Label = q+" "+n, q+" "+t.core
				} else if kind == 3 {
					continue // a plain number that numbers no word identifies nothing
				}
			}
			found = append(found, c)
		}
		for _, c := range found[min(1, len(found)):] {
			if c.Key != found[0].Key || c.Bare != found[0].Bare {
				return true // two different identifiers of the strongest kind: none
			}
		}
		if len(found) > 0 {
			id = found[0]
			return true
		}
		return false
	}
	if !pick(1) && !pick(2) {
		if len(quoted) > 0 {
			q := strings.ToLower(quoted[0])
			for _, o := range quoted[1:] {
				if strings.ToLower(o) != q {
					q = ""
				}
			}
			if q != "" {
				id = TitleID{Key: `"` + q + `"`, Label: `"` + quoted[0] + `"`}
			}
		} else {
			pick(3)
		}
	}
	// The kind of work: the words that are not identifiers, without stopwords left
	// dangling at either end.
	var words []string
	for i, t := range tokens {
		if t.kind == 1 || t.kind == 2 || (t.kind == 3 && qualifier(i) != "") {
			continue
		}
		if strings.TrimFunc(t.raw, edgePunct) == "" {
			continue // a lone dash or colon
		}
		words = append(words, t.raw)
	}
	for len(words) > 0 && titleStopwords[strings.ToLower(strings.TrimFunc(words[len(words)-1], edgePunct))] {
		words = words[:len(words)-1]
	}
	rest := strings.TrimRightFunc(strings.Join(words, " "), func(r rune) bool { return edgePunct(r) || unicode.IsSpace(r) })
	return id, rest
}

// isTicketKey reports whether s is an issue-tracker key: 2-10 capitals or digits starting
// with a capital, a dash, 1-9 digits (ABC-123).
func isTicketKey(s string) bool {
	prefix, num, ok := strings.Cut(s, "-")
	if !ok || len(prefix) < 2 || len(prefix) > 10 || prefix[0] < 'A' || prefix[0] > 'Z' || len(num) > 9 || !allDigits(num) {
		return false
	}
	for _, r := range prefix {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

func edgePunct(r rune) bool { return unicode.IsPunct(r) || unicode.IsSymbol(r) }

func allDigits(s string) bool {
	if s == "" || len(s) > 9 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func allLetters(s string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	return s != ""
}
