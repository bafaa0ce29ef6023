package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/ledgerlog"
)

// SealerStore is what the ledger sealer needs of the store.
type SealerStore interface {
	IntegrateLedgerLog(ctx context.Context, workspaceID string, limit int) (int, error)
	LedgerLogTree(ctx context.Context, workspaceID string) (tlog.Tree, error)
	LedgerCheckpoint(ctx context.Context, workspaceID string) (accountable.LedgerCheckpoint, error)
	ProveLedgerConsistency(ctx context.Context, workspaceID string, from, to int64) (tlog.TreeProof, error)
	SaveLedgerCheckpoint(ctx context.Context, workspaceID string, tree tlog.Tree, signed []byte) error
	LedgerLogsBehind(ctx context.Context, limit int) ([]string, error)
}

// SealerMetrics counts what the sealer does; a refusal is an alert.
type SealerMetrics interface {
	LedgerCheckpointSigned(lag time.Duration)
	LedgerLogRefused(reason string)
}

// WitnessStore is what the sealer needs of the store to have witnesses cosign.
type WitnessStore interface {
	LedgerWitnessStatus(ctx context.Context, workspaceID string) ([]accountable.LedgerWitness, error)
	SaveLedgerCosignature(ctx context.Context, workspaceID string, treeSize int64, witness, line string) error
	SaveLedgerWitnessRefusal(ctx context.Context, workspaceID, witness, refusal string) error
	LedgerLogsUnwitnessed(ctx context.Context, limit int, witnesses []string) ([]string, error)
}

// WitnessMetrics counts the witnesses' refusals: each is an alert.
type WitnessMetrics interface {
	LedgerWitnessRefused(witness, reason string)
}

// Witness refusal reasons (the ledger_witness_refusals_total metric's reason label).
const (
	WitnessInconsistent = "inconsistent" // 422: not consistent with what the witness cosigned
	WitnessAhead        = "ahead"        // the witness cosigned a larger tree than the log has: a rollback
	WitnessForbidden    = "forbidden"    // 403: the witness does not know the log or its key
	WitnessBadRequest   = "bad_request"  // 400
)

// AppendWatcher tells the sealer which workspaces have new events (the process's ledger
// feed: its own commits at once, other processes' through their announcements).
type AppendWatcher interface {
	Watch(fn func(workspaceID string))
}

// Refusal reasons (the ledger_log_refusals_total metric's reason label).
const (
	RefusedBrokenEvent  = "broken_event" // an event does not match its own hashes
	RefusedInconsistent = "inconsistent" // the tree does not extend the last signed checkpoint
	RefusedForeignNote  = "foreign_note" // the newest checkpoint is not signed by this key
	RefusedShrunk       = "shrunk"       // the tree is smaller than the last signed checkpoint
)

// LedgerSealer keeps every workspace's transparency log current, off the request path: it
// appends the new events as leaves (store.IntegrateLedgerLog) and signs a checkpoint of
// the tree, at most once per interval per workspace, and only when the tree extends the
// last checkpoint it finds signed (by its key) in the database and the last one it signed
// itself: it never signs a fork. Every process that runs the Temporal worker runs one;
// processes share the work through the store's per-log lock.
type LedgerSealer struct {
	store    SealerStore
	key      *ledgerlog.Key
	logName  string
	interval time.Duration
	log      *slog.Logger
	metrics  SealerMetrics

	mu      sync.Mutex
	pending map[string]time.Time // workspace -> when it was first known to have new events
	signed  map[string]tlog.Tree // the last tree this process signed, per workspace
	kick    chan struct{}

	witnesses     []ledgerlog.Witness
	witnessStore  WitnessStore
	witnessHTTP   *http.Client
	witnessMetric WitnessMetrics

	cancel context.CancelFunc
	done   chan struct{}
}

