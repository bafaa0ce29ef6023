package api

import "time"

// SetPictureWait sets how long a picture waits for its workspace's previous one (before
// any request: it replaces the turns).
func (s *Server) SetPictureWait(d time.Duration) { s.pictureTurns = newInFlight(1, d) }

// HoldPictureTurn takes workspaceID's turn to have a picture drawn, as a request drawing
// one does, until release.
func (s *Server) HoldPictureTurn(workspaceID string) (release func(), ok bool) {
	return s.pictureTurns.acquire(workspaceID)
}
