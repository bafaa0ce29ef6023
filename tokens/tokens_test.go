package tokens_test

import (
	"bytes"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/tokens"
)

func TestAPIKeys(t *testing.T) {
	key, prefix := tokens.NewAPIKey()
	p, ok := tokens.ParseAPIKey(key)
	if !ok || p != prefix || !strings.HasPrefix(key, "svk_") || len(prefix) != 12 {
		t.Fatalf("key %q prefix %q parsed %q %v", key, prefix, p, ok)
	}
	other, _ := tokens.NewAPIKey()
	if other == key || string(tokens.HashAPIKey(key)) == string(tokens.HashAPIKey(other)) {
		t.Fatal("two keys collide")
	}
	for _, bad := range []string{"", "svk_", "svk_" + strings.Repeat("G", 48), "sk_" + strings.Repeat("a", 49), key + "0", strings.ToUpper(key)} {
		if _, ok := tokens.ParseAPIKey(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A session token carries the tag of the key it was made with: another key's, an altered
// or a malformed token is told apart without a lookup.
func TestSessionTokenTag(t *testing.T) {
	key, other := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	token, hash := tokens.NewSessionToken(key)
	if !tokens.SessionTokenAuthentic(key, token) {
		t.Fatalf("its own token %q is not authentic", token)
	}
	if !bytes.Equal(hash, tokens.HashSessionToken(token)) {
		t.Fatal("the hash kept is not the token's")
	}
	again, _ := tokens.NewSessionToken(key)
	if again == token {
		t.Fatal("two tokens are equal")
	}
	flipped := []byte(token)
	flipped[3] ^= 1
	for _, bad := range []string{"", token + "x", string(flipped), token[:43], strings.Replace(token, ".", "", 1), "a.b"} {
		if tokens.SessionTokenAuthentic(key, bad) {
			t.Errorf("%q is authentic", bad)
		}
	}
	if tokens.SessionTokenAuthentic(other, token) {
		t.Error("a token is authentic under another key")
	}
}

func FuzzParseAPIKey(f *testing.F) {
	f.Add(accountable.APIKeyPrefix + strings.Repeat("0123456789abcdef", 3))
	f.Add(accountable.APIKeyPrefix + strings.Repeat("0123456789ABCDEF", 3))
	f.Add("")
	f.Add("Bearer svk_")
	f.Fuzz(func(t *testing.T, key string) {
		prefix, ok := tokens.ParseAPIKey(key)
		if !ok {
			if prefix != "" {
				t.Fatalf("a refused key %q gave the prefix %q", key, prefix)
			}
			return
		}
		// An accepted key is the service's own form: the prefix, then lowercase hex.
		if !strings.HasPrefix(key, accountable.APIKeyPrefix) || !strings.HasPrefix(key, prefix) || len(prefix) >= len(key) {
			t.Fatalf("%q accepted with the prefix %q", key, prefix)
		}
		if strings.ToLower(key) != key {
			t.Fatalf("%q accepted with uppercase hex", key)
		}
	})
}

// ParseAPIKey (written by hand) accepts exactly what APIKeyPattern accepts: edits of a
// valid key probe the edges, random strings the rest.
func TestParseAPIKeyMatchesItsPattern(t *testing.T) {
	re := regexp.MustCompile(tokens.APIKeyPattern)
	try := func(s string) {
		_, got := tokens.ParseAPIKey(s)
		if want := re.MatchString(s); got != want {
			t.Fatalf("%q: ParseAPIKey says %v, the pattern %v", s, got, want)
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	const alphabet = "0123456789abcdefABCDEFgzGZ-_.:/ svk\x00\xffé"
	seed := "svk_" + strings.Repeat("0a", 24)
	try(seed)
	for range 2000 {
		b := []byte(seed)
		switch rng.IntN(3) {
		case 0:
			b[rng.IntN(len(b))] = alphabet[rng.IntN(len(alphabet))]
		case 1:
			b = b[:rng.IntN(len(b))]
		default:
			b = append(b, alphabet[rng.IntN(len(alphabet))])
		}
		try(string(b))
	}
	for range 2000 {
		b := make([]byte, rng.IntN(60))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		try(string(b))
	}
	try("")
}