// UseWitnesses has every new checkpoint submitted to the witnesses (C2SP tlog-witness)
// with its consistency proof, and their cosignatures kept with it. Call before Start.
func (s *LedgerSealer) UseWitnesses(witnesses []ledgerlog.Witness, store WitnessStore, hc *http.Client, metrics WitnessMetrics) {
	s.witnesses, s.witnessStore, s.witnessHTTP, s.witnessMetric = witnesses, store, hc, metrics
}

// sweepEvery is how often the sealer also asks the database which logs are behind: it
// catches what no announcement told it (a process that died before announcing, a start).
const sweepEvery = 5 * time.Second

// integrateBatch is the most events one integration transaction appends.
const integrateBatch = 5000

// NewLedgerSealer returns a sealer; Start runs it.
func NewLedgerSealer(store SealerStore, key *ledgerlog.Key, logName string, interval time.Duration, watcher AppendWatcher, metrics SealerMetrics, log *slog.Logger) *LedgerSealer {
	s := &LedgerSealer{store: store, key: key, logName: logName, interval: interval, log: log, metrics: metrics,
		pending: map[string]time.Time{}, signed: map[string]tlog.Tree{}, kick: make(chan struct{}, 1)}
	if watcher != nil {
		watcher.Watch(s.Nudge)
	}
	return s
}

// Nudge tells the sealer that workspaceID has new events ("": maybe any workspace).
func (s *LedgerSealer) Nudge(workspaceID string) {
	if workspaceID == "" {
		select {
		case s.kick <- struct{}{}:
		default:
		}
		return
	}
	s.mu.Lock()
	if _, ok := s.pending[workspaceID]; !ok {
		s.pending[workspaceID] = time.Now()
	}
	s.mu.Unlock()
}

// Start runs the sealer until Stop.
func (s *LedgerSealer) Start() error {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel, s.done = cancel, make(chan struct{})
	go s.run(ctx)
	return nil
}

// Stop ends the sealer after the seal at work.
func (s *LedgerSealer) Stop() error {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	return nil
}

func (s *LedgerSealer) run(ctx context.Context) {
	defer close(s.done)
	tick := time.NewTicker(s.interval)
	defer tick.Stop()
	lastSweep := time.Time{}
	for {
		sweep := time.Since(lastSweep) >= sweepEvery
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-s.kick:
			sweep = true
		}
		if sweep {
			lastSweep = time.Now()
			ids, err := s.store.LedgerLogsBehind(ctx, 1000)
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("finding the ledger logs behind", "err", err)
				}
			}
			for _, id := range ids {
				s.Nudge(id)
			}
			if len(s.witnesses) > 0 {
				names := make([]string, len(s.witnesses))
				for i, w := range s.witnesses {
					names[i] = w.Name()
				}
				ids, err := s.witnessStore.LedgerLogsUnwitnessed(ctx, 1000, names)
				if err != nil && ctx.Err() == nil {
					s.log.Warn("finding the ledger logs not cosigned", "err", err)
				}
				for _, id := range ids {
					s.Nudge(id)
				}
			}
		}
		s.mu.Lock()
		due := s.pending
		s.pending = map[string]time.Time{}
		s.mu.Unlock()
		for ws, since := range due {
			signed, err := s.Seal(ctx, ws)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				s.log.Error("sealing the ledger log", "workspace_id", ws, "err", err)
				continue
			}
			if len(s.witnesses) > 0 {
				if err := s.Witness(ctx, ws); err != nil {
					if ctx.Err() != nil {
						return
					}
					s.log.Error("having the ledger log witnessed", "workspace_id", ws, "err", err)
					var refused *RefusalError
					if !errors.As(err, &refused) {
						s.Nudge(ws) // a witness out of reach: again on the next tick
					}
				}
			}
			if signed {
				s.metrics.LedgerCheckpointSigned(time.Since(since))
			}
		}
	}
}

// RefusalError is a seal the sealer refused: the log is not what it signed before.
type RefusalError struct {
	Reason string
	Err    error
}

