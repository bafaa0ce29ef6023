package api

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"filippo.io/torchwood"
	"github.com/gofiber/fiber/v2"
	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/ledgerlog"
)

// The transparency log of each workspace's ledger (package ledgerlog), as clients read it:
// the newest signed checkpoint, inclusion and consistency proofs as JSON, and the log in
// the C2SP tlog-tiles layout under /events/log/, so that a generic tlog client can audit a
// workspace from its tiles alone. The ledger sealer (worker) signs the checkpoints off the
// request path; these operations only read what it stored, and hand out nothing a
// checkpoint has not signed.

// LedgerLogStore is what the transparency log's operations need.
type LedgerLogStore interface {
	LedgerCheckpoint(ctx context.Context, workspaceID string) (accountable.LedgerCheckpoint, error)
	LedgerCheckpointsAt(ctx context.Context, workspaceID string, sizes ...int64) ([]accountable.LedgerCheckpoint, error)
	LedgerLeafIn(ctx context.Context, workspaceID, eventID string, size int64) (accountable.LedgerLeaf, accountable.LedgerCheckpoint, error)
	ProveLedgerInclusion(ctx context.Context, workspaceID string, index, size int64) (tlog.RecordProof, error)
	ProveLedgerConsistency(ctx context.Context, workspaceID string, from, to int64) (tlog.TreeProof, error)
	LedgerWitnessStatus(ctx context.Context, workspaceID string) ([]accountable.LedgerWitness, error)
	LedgerLogTile(ctx context.Context, workspaceID string, t tlog.Tile, treeSize int64) ([]byte, error)
	LedgerLogEntries(ctx context.Context, workspaceID string, start, count int64) ([][]byte, error)
}

// ledgerLogStore is the store of the transparency log's operations.
var ledgerLogStore = needsStore[LedgerLogStore]()

// Rank 175: after the rest of the Events area (170), whose routes take none of these.
func init() { servesOperations(175, (*Server).ledgerLogOperations) }

// Cache-Control of the C2SP endpoints: a tile never changes once served (a partial tile
// is a prefix of the full one, under its own name), but it is behind a credential, so
// only the client may keep it; the checkpoint moves with every seal.
const (
	cacheImmutable = "private, max-age=31536000, immutable"
	cacheNoStore   = "no-store"
)

