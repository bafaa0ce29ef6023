package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/fx"

	"github.com/accountablework/accountable/ledgerlog"
	"github.com/accountablework/accountable/ledgerlog/litewitness"
	"github.com/accountablework/accountable/store"
)

// A local witness for `accountable dev --witness` (make run): litewitness (C2SP
// tlog-witness) as a process of its own beside the service, with its key and database in
// .data/witness, told of every workspace's log as workspaces appear, so that the whole
// flow (checkpoints, cosignatures, a refusal on a rollback) runs on one machine. A real
// deployment uses witnesses run by others (LEDGER_WITNESSES).

// localWitnessName is the key name of make run's witness.
const localWitnessName = "localhost/accountable-dev-witness"

// localWitnessOptions reads (or makes) the local witness's key and says how to run it.
func localWitnessOptions(cfg Config) (litewitness.Options, error) {
	dir := filepath.Join(filepath.Dir(cfg.DevKeyFile), "witness")
	o := litewitness.Options{Bin: os.Getenv("ACCOUNTABLE_LITEWITNESS_BIN"), Ctl: os.Getenv("ACCOUNTABLE_WITNESSCTL_BIN"),
		Dir: dir, Name: localWitnessName, Addr: env("LEDGER_LOCAL_WITNESS_ADDR", "127.0.0.1:7380")}
	if o.Bin == "" || o.Ctl == "" {
		return o, errors.New("--witness: ACCOUNTABLE_LITEWITNESS_BIN and ACCOUNTABLE_WITNESSCTL_BIN are not set (make run sets them through scripts/stack.sh)")
	}
	keyFile := filepath.Join(dir, "key")
	b, err := os.ReadFile(keyFile)
	switch {
	case err == nil:
		seed, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(seed) != ed25519.SeedSize {
			return o, fmt.Errorf("%s: not a base64 Ed25519 seed", keyFile)
		}
		o.Key = ed25519.NewKeyFromSeed(seed)
	case errors.Is(err, fs.ErrNotExist):
		_, key, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return o, err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return o, err
		}
		if err := os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(key.Seed())+"\n"), 0o600); err != nil {
			return o, err
		}
		o.Key = key
	default:
		return o, err
	}
	return o, nil
}

// withLocalWitness adds the local witness to cfg's witnesses and returns the option that
// runs it (to come before the app's own options, so that it starts before the sealer).
func withLocalWitness(cfg *Config) (fx.Option, error) {
	o, err := localWitnessOptions(*cfg)
	if err != nil {
		return nil, err
	}
	w, err := litewitness.WitnessOf(o)
	if err != nil {
		return nil, err
	}
	cfg.LedgerWitnesses = append(cfg.LedgerWitnesses, w)
	return runLocalWitness(o), nil
}

// runLocalWitness starts the witness with the app and keeps it told of every workspace's
// log (every second: a new workspace's first checkpoint may be refused as unknown
// (forbidden) once, and is cosigned on the sealer's next sweep).
func runLocalWitness(o litewitness.Options) fx.Option {
	return fx.Invoke(func(lc fx.Lifecycle, cfg Config, db *store.DB, key *ledgerlog.Key, log *slog.Logger) {
		log = log.With("component", "local_witness")
		var p *litewitness.Process
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		lc.Append(fx.Hook{
			OnStart: func(startCtx context.Context) error {
				var err error
				if p, err = litewitness.Start(o); err != nil {
					return err
				}
				log.Info("started the local witness (litewitness)", "url", p.Witness.URL, "key", p.Witness.Key, "log", p.LogPath)
				tell := func(ctx context.Context) error {
					ids, err := db.ListWorkspaceIDs(ctx)
					if err != nil {
						return err
					}
					origins := make([]string, len(ids))
					for i, id := range ids {
						origins[i] = ledgerlog.Origin(cfg.LedgerLogName, id)
					}
					slices.Sort(origins)
					return p.AddLogs(ctx, key.VerifierKey, origins...)
				}
				if err := tell(startCtx); err != nil {
					log.Warn("telling the local witness of the workspaces' logs", "err", err)
				}
				go func() {
					defer close(done)
					for {
						select {
						case <-ctx.Done():
							return
						case <-time.After(time.Second):
						}
						if err := tell(ctx); err != nil && ctx.Err() == nil {
							log.Warn("telling the local witness of the workspaces' logs", "err", err)
						}
					}
				}()
				return nil
			},
			OnStop: func(context.Context) error {
				cancel()
				if p != nil {
					<-done
					p.Stop()
				}
				return nil
			},
		})
	})
}
