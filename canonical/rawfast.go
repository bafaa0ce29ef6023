package canonical

import (
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The canonical form of JSON text that is not canonical already (a client's metadata with
// its members in the client's order, say), made in one pass over the text: values are
// written as they are read, each object's members sorted by name once its values are
// written. It handles the text a client sends, and gives up on anything unusual (invalid
// or trailing text, a repeated member name, a lone surrogate, a number beyond double
// range, nesting at the bound): raw then canonicalises it the long way, through
// encoding/json, which decides what such text means and how it fails. FuzzRawFast holds the
// two to the same bytes wherever the fast pass answers.

// rawFast appends the canonical form of raw, found depth objects and arrays deep within an
// encoder bounded at limit, to buf; ok is false (and buf unchanged) where it gives up.
func rawFast(buf, raw []byte, depth, limit int) (out []byte, ok bool) {
	p := rawParser{b: raw, limit: limit}
	p.space()
	out, ok = p.value(buf, depth)
	if p.space(); !ok || p.i != len(raw) {
		return buf, false
	}
	return out, true
}

type rawParser struct {
	b     []byte
	i     int
	limit int
}

// space skips JSON whitespace.
func (p *rawParser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value appends the canonical form of the value at p.i, inside depth objects and arrays.
func (p *rawParser) value(out []byte, depth int) ([]byte, bool) {
	if p.i >= len(p.b) {
		return out, false
	}
	switch b := p.b[p.i]; {
	case b == '{':
		if depth >= p.limit {
			return out, false
		}
		return p.object(out, depth+1)
	case b == '[':
		if depth >= p.limit {
			return out, false
		}
		return p.array(out, depth+1)
	case b == '"':
		text, escaped, ok := p.string()
		switch {
		case !ok:
			return out, false
		case escaped:
			return AppendString(out, string(text)), true
		}
		// Unescaped, valid UTF-8 and free of control characters: canonical as it is.
		out = append(out, '"')
		out = append(out, text...)
		return append(out, '"'), true
	case b == 't':
		return p.literal(out, "true")
	case b == 'f':
		return p.literal(out, "false")
	case b == 'n':
		return p.literal(out, "null")
	case b == '-' || (b >= '0' && b <= '9'):
		return p.number(out)
	}
	return out, false
}

func (p *rawParser) literal(out []byte, word string) ([]byte, bool) {
	if len(p.b)-p.i < len(word) || string(p.b[p.i:p.i+len(word)]) != word {
		return out, false
	}
	p.i += len(word)
	return append(out, word...), true
}

// number appends a number in ECMAScript form: an integer of at most 15 digits as it is
// (not -0), anything else through its double.
func (p *rawParser) number(out []byte) ([]byte, bool) {
	start := p.i
	if p.b[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	n := p.i - digits
	if n == 0 || (p.b[digits] == '0' && n > 1) {
		return out, false
	}
	integer := true
	if p.i < len(p.b) && p.b[p.i] == '.' {
		integer = false
		p.i++
		if !p.digits() {
			return out, false
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		integer = false
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if !p.digits() {
			return out, false
		}
	}
	text := p.b[start:p.i]
	if integer && n <= 15 && !(p.b[digits] == '0' && digits > start) {
		return append(out, text...), true
	}
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil {
		return out, false
	}
	return AppendNumber(out, f), true
}

// digits skips one or more digits.
func (p *rawParser) digits() bool {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}

// string reads the string at p.i: its text as a slice of the input when it has no escapes,
// else decoded into a new slice (escaped true). Invalid UTF-8, a control character and a
// lone surrogate give up.
func (p *rawParser) string() (text []byte, escaped, ok bool) {
	p.i++ // the opening quote
	start := p.i
	for p.i < len(p.b) {
		switch b := p.b[p.i]; {
		case b == '"':
			text = p.b[start:p.i]
			p.i++
			return text, false, true
		case b == '\\':
			return p.escapedString(start)
		case b < 0x20:
			return nil, false, false
		case b < utf8.RuneSelf:
			p.i++
		default:
			r, size := utf8.DecodeRune(p.b[p.i:])
			if r == utf8.RuneError && size == 1 {
				return nil, false, false
			}
			p.i += size
		}
	}
	return nil, false, false
}

// escapedString decodes the rest of a string with escapes, from its first escape at p.i;
// the text before it starts at start.
func (p *rawParser) escapedString(start int) (text []byte, escaped, ok bool) {
	text = append(make([]byte, 0, p.i-start+16), p.b[start:p.i]...)
	for p.i < len(p.b) {
		b := p.b[p.i]
		switch {
		case b == '"':
			p.i++
			return text, true, true
		case b < 0x20:
			return nil, false, false
		case b == '\\':
			if p.i+1 >= len(p.b) {
				return nil, false, false
			}
			e := p.b[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				text = append(text, e)
			case 'b':
				text = append(text, '\b')
			case 'f':
				text = append(text, '\f')
			case 'n':
				text = append(text, '\n')
			case 'r':
				text = append(text, '\r')
			case 't':
				text = append(text, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return nil, false, false
				}
				if utf16.IsSurrogate(r) {
					// Only a high surrogate followed by an escaped low one is a character.
					if r >= 0xDC00 || p.i+1 >= len(p.b) || p.b[p.i] != '\\' || p.b[p.i+1] != 'u' {
						return nil, false, false
					}
					p.i += 2
					lo, ok := p.hex4()
					if !ok || lo < 0xDC00 || lo > 0xDFFF {
						return nil, false, false
					}
					r = utf16.DecodeRune(r, lo)
				}
				text = utf8.AppendRune(text, r)
			default:
				return nil, false, false
			}
		case b < utf8.RuneSelf:
			text = append(text, b)
			p.i++
		default:
			r, size := utf8.DecodeRune(p.b[p.i:])
			if r == utf8.RuneError && size == 1 {
				return nil, false, false
			}
			text = append(text, p.b[p.i:p.i+size]...)
			p.i += size
		}
	}
	return nil, false, false
}

// hex4 reads the four hex digits of a \u escape.
func (p *rawParser) hex4() (rune, bool) {
	if len(p.b)-p.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p.b[p.i : p.i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	p.i += 4
	return r, true
}

func (p *rawParser) array(out []byte, depth int) ([]byte, bool) {
	p.i++ // [
	out = append(out, '[')
	p.space()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return append(out, ']'), true
	}
	for {
		var ok bool
		if out, ok = p.value(out, depth); !ok {
			return out, false
		}
		p.space()
		if p.i >= len(p.b) {
			return out, false
		}
		switch p.b[p.i] {
		case ',':
			p.i++
			out = append(out, ',')
			p.space()
		case ']':
			p.i++
			return append(out, ']'), true
		default:
			return out, false
		}
	}
}

// rawMember is an object's member while the object is read: its name (decoded) and where
// its canonical value lies in the object's value buffer.
type rawMember struct {
	name       []byte
	escaped    bool
	start, end int
}

func (p *rawParser) object(out []byte, depth int) ([]byte, bool) {
	p.i++ // {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return append(out, '{', '}'), true
	}
	var small [16]rawMember
	members := small[:0]
	var values []byte
	for {
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return out, false
		}
		name, escaped, ok := p.string()
		if !ok {
			return out, false
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return out, false
		}
		p.i++
		p.space()
		m := rawMember{name: name, escaped: escaped, start: len(values)}
		if values, ok = p.value(values, depth); !ok {
			return out, false
		}
		m.end = len(values)
		members = append(members, m)
		p.space()
		if p.i >= len(p.b) {
			return out, false
		}
		if p.b[p.i] == '}' {
			p.i++
			break
		}
		if p.b[p.i] != ',' {
			return out, false
		}
		p.i++
		p.space()
	}
	slices.SortFunc(members, func(a, b rawMember) int { return compareUTF16Bytes(a.name, b.name) })
	out = append(out, '{')
	for k, m := range members {
		if k > 0 {
			if string(members[k-1].name) == string(m.name) {
				return out, false // a repeated name: which value counts is encoding/json's to say
			}
			out = append(out, ',')
		}
		if m.escaped {
			out = AppendString(out, string(m.name))
		} else {
			out = append(out, '"')
			out = append(out, m.name...)
			out = append(out, '"')
		}
		out = append(out, ':')
		out = append(out, values[m.start:m.end]...)
	}
	return append(out, '}'), true
}
