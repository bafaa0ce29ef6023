// Package remote reads a workspace's transparency log from the service's API and checks
// everything it reads with a ledgerlog.Auditor (the log's public key and the workspace's
// origin) and the witnesses' keys: a client that keeps the last checkpoint it checked
// (Advance) learns of any rewrite, truncation or fork of the history it saw, without
// trusting the service or its database.
//
//	log := remote.Log{BaseURL: "https://work.example/api/v1", APIKey: key, Auditor: auditor}
//	kept, tree, err := log.Advance(ctx, kept) // kept: nil the first time
package remote

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/accountablework/accountable/ledgerlog"
)

// Log is a workspace's log as the service serves it.
type Log struct {
	BaseURL string // the API root, e.g. http://127.0.0.1:8080/api/v1
	APIKey  string // a credential of the workspace (bearer)
	HTTP    *http.Client
	Auditor *ledgerlog.Auditor
	// Witnesses must each have cosigned a checkpoint for it to be accepted.
	Witnesses []note.Verifier
}

// maxAnswer bounds what is read of an answer (a checkpoint, a proof).
const maxAnswer = 1 << 20

// Get reads path below the API root with the credential: the answer's body, or an error
// for any status but 200.
func (l *Log) Get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(l.BaseURL, "/")+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+l.APIKey)
	hc := l.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// Latest reads the newest checkpoint and checks it: the log's signature and origin, and
// a cosignature of each of the witnesses.
func (l *Log) Latest(ctx context.Context) ([]byte, tlog.Tree, error) {
	signed, err := l.Get(ctx, "/events/log/checkpoint")
	if err != nil {
		return nil, tlog.Tree{}, err
	}
	tree, err := l.Auditor.Open(signed)
	if err != nil {
		return nil, tlog.Tree{}, err
	}
	if err := CheckCosigned(signed, l.Witnesses); err != nil {
		return nil, tlog.Tree{}, err
	}
	return signed, tree, nil
}

// CheckCosigned checks that the signed note carries a valid cosignature of each witness.
func CheckCosigned(signed []byte, witnesses []note.Verifier) error {
	for _, w := range witnesses {
		n, err := note.Open(signed, note.VerifierList(w))
		if err != nil || len(n.Sigs) != 1 {
			return fmt.Errorf("the checkpoint carries no valid cosignature of witness %s", w.Name())
		}
	}
	return nil
}

// Advance reads the newest checkpoint and, when the client kept one (kept, a signed
// note it checked before; nil for none), the consistency proof from its size, and checks
// that the newest extends the kept one. It returns the newest checkpoint, to keep next.
// A history rewritten, truncated or forked since the kept checkpoint is an error wrapping
// ledgerlog.ErrNotConsistent that names both sizes.
func (l *Log) Advance(ctx context.Context, kept []byte) ([]byte, tlog.Tree, error) {
	latest, tree, err := l.Latest(ctx)
	if err != nil || kept == nil {
		return latest, tree, err
	}
	old, err := l.Auditor.Open(kept)
	if err != nil {
		return nil, tlog.Tree{}, fmt.Errorf("the kept checkpoint: %w", err)
	}
	var proof tlog.TreeProof
	if old.N > 0 && old.N < tree.N {
		body, err := l.Get(ctx, "/events/consistency?from="+strconv.FormatInt(old.N, 10)+"&to="+strconv.FormatInt(tree.N, 10))
		if err != nil {
			return nil, tlog.Tree{}, err
		}
		var answer struct {
			Data struct {
				Proof []string `json:"proof"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &answer); err != nil {
			return nil, tlog.Tree{}, fmt.Errorf("the consistency proof: %w", err)
		}
		if proof, err = decodeHashes(answer.Data.Proof); err != nil {
			return nil, tlog.Tree{}, err
		}
	}
	if _, err := l.Auditor.CheckConsistency(kept, latest, proof); err != nil {
		return nil, tlog.Tree{}, err
	}
	return latest, tree, nil
}

// ProveEvent reads the inclusion proof of an event in the tree of size treeSize (a signed
// size) and checks it, with the event's hash when the client holds it ("" otherwise).
func (l *Log) ProveEvent(ctx context.Context, eventID, eventHash string, treeSize int64) (tlog.Tree, error) {
	body, err := l.Get(ctx, "/events/"+url.PathEscape(eventID)+"/proof?tree_size="+strconv.FormatInt(treeSize, 10))
	if err != nil {
		return tlog.Tree{}, err
	}
	var answer struct {
		Data struct {
			LeafIndex  int64    `json:"leafIndex"`
			Entry      string   `json:"entry"`
			Proof      []string `json:"proof"`
			Checkpoint string   `json:"checkpoint"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return tlog.Tree{}, fmt.Errorf("the inclusion proof: %w", err)
	}
	proof, err := decodeHashes(answer.Data.Proof)
	if err != nil {
		return tlog.Tree{}, err
	}
	return l.Auditor.CheckInclusion(ledgerlog.Inclusion{Entry: []byte(answer.Data.Entry), Index: answer.Data.LeafIndex,
		Checkpoint: []byte(answer.Data.Checkpoint), Proof: proof, EventHash: eventHash})
}

func decodeHashes(list []string) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(list))
	for i, s := range list {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b) != tlog.HashSize {
			return nil, fmt.Errorf("proof hash %d is not a base64 hash", i)
		}
		out[i] = tlog.Hash(b)
	}
	return out, nil
}
