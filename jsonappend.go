package accountable

import (
	"bytes"
	"encoding/json"
	"math"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// Hand-written encoders of answers read on every request (GET /work/{taskId}'s task):
// encoding/json's reflective pass was a tenth of the read's CPU. They write exactly the
// bytes json.Marshal writes (HTML escaping on, as Fiber's c.JSON encodes), which tests
// compare on random values; a new field of a type they encode must be added to its
// encoder too (the tests fail until it is).

const hexDigits = "0123456789abcdef"

// jsonPlainByte marks the bytes encoding/json writes as they are whatever follows them
// (its htmlSafeSet, ASCII only): all but control characters, " \\ < > & and the bytes
// of non-ASCII characters, which AppendJSONString looks at rune by rune.
var jsonPlainByte = func() (plain [256]bool) {
	for b := range utf8.RuneSelf {
		plain[b] = b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return plain
}()

// jsonPlainPrefix returns the length of the longest prefix of s made of jsonPlainByte
// bytes. It reads eight bytes at a time (most of the answer is plain ASCII), two words
// a round, and a string's last bytes as the word that ends it (overlapping bytes already
// read, which flag nothing: see jsonSpecialBytes), not byte by byte.
func jsonPlainPrefix(s string) int {
	i := 0
	for ; i+16 <= len(s); i += 16 {
		a, b := jsonSpecialBytes(leWord(s[i:])), jsonSpecialBytes(leWord(s[i+8:]))
		if a != 0 {
			return i + bits.TrailingZeros64(a)/8
		}
		if b != 0 {
			return i + 8 + bits.TrailingZeros64(b)/8
		}
	}
	if i+8 <= len(s) {
		if a := jsonSpecialBytes(leWord(s[i:])); a != 0 {
			return i + bits.TrailingZeros64(a)/8
		}
		i += 8
	}
	if i == len(s) {
		return i
	}
	if end := len(s) - 8; end >= 0 {
		if a := jsonSpecialBytes(leWord(s[end:])); a != 0 {
			return end + bits.TrailingZeros64(a)/8
		}
		return len(s)
	}
	for i < len(s) && jsonPlainByte[s[i]] {
		i++
	}
	return i
}

// leWord is the first eight bytes of s as a little-endian word (one load).
func leWord(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// jsonSpecialBytes flags (with its high bit) the lowest byte of the word x that is not a
// jsonPlainByte, with the bit tricks that find a zero byte or a byte below n in a word:
// each flags the lowest such byte exactly, and a borrow only runs upwards, out of a byte
// that is itself flagged, so the lowest flag of them all is the first byte to escape
// (bytes above it may be flagged wrongly; bytes below it never are). < and > differ in
// one bit, and so do " and &: one comparison finds either of a pair.
func jsonSpecialBytes(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	angle := (x | ones*0x02) ^ ones*'>' // zero at < and >
	quote := (x | ones*0x04) ^ ones*'&' // zero at " and &
	slash := x ^ ones*'\\'
	return (x | // non-ASCII
		(x-ones*0x20)&^x | // a control character
		(angle-ones)&^angle | (quote-ones)&^quote | (slash-ones)&^slash) & highs
}

// appendEscapedASCII appends the escape of the ASCII byte b, as encoding/json and RFC 8785
// both write it: \" \\ \b \f \n \r \t, anything else (other control characters, and for
// encoding/json < > &) as \u00xx.
func appendEscapedASCII(buf []byte, b byte) []byte {
	switch b {
	case '\\', '"':
		return append(buf, '\\', b)
	case '\b':
		return append(buf, '\\', 'b')
	case '\f':
		return append(buf, '\\', 'f')
	case '\n':
		return append(buf, '\\', 'n')
	case '\r':
		return append(buf, '\\', 'r')
	case '\t':
		return append(buf, '\\', 't')
	}
	return append(buf, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
}

// AppendJSONString appends s quoted as encoding/json quotes it with HTML escaping (the
// default of json.Marshal): \" \\ \b \f \n \r \t, other control characters and < > & as
// \u00xx, U+2028 and U+2029 as \u2028 and \u2029, invalid UTF-8 as \ufffd, everything
// else literally. Runs of plain bytes are copied in one append each.
func AppendJSONString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	for {
		n := jsonPlainPrefix(s)
		buf = append(buf, s[:n]...)
		s = s[n:]
		if s == "" {
			return append(buf, '"')
		}
		if b := s[0]; b < utf8.RuneSelf {
			buf = appendEscapedASCII(buf, b)
			s = s[1:]
			continue
		}
		c, size := utf8.DecodeRuneInString(s)
		switch {
		case c == utf8.RuneError && size == 1:
			buf = append(buf, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			buf = append(buf, s[:size]...)
		}
		s = s[size:]
	}
}

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

// appendJSONFloatPtr appends *f as AppendJSONFloat writes it (or null for nil); NaN and
// the infinities fail with json.Marshal's error.
func appendJSONFloatPtr(buf []byte, f *float64) ([]byte, error) {
	if f == nil {
		return append(buf, "null"...), nil
	}
	if math.IsNaN(*f) || math.IsInf(*f, 0) {
		_, err := json.Marshal(*f)
		return buf, err
	}
	return AppendJSONFloat(buf, *f), nil
}

// AppendJSONFloat appends the finite f as encoding/json writes a float64 (slog's
// JSONHandler writes floats through it too): the shortest digits that read back as f, in
// exponent form below 1e-6 and from 1e21 on, its exponent without a leading zero.
func AppendJSONFloat(buf []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	buf = strconv.AppendFloat(buf, f, format, -1, 64)
	if n := len(buf); format == 'e' && n >= 4 && buf[n-4] == 'e' && buf[n-3] == '-' && buf[n-2] == '0' {
		buf[n-2] = buf[n-1] // e-09 -> e-9
		buf = buf[:n-1]
	}
	return buf
}

// appendJSONMembers appends the members of r's JSON, each after a comma (the
// commands' results write them inline, after a member of their own).
func (r EventRef) appendJSONMembers(buf []byte) []byte {
	buf = append(buf, `,"eventId":`...)
	buf = AppendJSONString(buf, r.EventID)
	buf = append(buf, `,"aggregateVersion":`...)
	buf = strconv.AppendInt(buf, r.AggregateVersion, 10)
	buf = append(buf, `,"eventHash":`...)
	return AppendJSONString(buf, r.EventHash)
}

// AppendJSON appends r as json.Marshal encodes it.
func (r Receipt) AppendJSON(buf []byte) ([]byte, error) {
	buf = append(buf, `{"id":`...)
	buf = AppendJSONString(buf, r.ID)
	buf = append(buf, `,"task_id":`...)
	buf = AppendJSONString(buf, r.TaskID)
	buf = append(buf, `,"status":`...)
	buf = AppendJSONString(buf, r.Status)
	buf = append(buf, `,"summary":`...)
	buf = AppendJSONString(buf, r.Summary)
	buf = append(buf, `,"measured_duration_hours":`...)
	buf, err := appendJSONFloatPtr(buf, r.MeasuredDurationHours)
	if err != nil {
		return buf, err
	}
	buf = append(buf, `,"cost_cents":`...)
	buf = appendJSONIntPtr(buf, r.CostCents)
	buf = append(buf, `,"evidence":`...)
	if buf, err = r.Evidence.appendJSON(buf); err != nil {
		return buf, err
	}
	buf = append(buf, `,"created_at":`...)
	buf = r.CreatedAt.appendJSON(buf)
	return append(buf, '}'), nil
}

// AppendJSON appends w as json.Marshal encodes it: the store keeps it as the command's
// replay document, and a replay answers it.
func (w WorkCreated) AppendJSON(buf []byte) ([]byte, error) {
	buf = append(buf, `{"taskId":`...)
	buf = AppendJSONString(buf, w.TaskID)
	buf = w.EventRef.appendJSONMembers(buf)
	buf = append(buf, `,"duplicate":`...)
	buf = strconv.AppendBool(buf, w.Duplicate)
	buf = append(buf, `,"task":`...)
	buf, err := w.Task.AppendJSON(buf)
	if err != nil {
		return buf, err
	}
	return append(buf, '}'), nil
}

// AppendJSON appends w as json.Marshal encodes it (see WorkCreated.AppendJSON).
func (w WorkCompletion) AppendJSON(buf []byte) ([]byte, error) {
	buf = append(buf, `{"taskId":`...)
	buf = AppendJSONString(buf, w.TaskID)
	buf = append(buf, `,"receiptId":`...)
	buf = AppendJSONString(buf, w.ReceiptID)
	buf = w.EventRef.appendJSONMembers(buf)
	buf = append(buf, `,"duplicate":`...)
	buf = strconv.AppendBool(buf, w.Duplicate)
	buf = append(buf, `,"task":`...)
	buf, err := w.Task.AppendJSON(buf)
	if err != nil {
		return buf, err
	}
	buf = append(buf, `,"receipt":`...)
	if buf, err = w.Receipt.AppendJSON(buf); err != nil {
		return buf, err
	}
	return append(buf, '}'), nil
}

// JSONStringEnd is the index of the quote that closes the JSON string opening at text[i],
// -1 for one cut short: the next quote after an even run of backslashes (for the readers
// that skip or copy strings of JSON text they know to be valid).
func JSONStringEnd(text []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(text[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		escaped := false
		for p := j - 1; p > i && text[p] == '\\'; p-- {
			escaped = !escaped
		}
		if !escaped {
			return j
		}
		j++
	}
}
