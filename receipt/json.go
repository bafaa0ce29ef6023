package receipt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The input stage of receipt validation: one pass over the JSON text that checks it and
// decodes it at once (objects as map[string]any, arrays as []any, numbers as json.Number,
// as encoding/json with UseNumber decodes them), before any other stage sees it, so that a
// hostile document costs one bounded walk. It refuses, at the first problem and with the
// JSON Pointer of where it is:
//
//	input.size              more bytes than the limit (the server's body limit)
//	input.json              not one well-formed JSON value (RFC 8259; also an empty body,
//	                        trailing data)
//	input.unicode           invalid UTF-8, an unpaired UTF-16 surrogate escape, or U+0000
//	                        (which PostgreSQL's jsonb cannot store, so no receipt may carry it)
//	input.number            a number beyond the range of an IEEE-754 double (I-JSON, RFC 8785)
//	input.depth             objects and arrays nested deeper than MaxReceiptDepth
//	input.nodes             more than MaxReceiptNodes values
//	input.duplicate_member  an object naming a member twice (after escapes are decoded:
//	                        "member" and "m\u0065mber" are the same name), at the repeat
//
// encoding/json keeps the last of duplicate members and replaces invalid text with U+FFFD;
// this stage refuses both, so the document that is validated, hashed and stored is the one
// the producer wrote. (It is written by hand, as the standard library has no streaming
// decoder that sees duplicate members, and receipts were the stdlib-only root package's
// when it was written: encoding/json's Decoder.Token walk cost more than all the other
// stages together.)

// Input issue codes.
const (
	ReceiptInputSize            = "input.size"
	ReceiptInputJSON            = "input.json"
	ReceiptInputUnicode         = "input.unicode"
	ReceiptInputNumber          = "input.number"
	ReceiptInputDepth           = "input.depth"
	ReceiptInputNodes           = "input.nodes"
	ReceiptInputDuplicateMember = "input.duplicate_member"
)

// ScanReceiptJSON checks the JSON text raw and returns its first input problem (nil when
// there is none). maxBytes bounds its size (0: no bound).
func ScanReceiptJSON(raw []byte, maxBytes int) *ReceiptIssue {
	_, issue := DecodeReceiptJSON(raw, maxBytes)
	return issue
}

// DecodeReceiptJSON checks the JSON text raw and decodes it, or returns its first input
// problem. maxBytes bounds its size (0: no bound).
func DecodeReceiptJSON(raw []byte, maxBytes int) (any, *ReceiptIssue) {
	if maxBytes > 0 && len(raw) > maxBytes {
		return nil, &ReceiptIssue{Path: "", Code: ReceiptInputSize,
			Message: fmt.Sprintf("The document is %d bytes; at most %d are accepted.", len(raw), maxBytes)}
	}
	if len(bytes.TrimLeft(raw, " \t\r\n")) == 0 {
		return nil, &ReceiptIssue{Path: "", Code: ReceiptInputJSON, Message: "The body is empty: send the receipt document itself as JSON."}
	}
	if !utf8.Valid(raw) {
		return nil, &ReceiptIssue{Path: "", Code: ReceiptInputUnicode,
			Message: fmt.Sprintf("The document is not valid UTF-8 (byte %d).", invalidUTF8At(raw))}
	}
	p := &receiptParser{b: raw, text: string(raw)}
	v := p.value()
	if p.issue == nil {
		p.space()
		if p.i < len(p.b) {
			p.fail(ReceiptInputJSON, "The body holds more than one JSON value, or data after it (byte %d); send one receipt document.", p.i)
		}
	}
	if p.issue != nil {
		return nil, p.issue
	}
	return v, nil
}

// receiptParser is one pass of DecodeReceiptJSON over valid UTF-8.
type receiptParser struct {
	b []byte
	// text is b as one string: the strings without escapes and the numbers are slices of
	// it, one allocation for the document instead of one per value (they were a third of
	// a validation's allocations).
	text  string
	i     int
	nodes int
	path  []pathToken // where the value being read is
	issue *ReceiptIssue
}

// pathToken is a member name or an array index of the current path.
type pathToken struct {
	name  string
	index int // -1 for a member
}

// pointer is the JSON Pointer of the current path (made only for an issue).
func (p *receiptParser) pointer() string {
	var b strings.Builder
	for _, t := range p.path {
		b.WriteByte('/')
		if t.index >= 0 {
			b.WriteString(strconv.Itoa(t.index))
		} else {
			b.WriteString(escapePointer(t.name))
		}
	}
	return b.String()
}

func (p *receiptParser) fail(code, format string, args ...any) {
	if p.issue == nil {
		p.issue = &ReceiptIssue{Path: p.pointer(), Code: code, Message: fmt.Sprintf(format, args...)}
	}
}

// syntax reports malformed JSON at the current byte.
func (p *receiptParser) syntax(want string) {
	if p.i >= len(p.b) {
		p.fail(ReceiptInputJSON, "The document ends inside a JSON value (%s expected).", want)
		return
	}
	p.fail(ReceiptInputJSON, "The document is not well-formed JSON at byte %d: %s expected, %q found.", p.i, want, rune(p.b[p.i]))
}

