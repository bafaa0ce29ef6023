package workload

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/bits"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// UnmarshalJSONFrom decodes the workload of a request in one pass over its text when
// the text is the plain form clients send: the members of the schema, each once, in any
// order; strings without escapes; agent_count a non-negative integer of at most 18
// digits; no null. go-json-experiment's reflective decoding of those members, with a
// string allocated for most enumeration values, was a fifth of POST /doctor/workload's
// CPU; here a known value is its constant. Any other text (an unknown member, a repeat,
// an escape, a fraction, a value of another type, null, text cut short) is declined
// before anything is read (errors.ErrUnsupported), and go-json-experiment decodes it
// by default, with its errors and their JSON Pointers: the plain form only decodes
// faster, to the same value (TestWorkloadPlainDecoding). The decoder still reads the
// value taken (ReadValue), so its own checks of the text (syntax, UTF-8, duplicate
// names) hold as before.
func (w *Workload) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	p := plainParser{in: dec.UnreadBuffer()}
	var out Workload = *w // members the text does not have keep their values, as by default
	if !p.workload(&out) {
		return errors.ErrUnsupported
	}
	raw, err := dec.ReadValue()
	if err != nil {
		return err
	}
	if !bytes.Equal(raw, p.in[p.start:p.end]) { // never: the decoder's next value is the one parsed
		return errors.New("workload: the plain decoding read another value than the decoder")
	}
	*w = out
	return nil
}

// DecodePlainBody decodes body, a whole request, when it is the plain form (see
// UnmarshalJSONFrom) of the request's two members and nothing else, in valid UTF-8 with
// nothing after it, and reports whether it did; r is left as it was otherwise, for the
// default decoding. The API's body decoding tries it first: go-json-experiment, even with
// the workload decoded in one pass, read the text again to check it and decoded the
// request's envelope by reflection, a tenth of POST /doctor/workload's CPU. It gives what
// the default decoding gives (TestWorkloadPlainDecoding).
func (r *WorkloadRequest) DecodePlainBody(body []byte) bool {
	if !utf8.Valid(body) {
		return false
	}
	p := plainParser{in: body}
	var out WorkloadRequest
	if !p.object(plainRequestNames, func(i int) bool {
		if i == 0 {
			return p.str(&out.SchemaVersion)
		}
		return p.workload(&out.Workload)
	}) {
		return false
	}
	if p.space(); p.pos != len(p.in) {
		return false
	}
	*r = out
	return true
}

// plainRequestNames are the members of a request (WorkloadRequest).
var plainRequestNames = []string{"schema_version", "workload"}

// plainParser reads the plain form of a workload (Workload.UnmarshalJSONFrom) from in;
// each method reports whether the text it read was of that form.
type plainParser struct {
	in         []byte
	pos        int
	start, end int // the workload object's offsets in in
}

