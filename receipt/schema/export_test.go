package schema

// QuickVerdict is the quick pass's answer for doc: "valid", "invalid" or "unknown" (""
// when the schema has no quick pass).
func (s *Schema) QuickVerdict(doc any) string {
	if s.quick == nil {
		return ""
	}
	return [...]string{"unknown", "valid", "invalid"}[s.quick.check(doc, 0)]
}

// LibraryAccepts reports whether santhosh-tekuri/jsonschema accepts doc.
func (s *Schema) LibraryAccepts(doc any) bool { return s.compiled.Validate(doc) == nil }