// ledgerLogOperations are the transparency log's operations, in the Events area.
func (s *Server) ledgerLogOperations() []operation {
	return []operation{
		op(Operation{ID: "getLedgerCheckpoint", Method: fiber.MethodGet, Path: "/events/checkpoint", Area: "Events",
			Summary: "The newest signed checkpoint of the workspace's transparency log: its origin, size, root hash, " +
				"the C2SP signed note verbatim, and the log's public key.",
			Description: "Each workspace's ledger is a transparency log whose leaves are its events in stream order (each entry " +
				"the canonical JSON of an event's header, whose SHA-256 is its eventHash). The ledger sealer signs a checkpoint " +
				"within seconds of new events; until a workspace's first one, this answers 404 not_found. Check the note " +
				"with the public key (GET /events/log/key) before trusting treeSize and rootHash."},
			s.getLedgerCheckpoint),
		op(Operation{ID: "proveLedgerConsistency", Method: fiber.MethodGet, Path: "/events/consistency", Area: "Events",
			Summary: "Prove that the workspace's log at size `to` extends the log at size `from`: the consistency proof " +
				"and the signed checkpoints of both sizes.",
			Description: "Both sizes must be sizes the log was signed at (404 not_found otherwise), or from 0, the empty tree, " +
				"which every log extends; from ≤ to (400 validation_failed otherwise). A client keeps the last checkpoint it " +
				"checked and asks for the proof from its size to the newest."},
			s.proveLedgerConsistency),
		op(Operation{ID: "getLedgerLogCheckpoint", Method: fiber.MethodGet, Path: "/events/log/checkpoint", Area: "Events",
			Raw: true, ContentType: "text/plain; charset=utf-8",
			Summary: "C2SP tlog-tiles: the newest signed checkpoint of the workspace's log, as the signed note itself (text/plain).",
			Description: "/events/log/ is the workspace's log in the C2SP tlog-tiles layout, for generic tlog clients " +
				"(a tile fetcher's base URL), behind the same credential as the rest of the API. Not cached (Cache-Control: no-store); " +
				"404 not_found until the workspace's first checkpoint."},
			s.getLedgerLogCheckpoint),
		op(Operation{ID: "getLedgerLogKey", Method: fiber.MethodGet, Path: "/events/log/key", Area: "Events", Public: true, Unmetered: true,
			Errors:  []string{accountable.ECodeNotFound},
			Summary: "The public key that signs every workspace's log checkpoints, the log name, and the prefix of every workspace's origin (account-free)."},
			s.getLedgerLogKey),
		op(Operation{ID: "getLedgerLogTile", Method: fiber.MethodGet, Path: "/events/log/tile/{tilePath}", Area: "Events",
			Raw: true, ContentType: "application/octet-stream", PathTail: true,
			Summary: "C2SP tlog-tiles: a hash tile (tile/<L>/<N>[.p/<W>], height 8) or an entry bundle (tile/entries/<N>[.p/<W>]) " +
				"of the workspace's log, within its newest signed checkpoint.",
			Description: "A tile is served when all of it lies within the tree of the newest signed checkpoint: a full tile, " +
				"or a partial one (.p/<W>) of any width the checkpoint holds, so that a client checking an older checkpoint " +
				"finds its tiles too; anything else is 404 not_found. An entry bundle holds each entry (the canonical JSON of an " +
				"event's header) as a big-endian uint16 length and its bytes. Tiles never change: Cache-Control: private, " +
				"max-age=31536000, immutable."},
			s.getLedgerLogTile),
		op(Operation{ID: "proveLedgerInclusion", Method: fiber.MethodGet, Path: "/events/{eventId}/proof", Area: "Events",
			Summary: "Prove that an event is in the workspace's log: its leaf index and entry, the inclusion proof in a " +
				"signed tree (the newest by default) and that tree's signed checkpoint.",
			Description: "An event enters the log within seconds of its commit; until a checkpoint holds it, this answers 404 " +
				"not_found (retry). tree_size must be a size the log was signed at (404 not_found otherwise) greater than " +
				"the event's leaf index (400 validation_failed otherwise). The entry's SHA-256 is the event's eventHash."},
			s.proveLedgerInclusion),
	}
}

// checkLedgerSettings refuses a verifier key that is not one, at start-up rather than in
// every client's check.
func checkLedgerSettings(cfg Config) error {
	if cfg.LedgerVerifierKey == "" {
		return nil
	}
	if _, err := note.NewVerifier(cfg.LedgerVerifierKey); err != nil {
		return fmt.Errorf("api: the ledger verifier key is not a signed-note verifier key: %w", err)
	}
	return nil
}

// newestCheckpoint is the newest signed checkpoint of the caller's workspace's log: a log
// not signed yet is not_found.
func (s *Server) newestCheckpoint(c *call) (accountable.LedgerCheckpoint, error) {
	cp, err := ledgerLogStore.of(s).LedgerCheckpoint(c.ctx, c.principal.WorkspaceID)
	if err == nil && cp.TreeSize == 0 {
		err = noCheckpointYet()
	}
	return cp, err
}

// noCheckpointYet is the not_found of a log not signed yet.
func noCheckpointYet() error {
	return accountable.Errorf(accountable.ECodeNotFound,
		"The workspace's log has no signed checkpoint yet: the ledger sealer signs one within seconds of the workspace's first events; retry.")
}

// checkpointOf reads the checkpoint a signed note carries (its text, before the blank
// line and the signatures): the API answers what was signed, whatever its own settings
// would make of the workspace's origin now.
func checkpointOf(signed string) (torchwood.Checkpoint, error) {
	text, _, _ := strings.Cut(signed, "\n\n")
	cp, err := torchwood.ParseCheckpoint(text + "\n")
	if err != nil {
		return torchwood.Checkpoint{}, fmt.Errorf("api: a stored checkpoint is not one: %w", err)
	}
	return cp, nil
}

