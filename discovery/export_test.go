package discovery

// MetadataIdentifierKey exposes metadataIdentifierKey to the external tests.
func MetadataIdentifierKey(k string) bool { return metadataIdentifierKey(k) }

// JSONBText exposes jsonbText to the external tests.
func JSONBText(raw []byte) string { return jsonbText(raw) }
