package passwords

// Waiting is how many hashes wait for a slot of g (given a slot, a waiter no longer counts).
func (g *Gate) Waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting
}
