package accountable

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Hand-written encoders of answers read on every request (GET /work/{taskId}'s task):
// encoding/json's reflective pass was a tenth of the read's CPU. They write exactly the
// bytes json.Marshal writes (HTML escaping on, as Fiber's c.JSON encodes), which tests
// compare on random values; a new field of a type they encode must be added to its
// encoder too (the tests fail until it is).

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s quoted as encoding/json quotes it with HTML escaping (the
// default of json.Marshal): \" \\ \b \f \n \r \t, other control characters and < > & as
// \u00xx, U+2028 and U+2029 as \u2028 and \u2029, invalid UTF-8 as \ufffd, everything
// else literally.
func AppendJSONString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if jsonPlainASCII[b] {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch b {
			case '\\', '"':
				buf = append(buf, '\\', b)
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}

// jsonPlainASCII marks the ASCII bytes encoding/json writes as they are (its htmlSafeSet):
// all but control characters, " \\ < > and &.
var jsonPlainASCII = func() (plain [utf8.RuneSelf]bool) {
	for b := range plain {
		plain[b] = b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return plain
}()

// appendJSONStringPtr appends *s, or null for nil.
func appendJSONStringPtr(buf []byte, s *string) []byte {
	if s == nil {
		return append(buf, "null"...)
	}
	return AppendJSONString(buf, *s)
}

// appendJSONIntPtr appends *n, or null for nil.
func appendJSONIntPtr(buf []byte, n *int64) []byte {
	if n == nil {
		return append(buf, "null"...)
	}
	return strconv.AppendInt(buf, *n, 10)
}

// appendJSON appends t as its MarshalJSON renders it.
func (t Time) appendJSON(buf []byte) []byte {
	buf = append(buf, '"')
	buf = appendTime(buf, t.Time)
	return append(buf, '"')
}

// appendJSONTimePtr appends *t, or null for nil.
func appendJSONTimePtr(buf []byte, t *Time) []byte {
	if t == nil {
		return append(buf, "null"...)
	}
	return t.appendJSON(buf)
}

// appendJSON appends o as json.Marshal writes what its MarshalJSON returns: compacted
// (whitespace between tokens dropped) with < > & and U+2028, U+2029 escaped in its
// strings. Its text is not JSON only if it did not come from the store or a decoded
// request; json.Marshal's error is returned then.
func (o Object) appendJSON(buf []byte) ([]byte, error) {
	if len(o) == 0 {
		return append(buf, "{}"...), nil
	}
	if !json.Valid(o) {
		_, err := json.Marshal(o)
		return buf, err
	}
	// As encoding/json's appendCompact, with its scanner's one question asked directly:
	// is this byte whitespace between tokens (outside a string)?
	inString, escaped := false, false
	start := 0
	for i := 0; i < len(o); i++ {
		c := o[i]
		switch {
		case c == '<' || c == '>' || c == '&':
			buf = append(buf, o[start:i]...)
			buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			start = i + 1
		case c == 0xE2 && i+2 < len(o) && o[i+1] == 0x80 && o[i+2]&^1 == 0xA8:
			buf = append(buf, o[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[o[i+2]&0xF])
			start = i + 3
			i += 2
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			buf = append(buf, o[start:i]...)
			start = i + 1
		}
	}
	return append(buf, o[start:]...), nil
}
