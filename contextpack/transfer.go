// Package contextpack builds context capsules (the accountable.ContextCapsule of POST
// /context-pack) and the transfers that carry them:
//
//   - the text is the RFC 8785 canonical JSON of {context_capsule, context_delivery},
//     indented one member or element per line, so that a change of one item changes a few
//     lines and a line delta stays small;
//   - a version is "sha256:" + the hex SHA-256 of the text's UTF-8 bytes;
//   - a delta is a list of operations against the base text's lines (each line ends after
//     its "\n"; the last may have none): {"copy": [start, count]} of whole base lines, or
//     {"insert": text}; its lines come from a Myers line diff (github.com/sergi/go-diff);
//   - tokens are counted with the reader's BPE vocabulary (tiktoken-go with its
//     vocabularies embedded, loaded on first use: nothing is downloaded).
//
// The package imports no layer of the service: the domain types, canonical JSON and its
// libraries.
package contextpack

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// Serialize returns the text of v: its canonical JSON, indented one member or element per
// line with one space a level (the indentation changes no member order, number or
// string of the canonical form).
func Serialize(v any) (string, error) { return serializeAt(v, 0) }

// Version is the version of text: "sha256:" + the hex SHA-256 of its UTF-8 bytes.
func Version(text string) string { return canonical.Digest([]byte(text)) }

// Lines splits text after each "\n"; the last line may have none. An empty text has none.
func Lines(text string) []string {
	lines := make([]string, 0, strings.Count(text, "\n")+1)
	for len(text) > 0 {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			lines = append(lines, text)
			break
		}
		lines = append(lines, text[:i+1])
		text = text[i+1:]
	}
	return lines
}

// diffTimeout bounds the line diff's search: past it the diff is still exact, only less
// minimal.
const diffTimeout = 200 * time.Millisecond

// Delta returns the operations that make next from base's lines: whole lines of base that
// next keeps are copied, the others inserted. Apply(base, Delta(base, next)) == next.
func Delta(base, next string) []accountable.ContextOperation {
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = diffTimeout
	// Each line becomes one rune, so the diff is a diff of lines.
	a, b, lineArray := dmp.DiffLinesToRunes(base, next)
	diffs := dmp.DiffMainRunes(a, b, false)
	counts := make([]int, len(diffs))
	for i, d := range diffs {
		counts[i] = utf8.RuneCountInString(d.Text)
	}
	diffs = dmp.DiffCharsToLines(diffs, lineArray)

	var ops []accountable.ContextOperation
	var pending strings.Builder // inserted text, merged until the next copy
	flush := func() {
		if pending.Len() > 0 {
			s := pending.String()
			ops = append(ops, accountable.ContextOperation{Insert: &s})
			pending.Reset()
		}
	}
	line := int64(0)
	for i, d := range diffs {
		n := int64(counts[i])
		switch d.Type {
		case diffmatchpatch.DiffEqual:
			flush()
			span := [2]int64{line, n}
			ops = append(ops, accountable.ContextOperation{Copy: &span})
			line += n
		case diffmatchpatch.DiffDelete:
			line += n
		case diffmatchpatch.DiffInsert:
			pending.WriteString(d.Text)
		}
	}
	flush()
	return ops
}

// Apply rebuilds a text from base and a delta's operations, by the clients' rules: each
// operation has exactly one of insert and copy; a copy's start is at least 0, its count at
// least 1, and both within base's lines; the text is at most
// accountable.ContextTransferMaxBytes.
func Apply(base string, ops []accountable.ContextOperation) (string, error) {
	if len(ops) > accountable.ContextTransferMaxOperations {
		return "", fmt.Errorf("contextpack: %d operations, more than %d", len(ops), accountable.ContextTransferMaxOperations)
	}
	lines := Lines(base)
	var out strings.Builder
	for i, op := range ops {
		switch {
		case op.Insert != nil && op.Copy == nil:
			out.WriteString(*op.Insert)
		case op.Copy != nil && op.Insert == nil:
			start, count := op.Copy[0], op.Copy[1]
			if start < 0 || count <= 0 || start+count > int64(len(lines)) {
				return "", fmt.Errorf("contextpack: operation %d copies lines [%d, %d) of %d", i, start, start+count, len(lines))
			}
			for _, l := range lines[start : start+count] {
				out.WriteString(l)
			}
		default:
			return "", fmt.Errorf("contextpack: operation %d is neither one insert nor one copy", i)
		}
		if out.Len() > accountable.ContextTransferMaxBytes {
			return "", errors.New("contextpack: the text is over the transfer bound")
		}
	}
	return out.String(), nil
}

// DeltaBytes is what a delta's operations weigh as JSON.
func DeltaBytes(ops []accountable.ContextOperation) int {
	b, err := json.Marshal(ops)
	if err != nil {
		return 0
	}
	return len(b)
}