func (e *RefusalError) Error() string {
	return "the ledger log was not signed (" + e.Reason + "): " + e.Err.Error()
}
func (e *RefusalError) Unwrap() error { return e.Err }

// Seal integrates the workspace's new events and signs a checkpoint of its tree when it
// has grown, after checking that it extends the last checkpoint signed. It reports whether
// it signed one.
func (s *LedgerSealer) Seal(ctx context.Context, workspaceID string) (bool, error) {
	for {
		n, err := s.store.IntegrateLedgerLog(ctx, workspaceID, integrateBatch)
		if broken := (*accountable.LedgerLogBrokenError)(nil); errors.As(err, &broken) {
			return false, s.refuse(RefusedBrokenEvent, fmt.Errorf("workspace %s: %w", workspaceID, err))
		}
		if err != nil {
			return false, err
		}
		if n < integrateBatch {
			break
		}
	}
	tree, err := s.store.LedgerLogTree(ctx, workspaceID)
	if err != nil {
		return false, err
	}
	origin := ledgerlog.Origin(s.logName, workspaceID)
	prev, err := s.lastSigned(ctx, workspaceID, origin)
	if err != nil {
		return false, err
	}
	switch {
	case tree.N < prev.N:
		return false, s.refuse(RefusedShrunk, fmt.Errorf("workspace %s: the log has %d leaves, its last checkpoint %d", workspaceID, tree.N, prev.N))
	case tree.N == prev.N:
		if tree.N > 0 && tree.Hash != prev.Hash {
			return false, s.refuse(RefusedInconsistent, fmt.Errorf("workspace %s: %w", workspaceID, ledgerlog.VerifyConsistency(prev, tree, nil)))
		}
		return false, nil
	}
	if prev.N > 0 {
		proof, err := s.store.ProveLedgerConsistency(ctx, workspaceID, prev.N, tree.N)
		if err != nil {
			return false, err
		}
		if err := ledgerlog.VerifyConsistency(prev, tree, proof); err != nil {
			return false, s.refuse(RefusedInconsistent, fmt.Errorf("workspace %s: %w", workspaceID, err))
		}
	}
	signed, err := s.key.SignCheckpoint(origin, tree)
	if err != nil {
		return false, err
	}
	if err := s.store.SaveLedgerCheckpoint(ctx, workspaceID, tree, signed); err != nil {
		return false, err
	}
	s.mu.Lock()
	s.signed[workspaceID] = tree
	s.mu.Unlock()
	return true, nil
}

// lastSigned is the tree of the newest checkpoint: the database's, once its signature is
// seen to be this key's, or the one this process signed last if that is newer (a
// checkpoint deleted from the database does not let the sealer sign a different history
// of that size).
func (s *LedgerSealer) lastSigned(ctx context.Context, workspaceID, origin string) (tlog.Tree, error) {
	var prev tlog.Tree
	c, err := s.store.LedgerCheckpoint(ctx, workspaceID)
	if err != nil {
		return prev, err
	}
	if c.TreeSize > 0 {
		cp, _, err := ledgerlog.OpenCheckpoint([]byte(c.SignedNote), origin, s.key.Verifier())
		if err != nil {
			return prev, s.refuse(RefusedForeignNote, fmt.Errorf("workspace %s: the checkpoint of size %d: %w", workspaceID, c.TreeSize, err))
		}
		if cp.N != c.TreeSize || !bytes.Equal(cp.Hash[:], c.RootHash) {
			return prev, s.refuse(RefusedForeignNote, fmt.Errorf("workspace %s: the checkpoint row of size %d does not match its signed note", workspaceID, c.TreeSize))
		}
		prev = cp.Tree
	}
	s.mu.Lock()
	mine, ok := s.signed[workspaceID]
	s.mu.Unlock()
	if ok && mine.N > prev.N {
		prev = mine
	}
	return prev, nil
}