func (p *receiptParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value reads one value (after any whitespace).
func (p *receiptParser) value() any {
	p.space()
	if p.i >= len(p.b) {
		p.syntax("a value")
		return nil
	}
	p.nodes++
	if p.nodes > MaxReceiptNodes {
		p.fail(ReceiptInputNodes, "The document has more than %d values.", MaxReceiptNodes)
		return nil
	}
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, _ := p.str()
		return s
	case c == 't':
		return p.literal("true", true)
	case c == 'f':
		return p.literal("false", false)
	case c == 'n':
		return p.literal("null", nil)
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	p.syntax("a value")
	return nil
}

// open checks the depth of a container about to be read.
func (p *receiptParser) open() bool {
	if depth := len(p.path) + 1; depth > MaxReceiptDepth { // the root is at depth 1
		p.fail(ReceiptInputDepth, "Objects and arrays are nested more than %d deep.", MaxReceiptDepth)
		return false
	}
	return true
}

func (p *receiptParser) object() any {
	if !p.open() {
		return nil
	}
	p.i++ // {
	obj := map[string]any{}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return obj
	}
	for {
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			p.syntax("a member name")
			return nil
		}
		name, ok := p.str()
		if !ok {
			return nil
		}
		p.path = append(p.path, pathToken{name: name, index: -1})
		if _, dup := obj[name]; dup {
			p.fail(ReceiptInputDuplicateMember, "The object names this member more than once; each member name may appear once.")
			return nil
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			p.syntax("':'")
			return nil
		}
		p.i++
		v := p.value()
		if p.issue != nil {
			return nil
		}
		obj[name] = v
		p.path = p.path[:len(p.path)-1]
		p.space()
		if p.i >= len(p.b) {
			p.syntax("',' or '}'")
			return nil
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return obj
		default:
			p.syntax("',' or '}'")
			return nil
		}
	}
}

func (p *receiptParser) array() any {
	if !p.open() {
		return nil
	}
	p.i++ // [
	arr := []any{}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return arr
	}
	for {
		p.path = append(p.path, pathToken{index: len(arr)})
		v := p.value()
		if p.issue != nil {
			return nil
		}
		arr = append(arr, v)
		p.path = p.path[:len(p.path)-1]
		p.space()
		if p.i >= len(p.b) {
			p.syntax("',' or ']'")
			return nil
		}
		switch p.b[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return arr
		default:
			p.syntax("',' or ']'")
			return nil
		}
	}
}

func (p *receiptParser) literal(word string, v any) any {
	if !bytes.HasPrefix(p.b[p.i:], []byte(word)) {
		p.syntax("a value")
		return nil
	}
	p.i += len(word)
	return v
}

// number reads a number as RFC 8259 writes it, kept as its text.
func (p *receiptParser) number() any {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.b[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.b) && p.b[p.i] == '0':
		p.i++
	case digits() == 0:
		p.syntax("a digit")
		return nil
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			p.syntax("a digit")
			return nil
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			p.syntax("a digit")
			return nil
		}
	}
	text := p.text[start:p.i]
	if f, _ := strconv.ParseFloat(text, 64); math.IsInf(f, 0) { // an underflow rounds to 0, as JSON.parse does
		p.fail(ReceiptInputNumber, "The number is beyond the range of an IEEE-754 double (I-JSON).")
		return nil
	}
	return json.Number(text)
}

// str reads a string (the text is valid UTF-8). It refuses control characters, bad
// escapes, unpaired surrogate escapes and U+0000.
func (p *receiptParser) str() (string, bool) {
	p.i++ // "
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := p.text[start:p.i]
			p.i++
			return s, true
		case c == '\\':
			return p.escaped(start)
		case c < 0x20:
			p.fail(ReceiptInputJSON, "The document is not well-formed JSON at byte %d: a control character in a string (escape it).", p.i)
			return "", false
		}
		p.i++
	}
	p.syntax("'\"'")
	return "", false
}

// escaped reads the rest of a string that has escapes, from its start.
func (p *receiptParser) escaped(start int) (string, bool) {
	out := append(make([]byte, 0, p.i-start+16), p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return string(out), true
		case c < 0x20:
			p.fail(ReceiptInputJSON, "The document is not well-formed JSON at byte %d: a control character in a string (escape it).", p.i)
			return "", false
		case c != '\\':
			out = append(out, c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.b) {
			break
		}
		switch e := p.b[p.i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := p.hex4(p.i + 2)
			if !ok {
				return "", false
			}
			p.i += 6
			switch {
			case r == 0:
				p.fail(ReceiptInputUnicode, "The string contains U+0000, which a stored receipt cannot carry.")
				return "", false
			case utf16.IsSurrogate(r):
				lo, ok := rune(-1), false
				if r < 0xDC00 && p.i+1 < len(p.b) && p.b[p.i] == '\\' && p.b[p.i+1] == 'u' {
					if lo, ok = p.hex4(p.i + 2); !ok {
						return "", false
					}
				}
				if lo < 0xDC00 || lo > 0xDFFF {
					p.fail(ReceiptInputUnicode, "The string escapes an unpaired UTF-16 surrogate; strings must be Unicode scalar values.")
					return "", false
				}
				p.i += 6
				r = utf16.DecodeRune(r, lo)
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			p.i++
			p.fail(ReceiptInputJSON, "The document is not well-formed JSON at byte %d: an unknown escape \\%c.", p.i, rune(e))
			return "", false
		}
		p.i += 2
	}
	p.syntax("'\"'")
	return "", false
}

// hex4 reads the four hex digits of a \u escape at i.
func (p *receiptParser) hex4(i int) (rune, bool) {
	if i+4 > len(p.b) {
		p.i = len(p.b)
		p.syntax("four hex digits")
		return 0, false
	}
	var r rune
	for _, c := range p.b[i : i+4] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			p.fail(ReceiptInputJSON, "The document is not well-formed JSON at byte %d: a \\u escape needs four hex digits.", i)
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

// escapePointer escapes a member name as a JSON Pointer reference token (RFC 6901).
func escapePointer(name string) string {
	if !strings.ContainsAny(name, "~/") {
		return name
	}
	return strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}

// invalidUTF8At returns the offset of the first byte of raw that is not valid UTF-8.
func invalidUTF8At(raw []byte) int {
	for i := 0; i < len(raw); {
		r, size := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(raw)
}
