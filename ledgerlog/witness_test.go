package ledgerlog_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"

	"filippo.io/torchwood"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/accountablework/accountable/ledgerlog"
)

// TestCosignatureKeyVerifiesTorchwoodsCosignatures checks this package's
// tlog-cosignature/v1 verifier, built from the public key alone, against an independent
// implementation: torchwood's signer (the one litewitness signs with).
func TestCosignatureKeyVerifiesTorchwoodsCosignatures(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := torchwood.NewCosignatureSigner("witness.example/w1", priv)
	if err != nil {
		t.Fatal(err)
	}
	v, err := ledgerlog.ParseCosignatureKey(signer.Verifier().String())
	if err != nil {
		t.Fatal(err)
	}
	if v.Name() != signer.Name() || v.KeyHash() != signer.KeyHash() {
		t.Fatalf("parsed %s %08x, want %s %08x", v.Name(), v.KeyHash(), signer.Name(), signer.KeyHash())
	}
	key, err := ledgerlog.GenerateKey("log.example")
	if err != nil {
		t.Fatal(err)
	}
	k, err := ledgerlog.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := k.SignCheckpoint(ledgerlog.Origin("log.example", "ws"), tlog.Tree{N: 7, Hash: tlog.RecordHash([]byte("x"))})
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(signed, note.VerifierList(k.Verifier()))
	if err != nil {
		t.Fatal(err)
	}
	cosigned, err := note.Sign(&note.Note{Text: n.Text}, signer)
	if err != nil {
		t.Fatal(err)
	}
	line := cosigned[strings.LastIndex(string(cosigned), "\n\n")+2:]
	both := ledgerlog.WithCosignatures(signed, string(line))
	opened, err := note.Open(both, note.VerifierList(k.Verifier(), v))
	if err != nil {
		t.Fatalf("the checkpoint with its cosignature: %v", err)
	}
	if len(opened.Sigs) != 2 {
		t.Fatalf("%d signatures verified, want the log's and the witness's", len(opened.Sigs))
	}
	// A cosignature of another checkpoint does not verify.
	other, err := k.SignCheckpoint(ledgerlog.Origin("log.example", "ws"), tlog.Tree{N: 8, Hash: tlog.RecordHash([]byte("x"))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.Open(ledgerlog.WithCosignatures(other, string(line)), note.VerifierList(v)); err == nil {
		t.Fatal("a cosignature verified on a checkpoint it does not sign")
	}
	for _, bad := range []string{"", "name+00000000+AAAA", strings.Replace(signer.Verifier().String(), "+", "+0", 1), k.VerifierKey} {
		if _, err := ledgerlog.ParseCosignatureKey(bad); err == nil {
			t.Errorf("ParseCosignatureKey(%q) took it", bad)
		}
	}
}

func TestParseWitnesses(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	s, _ := torchwood.NewCosignatureSigner("w.example", priv)
	ws, err := ledgerlog.ParseWitnesses(" http://127.0.0.1:7380/ " + s.Verifier().String() + " , ")
	if err != nil || len(ws) != 1 || ws[0].URL != "http://127.0.0.1:7380" || ws[0].Name() != "w.example" {
		t.Fatalf("ParseWitnesses: %+v, %v", ws, err)
	}
	for _, bad := range []string{"127.0.0.1:7380 " + s.Verifier().String(), "http://x", "http://a " + s.Verifier().String() + ",http://b " + s.Verifier().String()} {
		if _, err := ledgerlog.ParseWitnesses(bad); err == nil {
			t.Errorf("ParseWitnesses(%q) took it", bad)
		}
	}
}