// space skips whitespace.
func (p *plainParser) space() {
	for p.pos < len(p.in) {
		switch p.in[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// byte reads c, after whitespace (looked for only when c is not next: clients mostly
// send compact JSON).
func (p *plainParser) byte(c byte) bool {
	if p.pos < len(p.in) && p.in[p.pos] == c {
		p.pos++
		return true
	}
	p.space()
	if p.pos < len(p.in) && p.in[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

// peek is the next byte after whitespace, 0 at the end.
func (p *plainParser) peek() byte {
	p.space()
	if p.pos < len(p.in) {
		return p.in[p.pos]
	}
	return 0
}

// text reads a string of plainTextByte bytes (no escape) and returns its content.
func (p *plainParser) text() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start := p.pos
	p.pos += plainTextLen(p.in[p.pos:])
	if p.pos == len(p.in) || p.in[p.pos] != '"' {
		return nil, false
	}
	p.pos++
	return p.in[start : p.pos-1], true
}

// plainTextLen is the length of the longest prefix of b made of plainTextByte bytes. It
// reads eight bytes at a time, with the bit tricks of accountable's JSON string encoder:
// (x-ones*n)&^x flags the lowest byte below n (a byte of UTF-8, from 0x80, is not below
// 0x20 and keeps its high bit out of the flags), and (y-ones)&^y the lowest zero byte of y,
// x^ones*c zero where x has c; a borrow only runs upwards, out of a byte itself flagged,
// so the lowest flag is the first byte that ends the run.
func plainTextLen(b []byte) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		quote, slash := x^ones*'"', x^ones*'\\'
		if special := ((x-ones*0x20)&^x | (quote-ones)&^quote | (slash-ones)&^slash) & highs; special != 0 {
			return i + bits.TrailingZeros64(special)/8
		}
	}
	for i < len(b) && plainTextByte[b[i]] {
		i++
	}
	return i
}

// plainTextByte is the bytes a plain string holds: all but control characters, " and \
// (so no escape). Bytes of UTF-8 are taken as they are: the decoder's ReadValue checks
// that they are UTF-8, as the default decoding does.
var plainTextByte = func() (plain [256]bool) {
	for c := 0x20; c < 256; c++ {
		plain[c] = c != '"' && c != '\\'
	}
	return plain
}()

// str reads a string member's value.
func (p *plainParser) str(v *string) bool {
	t, ok := p.text()
	if ok {
		*v = string(t)
	}
	return ok
}

// plainEnum reads an enumeration member's value: one of values as its constant, any
// other as it is (for Validate to refuse).
func plainEnum[T ~string](p *plainParser, v *T, values []T) bool {
	t, ok := p.text()
	if !ok {
		return false
	}
	for _, known := range values {
		if string(t) == string(known) {
			*v = known
			return true
		}
	}
	*v = T(t)
	return true
}

// count reads a non-negative integer of at most 18 digits (an int64 whatever they are).
func (p *plainParser) count(v *int64) bool {
	p.space()
	start := p.pos
	var n int64
	for p.pos < len(p.in) && p.in[p.pos] >= '0' && p.in[p.pos] <= '9' {
		n = n*10 + int64(p.in[p.pos]-'0')
		p.pos++
	}
	// A fraction or an exponent would follow the digits where the object wants a comma
	// or its end, and is declined there.
	if digits := p.pos - start; digits == 0 || digits > 18 || digits > 1 && p.in[start] == '0' {
		return false
	}
	*v = n
	return true
}

// object reads an object whose members are among names, each at most once, reading
// each value with member (by the name's index).
func (p *plainParser) object(names []string, member func(i int) bool) bool {
	if !p.byte('{') {
		return false
	}
	if p.byte('}') {
		return true
	}
	var seen uint16
	for {
		name, ok := p.text()
		if !ok {
			return false
		}
		i := 0
		for i < len(names) && string(name) != names[i] {
			i++
		}
		if i == len(names) || seen&(1<<i) != 0 || !p.byte(':') || !member(i) {
			return false
		}
		seen |= 1 << i
		if p.byte('}') {
			return true
		}
		if !p.byte(',') {
			return false
		}
	}
}

// array reads an array, reading each element with element.
func (p *plainParser) array(element func() bool) bool {
	if !p.byte('[') {
		return false
	}
	if p.byte(']') {
		return true
	}
	for {
		if !element() {
			return false
		}
		if p.byte(']') {
			return true
		}
		if !p.byte(',') {
			return false
		}
	}
}

var (
	plainWorkloadNames       = []string{"name", "outcome", "time_horizon", "agent_count", "coordination", "systems", "authority", "accountability"}
	plainSystemNames         = []string{"category", "access", "side_effect", "data_class"}
	plainAuthorityNames      = []string{"actions", "approval_policy", "budget_control"}
	plainAccountabilityNames = []string{"evidence", "acceptance", "consequence", "retention"}
)

// workload reads the workload object into w.
func (p *plainParser) workload(w *Workload) bool {
	p.space()
	if p.byte(':') { // the delimiter after the member's name, when the decoder left it
		p.space()
	}
	p.start = p.pos
	ok := p.object(plainWorkloadNames, func(i int) bool {
		switch i {
		case 0:
			return p.str(&w.Name)
		case 1:
			return p.str(&w.Outcome)
		case 2:
			return plainEnum(p, &w.TimeHorizon, workloadTimeHorizons)
		case 3:
			return p.count(&w.AgentCount)
		case 4:
			return plainEnum(p, &w.Coordination, workloadCoordinations)
		case 5:
			return p.systems(&w.Systems)
		case 6:
			return p.authority(&w.Authority)
		default:
			return p.accountability(&w.Accountability)
		}
	})
	p.end = p.pos
	return ok
}

func (p *plainParser) systems(v *[]WorkloadSystem) bool {
	if p.peek() != '[' {
		return false
	}
	systems := make([]WorkloadSystem, 0, 4) // most workloads declare a few
	ok := p.array(func() bool {
		var s WorkloadSystem
		ok := p.object(plainSystemNames, func(i int) bool {
			switch i {
			case 0:
				return plainEnum(p, &s.Category, workloadCategories)
			case 1:
				return plainEnum(p, &s.Access, workloadAccesses)
			case 2:
				return plainEnum(p, &s.SideEffect, workloadSideEffects)
			default:
				return plainEnum(p, &s.DataClass, workloadDataClasses)
			}
		})
		systems = append(systems, s)
		return ok
	})
	*v = systems
	return ok
}

func (p *plainParser) authority(a *WorkloadAuthority) bool {
	return p.object(plainAuthorityNames, func(i int) bool {
		switch i {
		case 0:
			if p.peek() != '[' {
				return false
			}
			actions := make([]WorkloadAction, 0, 8)
			ok := p.array(func() bool {
				var act WorkloadAction
				ok := plainEnum(p, &act, workloadActions)
				actions = append(actions, act)
				return ok
			})
			a.Actions = actions
			return ok
		case 1:
			return plainEnum(p, &a.ApprovalPolicy, workloadApprovalPolicies)
		default:
			return plainEnum(p, &a.BudgetControl, workloadBudgetControls)
		}
	})
}

func (p *plainParser) accountability(c *WorkloadAccountability) bool {
	return p.object(plainAccountabilityNames, func(i int) bool {
		switch i {
		case 0:
			return plainEnum(p, &c.Evidence, workloadEvidences)
		case 1:
			return plainEnum(p, &c.Acceptance, workloadAcceptances)
		case 2:
			return plainEnum(p, &c.Consequence, workloadConsequences)
		default:
			return plainEnum(p, &c.Retention, workloadRetentions)
		}
	})
}
