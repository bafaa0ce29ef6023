// Package schema is the schema stage of Agent Work Receipt validation: the format's JSON
// Schema (draft 2020-12, embedded here with its license, NOTICE.md), compiled once with
// github.com/santhosh-tekuri/jsonschema/v6, and its errors turned into receipt issues.
// The other stages are package receipt's (receipt.ReceiptValidator).
package schema

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/accountablework/accountable/receipt"
)

//go:embed agent-work-receipt.v0.1.schema.json
var schemaJSON []byte

// SchemaJSON returns the embedded schema document.
func SchemaJSON() []byte { return slices.Clone(schemaJSON) }

// Schema is the compiled schema; it is a receipt.ReceiptSchema.
type Schema struct {
	compiled *jsonschema.Schema
	quick    *quickSchema // nil: every document goes to the library (quick.go)
}

var load = sync.OnceValues(compile)

// Load returns the compiled schema (compiled once per process).
func Load() (*Schema, error) { return load() }

// noLoader refuses every URL: the schema refers only to itself, and validation never
// fetches anything.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("receipt schema: %s is not loaded (only the embedded schema is)", url)
}

func compile() (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, fmt.Errorf("receipt schema: decode the schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat() // date-time and uri-reference are rules of the format, not annotations
	c.UseLoader(noLoader{})
	if err := c.AddResource(receipt.ReceiptSchemaURL, doc); err != nil {
		return nil, fmt.Errorf("receipt schema: %w", err)
	}
	s, err := c.Compile(receipt.ReceiptSchemaURL)
	if err != nil {
		return nil, fmt.Errorf("receipt schema: compile: %w", err)
	}
	quick, err := compileQuick(s)
	if err != nil { // the schema has a keyword the quick pass does not implement: the library alone
		quick = nil
	}
	return &Schema{compiled: s, quick: quick}, nil
}

// CheckReceipt validates doc (decoded with UseNumber) and returns an issue per leaf cause
// of the schema's verdict: code schema.<keyword>, path the JSON Pointer of the value (of
// the member itself for required and additionalProperties). Where anyOf or oneOf fail,
// the alternatives the value's type rules out are left out, and of the others only those
// closest to matching (fewest causes) are reported: the issue names what to fix, not every
// shape the value could have taken. When the type rules out every alternative, the one
// issue is schema.type.
func (s *Schema) CheckReceipt(doc any) []receipt.ReceiptIssue {
	if s.quick != nil && s.quick.check(doc, 0) == quickValid {
		return nil // the library would accept it too (quick.go); its errors are needed only otherwise
	}
	err := s.compiled.Validate(doc)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []receipt.ReceiptIssue{{Path: "", Code: "schema.invalid", Message: "The document could not be checked against the schema."}}
	}
	var out []receipt.ReceiptIssue
	collect(ve, &out)
	return out
}

// collect appends the issues of e's leaf causes.
func collect(e *jsonschema.ValidationError, out *[]receipt.ReceiptIssue) {
	switch e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		if len(e.Causes) > 0 {
			collectAlternatives(e, out)
			return
		}
	default:
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				collect(c, out)
			}
			return
		}
	}
	*out = append(*out, leafIssues(e)...)
}

// collectAlternatives reports a failed anyOf or oneOf (see CheckReceipt).
func collectAlternatives(e *jsonschema.ValidationError, out *[]receipt.ReceiptIssue) {
	var wanted []string
	var closest []*jsonschema.ValidationError
	fewest := 0
	for _, branch := range e.Causes {
		leaves := leavesOf(branch, nil)
		if types, ok := typeMismatches(leaves, e.InstanceLocation); ok {
			wanted = append(wanted, types...)
			continue
		}
		switch {
		case len(closest) == 0 || len(leaves) < fewest:
			closest, fewest = []*jsonschema.ValidationError{branch}, len(leaves)
		case len(leaves) == fewest:
			closest = append(closest, branch)
		}
	}
	if len(closest) == 0 {
		slices.Sort(wanted)
		got := ""
		if t, ok := leavesOf(e, nil)[0].ErrorKind.(*kind.Type); ok {
			got = t.Got
		}
		*out = append(*out, receipt.ReceiptIssue{Path: pointer(e.InstanceLocation), Code: "schema.type",
			Message: fmt.Sprintf("The value must be %s, not %s.", orList(slices.Compact(wanted)), got)})
		return
	}
	for _, b := range closest {
		collect(b, out)
	}
}

