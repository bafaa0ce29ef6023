package api

// ConnUnused reports whether the connection from the client address remote has been
// accepted and has sent nothing yet (it is among those a shutdown closes).
func (s *Server) ConnUnused(remote string) bool {
	dl := s.listener.Load()
	if dl == nil {
		return false
	}
	dl.mu.Lock()
	defer dl.mu.Unlock()
	for c := range dl.unused {
		if c.RemoteAddr().String() == remote {
			return true
		}
	}
	return false
}
