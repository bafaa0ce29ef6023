package api

// ProjectionStore is what the Projections area needs.
type ProjectionStore interface{}

// projectionOperations are the Projections area.
func (s *Server) projectionOperations() []operation { return nil }
