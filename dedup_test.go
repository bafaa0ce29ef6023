package accountable_test

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

func TestClaimDedupRules(t *testing.T) {
	id := "0190c0de-0000-7000-8000-000000000000"
	cases := []struct {
		name string
		cmd  accountable.ClaimDedup
		want []string
	}{
		{"minimal", accountable.ClaimDedup{Source: "github", EventKey: "delivery-1"}, nil},
		{"everything", accountable.ClaimDedup{Source: "github", EventKey: "delivery-1", TTLSeconds: ptr(int64(60)), InitiativeID: &id, ActiveRunID: &id}, nil},
		{"missing source", accountable.ClaimDedup{EventKey: "k"}, []string{"/source"}},
		{"missing event key", accountable.ClaimDedup{Source: "s"}, []string{"/event_key"}},
		{"source too long", accountable.ClaimDedup{Source: strings.Repeat("s", 201), EventKey: "k"}, []string{"/source"}},
		{"event key at the bound", accountable.ClaimDedup{Source: "s", EventKey: strings.Repeat("k", 1000)}, nil},
		{"event key too long", accountable.ClaimDedup{Source: "s", EventKey: strings.Repeat("k", 1001)}, []string{"/event_key"}},
		{"ttl 0", accountable.ClaimDedup{Source: "s", EventKey: "k", TTLSeconds: ptr(int64(0))}, []string{"/ttl_seconds"}},
		{"ttl 1", accountable.ClaimDedup{Source: "s", EventKey: "k", TTLSeconds: ptr(int64(1))}, nil},
		{"ttl 7 days", accountable.ClaimDedup{Source: "s", EventKey: "k", TTLSeconds: ptr(int64(604800))}, nil},
		{"ttl beyond 7 days", accountable.ClaimDedup{Source: "s", EventKey: "k", TTLSeconds: ptr(int64(604801))}, []string{"/ttl_seconds"}},
		{"initiative not a uuid", accountable.ClaimDedup{Source: "s", EventKey: "k", InitiativeID: ptr("i-1")}, []string{"/initiative_id"}},
		{"run not a uuid", accountable.ClaimDedup{Source: "s", EventKey: "k", ActiveRunID: ptr("r-1")}, []string{"/active_run_id"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := issuePaths(c.cmd.Validate()); !slices.Equal(got, c.want) {
				t.Fatalf("issues at %q, want %q", got, c.want)
			}
		})
	}
	if d := (accountable.ClaimDedup{}).TTL(); d != time.Hour {
		t.Fatalf("default ttl %s", d)
	}
	if d := (accountable.ClaimDedup{TTLSeconds: ptr(int64(90))}).TTL(); d != 90*time.Second {
		t.Fatalf("ttl %s", d)
	}
}

// The fingerprint is sha256 of the canonical {event_key, source, workspace_id}: the same
// event in two workspaces has two fingerprints; the workspace id's case does not matter.
func TestDedupFingerprint(t *testing.T) {
	ws := "0190c0de-0000-7000-8000-00000000abcd"
	got, err := canonical.DigestOf(accountable.DedupFingerprintOf(strings.ToUpper(ws), "github", "delivery \"1\""))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(`{"event_key":"delivery \"1\"","source":"github","workspace_id":"` + ws + `"}`))
	if want := "sha256:" + hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("fingerprint %s, want %s", got, want)
	}
	other, _ := canonical.DigestOf(accountable.DedupFingerprintOf("0190c0de-0000-7000-8000-00000000abce", "github", "delivery \"1\""))
	swapped, _ := canonical.DigestOf(accountable.DedupFingerprintOf(ws, "delivery \"1\"", "github"))
	if other == got || swapped == got {
		t.Fatal("the workspace, the source and the key each make the fingerprint")
	}
}
