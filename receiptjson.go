package accountable

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The input stage of receipt validation: one streaming pass over the JSON text, before
// anything is decoded, so that a hostile document costs at most one bounded walk. It
// refuses, at the first problem and with the JSON Pointer of where it is:
//
//	input.size              more bytes than the limit (the server's body limit)
//	input.json              not one well-formed JSON value (also: an empty body, trailing data)
//	input.unicode           invalid UTF-8, an unpaired UTF-16 surrogate escape, or U+0000
//	                        (which PostgreSQL's jsonb cannot store, so no receipt may carry it)
//	input.number            a number beyond the range of an IEEE-754 double (I-JSON, RFC 8785)
//	input.depth             objects and arrays nested deeper than MaxReceiptDepth
//	input.nodes             more than MaxReceiptNodes values
//	input.duplicate_member  an object naming a member twice (after escapes are decoded:
//	                        "member" and "m\u0065mber" are the same name), at the repeat
//
// encoding/json keeps the last of duplicate members and decodes invalid text leniently;
// the walk refuses both, so the document that is validated, hashed and stored is the one
// the producer wrote.

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

// scanFrame is an open object or array of the walk.
type scanFrame struct {
	path   string // JSON Pointer of the container
	object bool
	names  map[string]struct{} // member names seen (objects)
	member string              // the current member's name (objects)
	key    bool                // the next token is a member name (objects)
	index  int                 // the next element's index (arrays)
}

// childPath is the JSON Pointer of the value the frame holds next.
func (f *scanFrame) childPath() string {
	if f.object {
		return f.path + "/" + escapePointer(f.member)
	}
	return f.path + "/" + strconv.Itoa(f.index)
}

// escapePointer escapes a member name as a JSON Pointer reference token (RFC 6901).
func escapePointer(name string) string {
	if !strings.ContainsAny(name, "~/") {
		return name
	}
	return strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}

// ScanReceiptJSON walks the JSON text raw once and returns the first input problem (nil
// when there is none). maxBytes bounds its size (0: no bound).
func ScanReceiptJSON(raw []byte, maxBytes int) *ReceiptIssue {
	if maxBytes > 0 && len(raw) > maxBytes {
		return &ReceiptIssue{Path: "", Code: ReceiptInputSize,
			Message: fmt.Sprintf("The document is %d bytes; at most %d are accepted.", len(raw), maxBytes)}
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return &ReceiptIssue{Path: "", Code: ReceiptInputJSON, Message: "The body is empty: send the receipt document itself as JSON."}
	}
	if !utf8.Valid(raw) {
		return &ReceiptIssue{Path: "", Code: ReceiptInputUnicode,
			Message: fmt.Sprintf("The document is not valid UTF-8 (byte %d).", invalidUTF8At(raw))}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var stack []*scanFrame
	nodes := 0
	var prev int64
	here := func() string { // the pointer of the value being read
		if len(stack) == 0 {
			return ""
		}
		top := stack[len(stack)-1]
		if top.object && top.key {
			return top.path
		}
		return top.childPath()
	}
	// completed moves the innermost container past the value that just ended.
	completed := func() {
		if len(stack) == 0 {
			return
		}
		top := stack[len(stack)-1]
		if top.object {
			top.key = true
		} else {
			top.index++
		}
	}
	for started := false; !started || len(stack) > 0; started = true {
		tok, err := dec.Token()
		if err != nil {
			return syntaxIssue(here(), err, len(stack) > 0 || !started)
		}
		seg := raw[prev:dec.InputOffset()]
		prev = dec.InputOffset()
		var top *scanFrame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				completed()
				continue
			}
			name := tok.(string) // the decoder allows only a name or '}' here
			path := top.path + "/" + escapePointer(name)
			if issue := checkString(path, name, seg); issue != nil {
				return issue
			}
			if _, dup := top.names[name]; dup {
				return &ReceiptIssue{Path: path, Code: ReceiptInputDuplicateMember,
					Message: "The object names this member more than once; each member name may appear once."}
			}
			top.names[name] = struct{}{}
			top.member, top.key = name, false
			continue
		}
		if d, ok := tok.(json.Delim); ok && d == ']' {
			stack = stack[:len(stack)-1]
			completed()
			continue
		}
		path := here()
		nodes++
		if nodes > MaxReceiptNodes {
			return &ReceiptIssue{Path: path, Code: ReceiptInputNodes,
				Message: fmt.Sprintf("The document has more than %d values.", MaxReceiptNodes)}
		}
		switch v := tok.(type) {
		case json.Delim: // '{' or '['
			if len(stack)+1 > MaxReceiptDepth {
				return &ReceiptIssue{Path: path, Code: ReceiptInputDepth,
					Message: fmt.Sprintf("Objects and arrays are nested more than %d deep.", MaxReceiptDepth)}
			}
			f := &scanFrame{path: path, object: v == '{'}
			if f.object {
				f.names, f.key = map[string]struct{}{}, true
			}
			stack = append(stack, f)
			continue
		case string:
			if issue := checkString(path, v, seg); issue != nil {
				return issue
			}
		case json.Number:
			if f, _ := strconv.ParseFloat(string(v), 64); math.IsInf(f, 0) { // an underflow rounds to 0, as JSON.parse does
				return &ReceiptIssue{Path: path, Code: ReceiptInputNumber,
					Message: "The number is beyond the range of an IEEE-754 double (I-JSON)."}
			}
		}
		completed()
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			return &ReceiptIssue{Path: "", Code: ReceiptInputJSON, Message: "The body holds more than one JSON value; send one receipt document."}
		}
		return syntaxIssue("", err, false)
	}
	return nil
}

