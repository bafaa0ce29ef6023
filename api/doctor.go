package api

// doctorOperations are the Workload diagnosis area.
func (s *Server) doctorOperations() []operation { return nil }