// getLedgerCheckpoint: GET /events/checkpoint.
func (s *Server) getLedgerCheckpoint(c *call, _ *struct{}) (accountable.SignedCheckpoint, error) {
	stored, err := s.newestCheckpoint(c)
	if err != nil {
		return accountable.SignedCheckpoint{}, err
	}
	cp, err := checkpointOf(stored.SignedNote)
	if err != nil {
		return accountable.SignedCheckpoint{}, err
	}
	witnesses, err := ledgerLogStore.of(s).LedgerWitnessStatus(c.ctx, c.principal.WorkspaceID)
	if err != nil {
		return accountable.SignedCheckpoint{}, err
	}
	if witnesses == nil {
		witnesses = []accountable.LedgerWitness{}
	}
	return accountable.SignedCheckpoint{Origin: cp.Origin, TreeSize: cp.N, RootHash: base64.StdEncoding.EncodeToString(cp.Hash[:]),
		Checkpoint: stored.Note(), SignedAt: stored.SignedAt, PublicKey: s.cfg.LedgerVerifierKey, Witnesses: witnesses}, nil
}

type proofQuery struct {
	EventID  string `json:"-" path:"eventId" format:"uuid"`
	TreeSize *int64 `json:"-" query:"tree_size" minimum:"1" description:"The size of the signed tree to prove the event in (default: the newest checkpoint's)."`
}

// eventNotInLog answers an event no checkpoint holds alike whether it is too new or not
// the workspace's at all, so that another workspace's event is an unknown one.
func eventNotInLog() error {
	return accountable.Errorf(accountable.ECodeNotFound,
		"The event is not in a signed checkpoint of the workspace's log: it is not one of the workspace's events, "+
			"or it is not in a checkpoint yet (the log is signed within seconds of a commit; retry).")
}

// proveLedgerInclusion: GET /events/{eventId}/proof.
func (s *Server) proveLedgerInclusion(c *call, in *proofQuery) (accountable.LedgerInclusionProof, error) {
	return s.inclusionProof(c, accountable.NormalizeUUID(in.EventID), in.TreeSize)
}

// inclusionProof proves the workspace's event in the signed tree of size treeSize (nil:
// the newest checkpoint). An event no checkpoint holds yet is not_found. The leaf and the
// checkpoint are read together, and the proof's hashes with the log's size: two round
// trips.
func (s *Server) inclusionProof(c *call, eventID string, treeSize *int64) (accountable.LedgerInclusionProof, error) {
	st, ws := ledgerLogStore.of(s), c.principal.WorkspaceID
	size := int64(-1)
	if treeSize != nil {
		size = *treeSize
	}
	leaf, cp, err := st.LedgerLeafIn(c.ctx, ws, eventID, size)
	if accountable.ErrorCode(err) == accountable.ECodeNotFound {
		return accountable.LedgerInclusionProof{}, eventNotInLog()
	}
	if err != nil {
		return accountable.LedgerInclusionProof{}, err
	}
	switch {
	case treeSize == nil && cp.TreeSize <= leaf.Index:
		return accountable.LedgerInclusionProof{}, eventNotInLog()
	case treeSize != nil && *treeSize <= leaf.Index:
		return accountable.LedgerInclusionProof{}, accountable.ValidationError(accountable.Issue{Path: "tree_size",
			Message: fmt.Sprintf("must be greater than the event's leaf index, %d: a smaller tree does not hold it", leaf.Index)})
	case treeSize != nil && cp.TreeSize == 0:
		return accountable.LedgerInclusionProof{}, accountable.LedgerCheckpointMissing(*treeSize)
	}
	proof, err := st.ProveLedgerInclusion(c.ctx, ws, leaf.Index, cp.TreeSize)
	if err != nil {
		return accountable.LedgerInclusionProof{}, err
	}
	leafHash := ledgerlog.LeafHash(leaf.Entry)
	return accountable.LedgerInclusionProof{EventID: eventID, LeafIndex: leaf.Index, TreeSize: cp.TreeSize, Entry: string(leaf.Entry),
		LeafHash: base64.StdEncoding.EncodeToString(leafHash[:]), Proof: hashes(proof), Checkpoint: cp.Note()}, nil
}

// newestProof is the event's inclusion proof in the newest checkpoint, nil while no
// checkpoint holds it (what a receipt carries).
func (s *Server) newestProof(c *call, eventID string) (*accountable.LedgerInclusionProof, error) {
	proof, err := s.inclusionProof(c, eventID, nil)
	switch {
	case err == nil:
		return &proof, nil
	case accountable.ErrorCode(err) == accountable.ECodeNotFound:
		return nil, nil
	}
	return nil, err
}

