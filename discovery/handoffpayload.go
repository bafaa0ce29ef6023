package discovery

import (
	"bytes"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/payload"
)

// handoffStages is what mining reads of a handoff.proposed payload (payload.HandoffProposed):
// its key, its two stages and when it was proposed.
type handoffStages struct {
	key, from, to string
	at            time.Time
}

// handoffStagesOf reads a handoff.proposed payload as json.Unmarshal into
// payload.HandoffProposed reads those four members; ok is false where that fails or the
// key is empty (the event is not mined). A page's payloads are nearly all of a run's
// decoding (the bench's discovery line's ledger is all handoffs), and the full decode of
// a handoff's twenty members cost far more than its mining: the members are found by one
// scan of the object instead. A payload it does not read as plainly as the service writes
// it (a name spelled otherwise or repeated, one of the four not a string, anything it does
// not scan) is decoded by json.Unmarshal as before. The other members are not decoded:
// the ledger's handoff.proposed payloads are json.Marshal's of that very type, so their
// decoding never failed on one of them (TestHandoffStagesOf compares the two).
func handoffStagesOf(raw []byte) (handoffStages, bool) {
	h, ok, sure := scanHandoffStages(raw)
	if !sure {
		var p payload.HandoffProposed
		if err := json.Unmarshal(raw, &p); err != nil {
			return handoffStages{}, false
		}
		h, ok = handoffStages{key: p.HandoffKey, from: p.FromStageKey, to: p.ToStageKey, at: p.CreatedAt.Time}, true
	}
	return h, ok && h.key != ""
}

// The members read, as payload.HandoffProposed names them.
const (
	memberKey  = "handoffKey"
	memberFrom = "fromStageKey"
	memberTo   = "toStageKey"
	memberAt   = "createdAt"
)

// scanHandoffStages finds the four members in the object raw; sure is false when
// json.Unmarshal must say (the scan met something it does not read exactly as
// json.Unmarshal would).
func scanHandoffStages(raw []byte) (h handoffStages, ok, sure bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return h, false, false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return h, true, skipSpace(raw, i+1) == len(raw)
	}
	var seen [4]bool
	for {
		if i >= len(raw) || raw[i] != '"' {
			return h, false, false
		}
		end := accountable.JSONStringEnd(raw, i)
		if end < 0 || !plainName(raw[i+1:end]) {
			return h, false, false // a name with escapes or beyond ASCII: json's folding rules
		}
		name := raw[i+1 : end]
		i = skipSpace(raw, end+1)
		if i >= len(raw) || raw[i] != ':' {
			return h, false, false
		}
		i = skipSpace(raw, i+1)
		vEnd := skipValue(raw, i)
		if vEnd < 0 {
			return h, false, false
		}
		value := raw[i:vEnd]
		member := -1
		switch string(name) {
		case memberKey:
			member = 0
		case memberFrom:
			member = 1
		case memberTo:
			member = 2
		case memberAt:
			member = 3
		default:
			// json.Unmarshal matches a name without regard to case too.
			if bytes.EqualFold(name, []byte(memberKey)) || bytes.EqualFold(name, []byte(memberFrom)) ||
				bytes.EqualFold(name, []byte(memberTo)) || bytes.EqualFold(name, []byte(memberAt)) {
				return h, false, false
			}
		}
		if member >= 0 {
			if seen[member] {
				return h, false, false
			}
			seen[member] = true
			if member == 3 {
				var t accountable.Time
				if t.UnmarshalJSON(value) != nil {
					return h, false, false
				}
				h.at = t.Time
			} else {
				s, ok := stringValue(value)
				if !ok {
					return h, false, false
				}
				switch member {
				case 0:
					h.key = s
				case 1:
					h.from = s
				case 2:
					h.to = s
				}
			}
		}
		i = skipSpace(raw, vEnd)
		if i >= len(raw) {
			return h, false, false
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case '}':
			return h, true, skipSpace(raw, i+1) == len(raw)
		default:
			return h, false, false
		}
	}
}

// stringValue is a member's string value as json.Unmarshal decodes it into a string (null
// leaves it empty); ok is false for any other value.
func stringValue(v []byte) (string, bool) {
	if string(v) == "null" {
		return "", true
	}
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	in := v[1 : len(v)-1]
	if bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
		return string(in), true
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) {
		switch raw[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// plainName reports whether a member's name is printable ASCII without escapes.
func plainName(name []byte) bool {
	for _, c := range name {
		if c < 0x20 || c >= utf8.RuneSelf || c == '\\' {
			return false
		}
	}
	return true
}

// skipValue is the index just past the JSON value starting at raw[i], -1 where it does not
// find one it can step over (what json.Unmarshal's own check of the whole text decides).
func skipValue(raw []byte, i int) int {
	if i >= len(raw) {
		return -1
	}
	switch raw[i] {
	case '"':
		end := accountable.JSONStringEnd(raw, i)
		if end < 0 {
			return -1
		}
		return end + 1
	case '{', '[':
		depth := 0
		for j := i; j < len(raw); j++ {
			switch raw[j] {
			case '"':
				end := accountable.JSONStringEnd(raw, j)
				if end < 0 {
					return -1
				}
				j = end
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default: // a number, true, false or null
		j := i
		for j < len(raw) {
			c := raw[j]
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				break
			}
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
}