// syntaxIssue describes a decoding failure at path; open says the text ended (or failed)
// inside a value.
func syntaxIssue(path string, err error, open bool) *ReceiptIssue {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return &ReceiptIssue{Path: path, Code: ReceiptInputJSON,
			Message: fmt.Sprintf("The document is not well-formed JSON at byte %d: %s.", se.Offset, se.Error())}
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || open:
		return &ReceiptIssue{Path: path, Code: ReceiptInputJSON, Message: "The document ends inside a JSON value."}
	}
	return &ReceiptIssue{Path: path, Code: ReceiptInputJSON, Message: "The document is not well-formed JSON."}
}

// checkString refuses a decoded string (a value or a member name) with U+0000, or whose
// text (seg: the token with the separators before it) escapes an unpaired surrogate,
// which encoding/json would silently replace by U+FFFD.
func checkString(path, decoded string, seg []byte) *ReceiptIssue {
	if strings.IndexByte(decoded, 0) >= 0 {
		return &ReceiptIssue{Path: path, Code: ReceiptInputUnicode,
			Message: "The string contains U+0000, which a stored receipt cannot carry."}
	}
	if bytes.Contains(seg, []byte(`\u`)) && hasUnpairedSurrogate(seg) {
		return &ReceiptIssue{Path: path, Code: ReceiptInputUnicode,
			Message: "The string escapes an unpaired UTF-16 surrogate; strings must be Unicode scalar values."}
	}
	return nil
}

// hasUnpairedSurrogate reports whether the escapes of the JSON string text s (one token,
// possibly with separators around it) include a high surrogate not followed by a low one,
// or a low one without a high one before it.
func hasUnpairedSurrogate(s []byte) bool {
	pendingHigh := false
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			if pendingHigh {
				return true
			}
			continue
		}
		if s[i+1] != 'u' || i+6 > len(s) {
			if pendingHigh {
				return true
			}
			i++ // an escape of one character (\" \\ \n ...)
			continue
		}
		r, err := strconv.ParseUint(string(s[i+2:i+6]), 16, 32)
		if err != nil {
			return true // the decoder accepted it, so this cannot happen
		}
		i += 5
		switch {
		case r >= 0xD800 && r <= 0xDBFF:
			if pendingHigh {
				return true
			}
			pendingHigh = true
		case r >= 0xDC00 && r <= 0xDFFF:
			if !pendingHigh {
				return true
			}
			pendingHigh = false
		default:
			if pendingHigh {
				return true
			}
		}
	}
	return pendingHigh
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