// hashes writes proof hashes in standard base64, never null.
func hashes(proof []tlog.Hash) []string {
	out := make([]string, len(proof))
	for i, h := range proof {
		out[i] = base64.StdEncoding.EncodeToString(h[:])
	}
	return out
}

type consistencyQuery struct {
	From *int64 `json:"-" query:"from" required:"true" minimum:"0" description:"The size of the earlier tree: a size the log was signed at (the client's last checked checkpoint), or 0."`
	To   *int64 `json:"-" query:"to" minimum:"1" description:"The size of the later tree: a size the log was signed at (default: the newest checkpoint's)."`
}

// proveLedgerConsistency: GET /events/consistency. Both checkpoints are read together,
// and the proof's hashes with the log's size: two round trips.
func (s *Server) proveLedgerConsistency(c *call, in *consistencyQuery) (accountable.LedgerConsistencyProof, error) {
	st, ws := ledgerLogStore.of(s), c.principal.WorkspaceID
	from := *in.From // required
	if in.To != nil && from > *in.To {
		return accountable.LedgerConsistencyProof{}, accountable.ValidationError(accountable.Issue{Path: "from", Message: "must be at most to"})
	}
	sizes := []int64{-1} // the later tree's: the newest by default
	if in.To != nil {
		sizes[0] = *in.To
	}
	if from > 0 { // the empty tree has no checkpoint
		sizes = append(sizes, from)
	}
	cps, err := st.LedgerCheckpointsAt(c.ctx, ws, sizes...)
	if err != nil {
		return accountable.LedgerConsistencyProof{}, err
	}
	to := cps[0]
	switch {
	case in.To == nil && to.TreeSize == 0:
		return accountable.LedgerConsistencyProof{}, noCheckpointYet()
	case in.To == nil && from > to.TreeSize:
		return accountable.LedgerConsistencyProof{}, accountable.ValidationError(accountable.Issue{Path: "from",
			Message: fmt.Sprintf("must be at most to, the newest checkpoint's size (%d)", to.TreeSize)})
	case in.To != nil && to.TreeSize == 0:
		return accountable.LedgerConsistencyProof{}, accountable.LedgerCheckpointMissing(*in.To)
	}
	out := accountable.LedgerConsistencyProof{From: from, To: to.TreeSize, Proof: []string{}, ToCheckpoint: to.Note()}
	if from == 0 { // the empty tree: nothing to prove, and no checkpoint of it
		return out, nil
	}
	earlier := cps[1]
	if earlier.TreeSize == 0 {
		return accountable.LedgerConsistencyProof{}, accountable.LedgerCheckpointMissing(from)
	}
	note := earlier.Note()
	out.FromCheckpoint = &note
	if from == to.TreeSize {
		return out, nil
	}
	proof, err := st.ProveLedgerConsistency(c.ctx, ws, from, to.TreeSize)
	if err != nil {
		return accountable.LedgerConsistencyProof{}, err
	}
	out.Proof = hashes(proof)
	return out, nil
}

// getLedgerLogCheckpoint: GET /events/log/checkpoint (C2SP tlog-tiles).
func (s *Server) getLedgerLogCheckpoint(c *call, _ *struct{}) (struct{}, error) {
	cp, err := s.newestCheckpoint(c)
	if err != nil {
		return struct{}{}, err
	}
	c.fiber.Set(fiber.HeaderContentType, "text/plain; charset=utf-8")
	c.fiber.Set(fiber.HeaderCacheControl, cacheNoStore)
	return struct{}{}, c.fiber.SendString(cp.Note())
}

type tileRef struct {
	TilePath string `json:"-" path:"tilePath" description:"The tile's path below tile/, which spans segments (its slashes are sent as they are): <L>/<N>[.p/<W>] for a hash tile, entries/<N>[.p/<W>] for an entry bundle, with <N> in the C2SP form (x001/234)."`
}