// leavesOf appends the leaf causes of e to acc.
func leavesOf(e *jsonschema.ValidationError, acc []*jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return append(acc, e)
	}
	for _, c := range e.Causes {
		acc = leavesOf(c, acc)
	}
	return acc
}

// typeMismatches reports whether every leaf is a type error of the value at loc (the
// alternative is of another type), and the types they want.
func typeMismatches(leaves []*jsonschema.ValidationError, loc []string) ([]string, bool) {
	var wanted []string
	for _, l := range leaves {
		t, ok := l.ErrorKind.(*kind.Type)
		if !ok || !slices.Equal(l.InstanceLocation, loc) {
			return nil, false
		}
		wanted = append(wanted, t.Want...)
	}
	return wanted, len(leaves) > 0
}

// leafIssues turns one leaf cause into issues.
func leafIssues(e *jsonschema.ValidationError) []receipt.ReceiptIssue {
	path := pointer(e.InstanceLocation)
	one := func(code, format string, args ...any) []receipt.ReceiptIssue {
		return []receipt.ReceiptIssue{{Path: path, Code: "schema." + code, Message: fmt.Sprintf(format, args...)}}
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		out := make([]receipt.ReceiptIssue, len(k.Missing))
		for i, m := range k.Missing {
			out[i] = receipt.ReceiptIssue{Path: path + "/" + escape(m), Code: "schema.required",
				Message: fmt.Sprintf("The required member %q is missing.", m)}
		}
		return out
	case *kind.AdditionalProperties:
		out := make([]receipt.ReceiptIssue, len(k.Properties))
		for i, p := range k.Properties {
			out[i] = receipt.ReceiptIssue{Path: path + "/" + escape(p), Code: "schema.additionalProperties",
				Message: fmt.Sprintf("The member %q is not allowed here.", p)}
		}
		return out
	case *kind.Type:
		return one("type", "The value must be %s, not %s.", orList(k.Want), k.Got)
	case *kind.Const:
		return one("const", "The value must be %s.", jsonText(k.Want))
	case *kind.Enum:
		return one("enum", "The value must be one of %s.", jsonText(k.Want))
	case *kind.Format:
		return one("format", "The value is not a valid %s.", k.Want)
	case *kind.Pattern:
		return one("pattern", "The string does not match the pattern %s.", k.Want)
	case *kind.MinLength:
		return one("minLength", "The string must have at least %d characters.", k.Want)
	case *kind.MaxLength:
		return one("maxLength", "The string must have at most %d characters.", k.Want)
	case *kind.MinItems:
		return one("minItems", "The array must have at least %d items.", k.Want)
	case *kind.MaxItems:
		return one("maxItems", "The array must have at most %d items.", k.Want)
	case *kind.Minimum:
		return one("minimum", "The number must be at least %s.", k.Want.RatString())
	case *kind.Maximum:
		return one("maximum", "The number must be at most %s.", k.Want.RatString())
	case *kind.OneOf:
		return one("oneOf", "The value matches more than one of the forms it may take (oneOf).")
	case *kind.Not:
		return one("not", "The value has a form it must not have (not).")
	case *kind.FalseSchema:
		return one("false", "No value is allowed here.")
	}
	keyword := "invalid"
	if kp := e.ErrorKind.KeywordPath(); len(kp) > 0 {
		keyword = kp[0]
	}
	return one(keyword, "The value does not satisfy the schema's %s rule.", keyword)
}

// pointer is the JSON Pointer of an instance location.
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escape(t))
	}
	return b.String()
}

func escape(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}

// orList writes "a, b or c".
func orList(items []string) string {
	switch len(items) {
	case 0:
		return "another type"
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
