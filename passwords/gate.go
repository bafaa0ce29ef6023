package passwords

import (
	"context"
	"errors"
	"math"
	"runtime"
	"runtime/debug"
	"sync"
)

// HashMemory is the memory one Argon2id verification of a hash made here takes (its m
// parameter); a bcrypt comparison takes a few KiB.
const HashMemory = memoryKiB * 1024

// ErrBusy is a hash the gate could not run: its client already has as many hashes
// running or waiting as one client may, the gate has as many waiting as it keeps, or the
// request's context ended while it waited.
var ErrBusy = errors.New("passwords: too many password checks at once")

// Gate bounds the password hashes (Argon2id, bcrypt) a process computes at once, and
// shares them fairly among the clients that ask. An anonymous client decides how often
// the service hashes (every sign-in attempt hashes, for a known email or not), and each
// Argon2id hash takes HashMemory for tens of milliseconds of a core: without a bound, a
// few hundred parallel attempts took the process to gigabytes and its other requests
// waited seconds for a core.
//
// A hash runs in one of a few slots. When every slot is taken it waits its turn, and the
// turns go round the clients that have hashes waiting: a client flooding the gate waits
// behind its own attempts, not in front of the others'. Each client may have at most
// perClient hashes running or waiting; past that, or past maxWaiting waiting in all, or
// when the caller's context ends first, the hash is refused with ErrBusy at once (which
// costs a map lookup, not a hash).
type Gate struct {
	slots, perClient, maxWaiting int

	mu      sync.Mutex
	running int
	waiting int
	clients map[string]*gateClient
	ring    []*gateClient // clients with hashes waiting, in turn order
}

type gateClient struct {
	name   string
	active int             // running or waiting
	queue  []chan struct{} // its waiters, oldest first; closed when given a slot
	inRing bool
}

// DefaultGateSlots is how many hashes run at once by default: half the cores the
// process may use (at least one), so that a flood of sign-ins leaves the other half to
// every other request; and no more than a quarter of GOMEMLIMIT, when one is set, would
// hold in Argon2id blocks.
func DefaultGateSlots() int {
	n := max(1, runtime.GOMAXPROCS(0)/2)
	if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 {
		n = min(n, max(1, int(limit/4/HashMemory)))
	}
	return n
}

// NewGate returns a gate of slots hashes at once (DefaultGateSlots when 0 or less), with
// at most perClient per client (default 4) and maxWaiting waiting in all (default 64).
func NewGate(slots, perClient, maxWaiting int) *Gate {
	if slots <= 0 {
		slots = DefaultGateSlots()
	}
	if perClient <= 0 {
		perClient = 4
	}
	if maxWaiting <= 0 {
		maxWaiting = 64
	}
	return &Gate{slots: slots, perClient: perClient, maxWaiting: maxWaiting, clients: map[string]*gateClient{}}
}

// Slots is how many hashes the gate runs at once.
func (g *Gate) Slots() int { return g.slots }

// Acquire waits for a slot for client and returns its release (call it once the hash is
// done), or ErrBusy.
func (g *Gate) Acquire(ctx context.Context, client string) (release func(), err error) {
	g.mu.Lock()
	c := g.clients[client]
	if c == nil {
		c = &gateClient{name: client}
		g.clients[client] = c
	}
	if c.active >= g.perClient {
		g.forgetIdle(c)
		g.mu.Unlock()
		return nil, ErrBusy
	}
	if g.running < g.slots && len(g.ring) == 0 {
		g.running++
		c.active++
		g.mu.Unlock()
		return g.releaser(c), nil
	}
	if g.waiting >= g.maxWaiting {
		g.forgetIdle(c)
		g.mu.Unlock()
		return nil, ErrBusy
	}
	turn := make(chan struct{})
	c.active++
	c.queue = append(c.queue, turn)
	g.waiting++
	if !c.inRing {
		c.inRing = true
		g.ring = append(g.ring, c)
	}
	g.mu.Unlock()

	select {
	case <-turn:
		return g.releaser(c), nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-turn: // given a slot as the context ended: hand it on
		g.running--
		c.active--
		g.handOn()
		g.forgetIdle(c)
		return nil, ErrBusy
	default:
	}
	for i, w := range c.queue {
		if w == turn {
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			break
		}
	}
	c.active--
	g.waiting--
	if len(c.queue) == 0 {
		g.leaveRing(c)
	}
	g.forgetIdle(c)
	return nil, ErrBusy
}

// releaser returns the release of a slot c holds.
func (g *Gate) releaser(c *gateClient) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.running--
			c.active--
			g.handOn()
			g.forgetIdle(c)
		})
	}
}

// handOn gives free slots to the waiters, one client's oldest waiter at a time, in turn
// (g.mu held).
func (g *Gate) handOn() {
	for g.running < g.slots && len(g.ring) > 0 {
		c := g.ring[0]
		turn := c.queue[0]
		c.queue = c.queue[1:]
		g.waiting--
		g.running++
		g.ring = g.ring[1:]
		if len(c.queue) > 0 {
			g.ring = append(g.ring, c) // its next waiter goes to the back of the turn order
		} else {
			c.inRing = false
		}
		close(turn)
	}
}

// leaveRing takes c, which has no waiters left, out of the turn order (g.mu held).
func (g *Gate) leaveRing(c *gateClient) {
	if !c.inRing {
		return
	}
	c.inRing = false
	for i, r := range g.ring {
		if r == c {
			g.ring = append(g.ring[:i], g.ring[i+1:]...)
			return
		}
	}
}

// forgetIdle drops c once it has nothing running or waiting, so that the map holds the
// clients hashing now, not every client that ever did (g.mu held).
func (g *Gate) forgetIdle(c *gateClient) {
	if c.active == 0 && g.clients[c.name] == c {
		delete(g.clients, c.name)
	}
}

// Verify is Verify in one of g's slots, for client.
func (g *Gate) Verify(ctx context.Context, client, encoded, password string) (bool, error) {
	release, err := g.Acquire(ctx, client)
	if err != nil {
		return false, err
	}
	defer release()
	return Verify(encoded, password)
}