func (s *LedgerSealer) refuse(reason string, err error) error {
	s.metrics.LedgerLogRefused(reason)
	return &RefusalError{Reason: reason, Err: err}
}

// Witness submits the workspace's newest checkpoint to every witness that has not
// cosigned it, with the consistency proof from the size it cosigned last, and keeps the
// cosignatures. A witness that answers with another size (409) is asked again from that
// size, once. A refusal (the checkpoint is inconsistent with what the witness cosigned, or
// the witness cosigned a larger tree than the log now has) is recorded with the log and
// counted, never skipped silently; the first refusal or error is returned.
func (s *LedgerSealer) Witness(ctx context.Context, workspaceID string) error {
	c, err := s.store.LedgerCheckpoint(ctx, workspaceID)
	if err != nil || c.TreeSize == 0 {
		return err
	}
	status, err := s.witnessStore.LedgerWitnessStatus(ctx, workspaceID)
	if err != nil {
		return err
	}
	cosigned := map[string]int64{}
	for _, st := range status {
		cosigned[st.Name] = st.CosignedTreeSize
	}
	var first error
	for _, w := range s.witnesses {
		if cosigned[w.Name()] >= c.TreeSize {
			continue
		}
		if err := s.witnessOne(ctx, workspaceID, w, cosigned[w.Name()], c); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (s *LedgerSealer) witnessOne(ctx context.Context, workspaceID string, w ledgerlog.Witness, old int64, c accountable.LedgerCheckpoint) error {
	for attempt := 0; ; attempt++ {
		var proof tlog.TreeProof
		if old > 0 {
			var err error
			if proof, err = s.store.ProveLedgerConsistency(ctx, workspaceID, old, c.TreeSize); err != nil {
				return err
			}
		}
		line, err := w.AddCheckpoint(ctx, s.witnessHTTP, old, proof, []byte(c.SignedNote))
		var conflict *ledgerlog.WitnessConflictError
		var refusal *ledgerlog.WitnessRefusalError
		switch {
		case err == nil:
			return s.witnessStore.SaveLedgerCosignature(ctx, workspaceID, c.TreeSize, w.Name(), line)
		case errors.As(err, &conflict) && conflict.Known > c.TreeSize:
			return s.witnessRefused(ctx, workspaceID, w, WitnessAhead, fmt.Errorf(
				"witness %s cosigned the log at size %d, larger than its newest checkpoint (%d): the log was rolled back", w.Name(), conflict.Known, c.TreeSize))
		case errors.As(err, &conflict) && attempt == 0 && conflict.Known != old:
			// Another process of the deployment may have submitted meanwhile (the witness
			// then knows this very size, and a request from it with an empty proof asks
			// for a cosignature of the same tree), or the status was lost.
			old = conflict.Known
			continue
		case errors.As(err, &refusal) && refusal.Inconsistent:
			return s.witnessRefused(ctx, workspaceID, w, WitnessInconsistent, fmt.Errorf("witness %s: %w", w.Name(), err))
		case errors.As(err, &refusal) && refusal.Status == http.StatusForbidden:
			return s.witnessRefused(ctx, workspaceID, w, WitnessForbidden, fmt.Errorf("witness %s: %w", w.Name(), err))
		case errors.As(err, &refusal):
			return s.witnessRefused(ctx, workspaceID, w, WitnessBadRequest, fmt.Errorf("witness %s: %w", w.Name(), err))
		default:
			return err
		}
	}
}

func (s *LedgerSealer) witnessRefused(ctx context.Context, workspaceID string, w ledgerlog.Witness, reason string, err error) error {
	s.witnessMetric.LedgerWitnessRefused(w.Name(), reason)
	if serr := s.witnessStore.SaveLedgerWitnessRefusal(ctx, workspaceID, w.Name(), reason+": "+err.Error()); serr != nil {
		return errors.Join(err, serr)
	}
	return &RefusalError{Reason: "witness_" + reason, Err: err}
}
