package api

// ArtifactStore is what the Artifacts, Deduplication and Content Studio areas need.
type ArtifactStore interface{}

// artifactOperations are the Artifacts, Deduplication and Content Studio areas.
func (s *Server) artifactOperations() []operation { return nil }
