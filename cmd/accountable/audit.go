package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/ledgerlog"
	"github.com/accountablework/accountable/ledgerlog/remote"
)

// errAuditFailed is a failed audit: the reason is printed, the exit status is not 0.
var errAuditFailed = errors.New("the ledger audit failed")

// repeated is a flag given any number of times.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ",") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// ledgerAudit is `accountable ledger audit`: an auditor that needs only the log's public
// key (and the witnesses' keys). It checks a receipt offline (--receipt), then, with the
// service (--url and ACCOUNTABLE_API_KEY), reads the newest checkpoint of the workspace's
// log, checks its signature, origin and cosignatures and the consistency proof from the
// checkpoint it kept (--state: read, and replaced by the newest once checked) and from
// the receipt's, and prints what it checked as a JSON line. --follow repeats it until
// interrupted or until a check fails. It never trusts the service's configuration: the
// keys come from the command line.
func ledgerAudit(cfg Config, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ledger audit", flag.ContinueOnError)
	base := fs.String("url", strings.TrimSuffix(cfg.SiteURL, "/")+"/api/v1", "the API root of the service")
	key := fs.String("key", "", "the log's public key (a signed-note verifier key: accountable ledger key, GET /events/log/key)")
	var witnesses repeated
	fs.Var(&witnesses, "witness", "a witness's cosignature verifier key whose cosignature every checkpoint must carry (repeatable)")
	workspace := fs.String("workspace", "", "the workspace whose log to audit (default: the API key's; a receipt's own)")
	origin := fs.String("origin", "", "the log's origin (default: <the key's name>/workspaces/<workspace>)")
	state := fs.String("state", "", "a file keeping the last checkpoint checked: read, then replaced by the newest once it is checked")
	receiptFile := fs.String("receipt", "", "a receipt as GET /work/{taskId}/receipt answered it, to check offline")
	offline := fs.Bool("offline", false, "check the receipt only; read nothing from the service")
	follow := fs.Duration("follow", 0, "audit again at this interval until interrupted or a check fails")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return errUsage
	}
	if *key == "" {
		return fmt.Errorf("%w: --key is required: the auditor trusts only the key it is given", errUsage)
	}
	logKey, err := note.NewVerifier(*key)
	if err != nil {
		return fmt.Errorf("%w: --key: %v", errUsage, err)
	}
	var witnessKeys []note.Verifier
	for _, w := range witnesses {
		v, err := ledgerlog.ParseCosignatureKey(w)
		if err != nil {
			return fmt.Errorf("%w: --witness: %v", errUsage, err)
		}
		witnessKeys = append(witnessKeys, v)
	}
	fail := func(format string, a ...any) error {
		fmt.Fprintf(out, "%s\n", mustJSON(map[string]any{"ok": false, "reason": fmt.Sprintf(format, a...)}))
		return fmt.Errorf("%w: %s", errAuditFailed, fmt.Sprintf(format, a...))
	}
	originOf := func(ws string) string {
		if *origin != "" {
			return *origin
		}
		return ledgerlog.Origin(logKey.Name(), ws)
	}

	var receiptCheckpoint []byte
	if *receiptFile != "" {
		doc, err := os.ReadFile(*receiptFile)
		if err != nil {
			return err
		}
		ws := *workspace
		if ws == "" {
			var h struct {
				Data struct {
					LedgerProof struct {
						Entry string `json:"entry"`
					} `json:"ledger_proof"`
				} `json:"data"`
				LedgerProof struct {
					Entry string `json:"entry"`
				} `json:"ledger_proof"`
			}
			json.Unmarshal(doc, &h) //nolint:errcheck // CheckReceipt says what is wrong with it
			entry := h.Data.LedgerProof.Entry + h.LedgerProof.Entry
			var header accountable.EventHeader
			json.Unmarshal([]byte(entry), &header) //nolint:errcheck // as above
			ws = header.WorkspaceID
		}
		auditor, err := ledgerlog.NewAuditor(*key, originOf(ws))
		if err != nil {
			return err
		}
		tree, header, err := auditor.CheckReceipt(doc)
		if err != nil {
			return fail("the receipt: %v", err)
		}
		receiptCheckpoint = checkpointIn(doc)
		if err := remote.CheckCosigned(receiptCheckpoint, witnessKeys); err != nil {
			return fail("the receipt's checkpoint: %v", err)
		}
		fmt.Fprintf(out, "%s\n", mustJSON(map[string]any{"ok": true, "checked": "receipt", "eventId": header.ID,
			"workspaceId": header.WorkspaceID, "treeSize": tree.N}))
		if *workspace == "" {
			*workspace = header.WorkspaceID
		}
	}
	if *offline {
		if *receiptFile == "" {
			return fmt.Errorf("%w: --offline checks a --receipt", errUsage)
		}
		return nil
	}

	apiKey := os.Getenv("ACCOUNTABLE_API_KEY")
	if apiKey == "" {
		return fmt.Errorf("%w: set ACCOUNTABLE_API_KEY to a key of the workspace", errUsage)
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *workspace == "" {
		body, err := (&remote.Log{BaseURL: *base, APIKey: apiKey, HTTP: hc}).Get(ctx, "/credential")
		if err != nil {
			return err
		}
		var cred struct {
			Data accountable.Credential `json:"data"`
		}
		if err := json.Unmarshal(body, &cred); err != nil || cred.Data.Workspace.ID == "" {
			return fmt.Errorf("the credential's workspace: %v", err)
		}
		*workspace = cred.Data.Workspace.ID
	}
	auditor, err := ledgerlog.NewAuditor(*key, originOf(*workspace))
	if err != nil {
		return err
	}
	log := remote.Log{BaseURL: *base, APIKey: apiKey, HTTP: hc, Auditor: auditor, Witnesses: witnessKeys}

	kept, err := readKept(*state)
	if err != nil {
		return err
	}
	for {
		latest, tree, err := log.Advance(ctx, kept)
		if err != nil {
			if kept != nil {
				old, _ := auditor.Open(kept)
				return fail("workspace %s: the newest checkpoint against the one kept (size %d): %v", *workspace, old.N, err)
			}
			return fail("workspace %s: %v", *workspace, err)
		}
		if receiptCheckpoint != nil {
			// The receipt's checkpoint must be one state of the history the newest extends.
			if _, _, err := log.Advance(ctx, receiptCheckpoint); err != nil {
				return fail("workspace %s: the receipt's checkpoint against the newest: %v", *workspace, err)
			}
			receiptCheckpoint = nil
		}
		report := map[string]any{"ok": true, "checked": "checkpoint", "workspaceId": *workspace, "treeSize": tree.N,
			"rootHash": tlog.Hash(tree.Hash).String(), "witnesses": len(witnessKeys)}
		if kept != nil {
			old, _ := auditor.Open(kept)
			report["consistentFrom"] = old.N
		}
		fmt.Fprintf(out, "%s\n", mustJSON(report))
		if *state != "" {
			if err := writeKept(*state, latest); err != nil {
				return err
			}
		}
		kept = latest
		if *follow <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(*follow):
		}
	}
}

// checkpointIn is the signed checkpoint of a receipt's proof.
func checkpointIn(doc []byte) []byte {
	var r struct {
		Data *struct {
			LedgerProof struct {
				Checkpoint string `json:"checkpoint"`
			} `json:"ledger_proof"`
		} `json:"data"`
		LedgerProof struct {
			Checkpoint string `json:"checkpoint"`
		} `json:"ledger_proof"`
	}
	json.Unmarshal(doc, &r) //nolint:errcheck // checked by CheckReceipt before
	if r.Data != nil {
		return []byte(r.Data.LedgerProof.Checkpoint)
	}
	return []byte(r.LedgerProof.Checkpoint)
}

func readKept(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// writeKept replaces the kept checkpoint atomically (a rename), so that an interrupted
// audit never leaves half of one.
func writeKept(path string, signed []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".checkpoint-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(signed); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
