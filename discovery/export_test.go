package discovery

// MetadataIdentifierKey exposes metadataIdentifierKey to the external tests.
func MetadataIdentifierKey(k string) bool { return metadataIdentifierKey(k) }
