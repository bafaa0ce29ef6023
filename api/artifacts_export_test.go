package api

// EntityReads and ArtifactRelationships are entityReads and artifactRelationships, for the
// tests of package api_test.
var (
	EntityReads           = entityReads
	ArtifactRelationships = artifactRelationships
)
