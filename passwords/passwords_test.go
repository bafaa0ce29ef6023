package passwords_test

import (
	"strings"
	"testing"

	"github.com/accountablework/accountable/passwords"
)

func TestHashAndVerify(t *testing.T) {
	h, err := passwords.Hash("correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") || strings.Contains(h, "horse") {
		t.Fatalf("hash %s", h)
	}
	if again, _ := passwords.Hash("correct horse battery staple"); again == h {
		t.Fatal("two hashes of one password are equal (no salt)")
	}
	for pw, want := range map[string]bool{"correct horse battery staple": true, "correct horse battery stapl": false, "": false,
		strings.Repeat("x", 2000): false} {
		if ok, err := passwords.Verify(h, pw); err != nil || ok != want {
			t.Errorf("verify %.20q: %v %v, want %v", pw, ok, err, want)
		}
	}
	for _, bad := range []string{"", "$argon2i$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA", "$argon2id$v=18$m=19456,t=2,p=1$c2FsdA$aGFzaA",
		"$argon2id$v=19$m=0,t=2,p=1$c2FsdA$aGFzaA", "$argon2id$v=19$m=19456,t=2,p=1$!!$aGFzaA", "plain"} {
		if _, err := passwords.Verify(bad, "whatever password"); err == nil {
			t.Errorf("malformed hash %q accepted", bad)
		}
	}
	// A hash made with other parameters (m=64 KiB, t=1) still verifies: they travel with it.
	const cheap = "$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHRzYWx0c2FsdA$Z1qJoidr+8sU60BpwATVOkU3GrMJkSaNaq56Kpu1bzs"
	if ok, err := passwords.Verify(cheap, "password1234"); err != nil || !ok {
		t.Fatalf("a hash with other parameters: %v %v", ok, err)
	}
}

func TestCheck(t *testing.T) {
	for pw, ok := range map[string]bool{"short": false, "twelve chars": true, strings.Repeat("é", 12): true,
		strings.Repeat("a", 1025): false, "\xff\xfe invalid utf8": false} {
		if (passwords.Check(pw) == nil) != ok {
			t.Errorf("%.20q: %v", pw, passwords.Check(pw))
		}
	}
}