// getLedgerLogTile: GET /events/log/tile/{tilePath} (C2SP tlog-tiles).
func (s *Server) getLedgerLogTile(c *call, in *tileRef) (struct{}, error) {
	t, err := torchwood.ParseTilePath("tile/" + in.TilePath)
	if err != nil {
		return struct{}{}, accountable.Errorf(accountable.ECodeNotFound, "There is no such tile: a tile path is <L>/<N>[.p/<W>] or entries/<N>[.p/<W>] (C2SP tlog-tiles).")
	}
	key := tileKey{workspaceID: c.principal.WorkspaceID, tile: t}
	if data, ok := s.tiles.get(key); ok {
		return struct{}{}, sendTile(c, data)
	}
	cp, err := s.newestCheckpoint(c)
	if err != nil {
		return struct{}{}, err
	}
	if !tileWithin(t, cp.TreeSize) {
		return struct{}{}, accountable.Errorf(accountable.ECodeNotFound,
			"The tile is not within the log's newest signed checkpoint (size %d): read /events/log/checkpoint for the tiles it holds.", cp.TreeSize)
	}
	st, ws := ledgerLogStore.of(s), c.principal.WorkspaceID
	var data []byte
	if t.L == -1 {
		entries, err := st.LedgerLogEntries(c.ctx, ws, t.N*torchwood.TileWidth, int64(t.W))
		if err != nil {
			return struct{}{}, err
		}
		for _, e := range entries {
			if data, err = torchwood.AppendTileEntry(data, e); err != nil {
				return struct{}{}, err
			}
		}
	} else if data, err = st.LedgerLogTile(c.ctx, ws, t, cp.TreeSize); err != nil {
		return struct{}{}, err
	}
	s.tiles.add(key, data)
	return struct{}{}, sendTile(c, data)
}

func sendTile(c *call, data []byte) error {
	c.fiber.Set(fiber.HeaderContentType, fiber.MIMEOctetStream)
	c.fiber.Set(fiber.HeaderCacheControl, cacheImmutable)
	return c.fiber.Send(data)
}

// tileCache keeps the full tiles of the workspaces' logs a client read, in memory: a tile
// within a signed checkpoint never changes (the log only grows), so one served once is
// served again without a query, a checkpoint's or the hashes'. It is keyed by the
// caller's workspace, so a cached tile is only ever another request of the same
// workspace's. Partial tiles (transient: the full tile replaces them) are not kept. Its
// bounds keep its memory under about 28 MiB: hash tiles are 8 KiB, entry bundles of 256
// event headers about 150 KiB.
type tileCache struct {
	hashes  *lru.Cache[tileKey, []byte]
	entries *lru.Cache[tileKey, []byte]
}

type tileKey struct {
	workspaceID string
	tile        tlog.Tile
}

const (
	cachedHashTiles    = 2048
	cachedEntryBundles = 64
)

func newTileCache() tileCache {
	hashes, _ := lru.New[tileKey, []byte](cachedHashTiles)     // errors only for a size <= 0
	entries, _ := lru.New[tileKey, []byte](cachedEntryBundles) // as above
	return tileCache{hashes: hashes, entries: entries}
}

func (c tileCache) of(t tlog.Tile) *lru.Cache[tileKey, []byte] {
	if t.L == -1 {
		return c.entries
	}
	return c.hashes
}

func (c tileCache) get(k tileKey) ([]byte, bool) { return c.of(k.tile).Get(k) }

func (c tileCache) add(k tileKey, data []byte) {
	if k.tile.W == torchwood.TileWidth {
		c.of(k.tile).Add(k, data)
	}
}

// tileWithin reports whether all of tile t lies within the tree of size n. A tile of level
// L holds hashes [N·256, N·256+W) of level 8L (an entry bundle: leaves), of which the tree
// has n>>8L: the roots of its complete subtrees of 2^8L leaves.
func tileWithin(t tlog.Tile, n int64) bool {
	level := max(t.L, 0)
	if t.H != torchwood.TileHeight || t.W < 1 || t.W > torchwood.TileWidth || t.N < 0 || level*t.H >= 63 {
		return false
	}
	have := n >> (level * t.H)
	return t.N <= have/torchwood.TileWidth && t.N*torchwood.TileWidth+int64(t.W) <= have
}

// getLedgerLogKey: GET /events/log/key (account-free).
func (s *Server) getLedgerLogKey(c *call, _ *struct{}) (accountable.LedgerLogKey, error) {
	if s.cfg.LedgerVerifierKey == "" {
		return accountable.LedgerLogKey{}, accountable.Errorf(accountable.ECodeNotFound, "This server does not publish a ledger log key.")
	}
	return accountable.LedgerLogKey{LogName: s.cfg.LedgerLogName, PublicKey: s.cfg.LedgerVerifierKey,
		OriginPrefix: ledgerlog.Origin(s.cfg.LedgerLogName, "")}, nil
}
