package api

// StreamsOpenIn is the number of live event streams counted against workspaceID's bound.
func (s *Server) StreamsOpenIn(workspaceID string) int {
	_, n := s.leases.count("", workspaceID)
	return n
}
