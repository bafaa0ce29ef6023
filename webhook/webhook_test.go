package webhook_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/webhook"
)

// The signature is the HMAC-SHA256 of "<t>.<body>" (the vector is openssl's:
// printf '1700000000.{"a":1}' | openssl dgst -sha256 -hmac whsec_test_secret_123).
func TestWebhookSignature(t *testing.T) {
	const secret = "whsec_test_secret_123"
	at := time.Unix(1700000000, 0)
	body := []byte(`{"a":1}`)
	sig := webhook.Sign(secret, at, body)
	if want := "t=1700000000,v1=e89dcbfdce3392fb275033fb083d8c81e095a63bf687d9a2cd50e7d5f55e21f6"; sig != want {
		t.Fatalf("signature %s, want %s", sig, want)
	}
	tol := accountable.WebhookSignatureTolerance
	for _, c := range []struct {
		name   string
		secret string
		header string
		body   string
		now    time.Time
		want   error
	}{
		{"valid", secret, sig, `{"a":1}`, at.Add(time.Minute), nil},
		{"valid beside a rotated one", secret, "t=1700000000,v1=00ff,v1=" + strings.Split(sig, "v1=")[1], `{"a":1}`, at, nil},
		{"stale", secret, sig, `{"a":1}`, at.Add(tol + time.Second), webhook.ErrSignatureStale},
		{"from the future", secret, sig, `{"a":1}`, at.Add(-tol - time.Second), webhook.ErrSignatureStale},
		{"body changed", secret, sig, `{"a":2}`, at, webhook.ErrSignatureMismatch},
		{"another secret", "whsec_other_secret_456", sig, `{"a":1}`, at, webhook.ErrSignatureMismatch},
		{"timestamp changed", secret, strings.Replace(sig, "t=1700000000", "t=1700000001", 1), `{"a":1}`, at, webhook.ErrSignatureMismatch},
		{"no v1", secret, "t=1700000000", `{"a":1}`, at, webhook.ErrSignatureMalformed},
		{"garbage", secret, "sha256=abc", `{"a":1}`, at, webhook.ErrSignatureMalformed},
	} {
		if err := webhook.VerifySignature(c.secret, c.header, []byte(c.body), c.now, tol); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if a, b := webhook.NewSecret(), webhook.NewSecret(); a == b || !strings.HasPrefix(a, "whsec_") || len(a) < 40 {
		t.Fatalf("generated secrets %q %q", a, b)
	}
}

func TestWebhookSecretKey(t *testing.T) {
	key, err := webhook.ParseSecretKey("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
	if err != nil || !key.Configured() {
		t.Fatal(err)
	}
	sealed := key.Seal("wh-1", "whsec_secret")
	if strings.Contains(string(sealed), "whsec_secret") {
		t.Fatal("the secret is stored in the clear")
	}
	if got, err := key.Open("wh-1", sealed); err != nil || got != "whsec_secret" {
		t.Fatalf("open: %q %v", got, err)
	}
	if again := key.Seal("wh-1", "whsec_secret"); string(again) == string(sealed) {
		t.Fatal("two seals of one secret are equal (a fixed nonce)")
	}
	if _, err := key.Open("wh-2", sealed); err == nil {
		t.Fatal("a ciphertext opened for another endpoint")
	}
	other, _ := webhook.ParseSecretKey("HxwdHhscGRgXFhUUExIREA8ODQwLCgkIBwYFBAMCAQA")
	if _, err := other.Open("wh-1", sealed); err == nil {
		t.Fatal("a ciphertext opened with another key")
	}
	for _, bad := range []string{"", "c2hvcnQ=", "not base64!"} {
		if _, err := webhook.ParseSecretKey(bad); err == nil {
			t.Errorf("key %q accepted", bad)
		}
	}
}

func TestWebhookTargetPolicy(t *testing.T) {
	strict, open := webhook.TargetPolicy{}, webhook.TargetPolicy{AllowPrivate: true}
	for _, c := range []struct {
		addr    string
		allowed bool
	}{
		{"8.8.8.8", true}, {"2606:4700::1111", true}, {"::ffff:8.8.8.8", true}, {"2a00:1450:4001::1", true},
		{"127.0.0.1", false}, {"::1", false}, {"10.1.2.3", false}, {"172.16.0.1", false}, {"192.168.1.1", false},
		{"169.254.169.254", false}, {"fe80::1", false}, {"fc00::1", false}, {"100.64.0.1", false}, {"0.0.0.0", false},
		{"::ffff:127.0.0.1", false}, {"224.0.0.1", false},
		// Translation ranges: each of these reaches an IPv4 address through a gateway.
		{"64:ff9b::7f00:1", false},     // NAT64 of 127.0.0.1
		{"64:ff9b::a9fe:a9fe", false},  // NAT64 of 169.254.169.254
		{"64:ff9b::808:808", false},    // NAT64 of a public address: still a gateway's
		{"64:ff9b:1::a00:1", false},    // local-use NAT64
		{"::ffff:0:7f00:1", false},     // IPv4-translated (SIIT)
		{"::127.0.0.1", false},         // IPv4-compatible
		{"2002:7f00:1::1", false},      // 6to4 of 127.0.0.1
		{"2001:0:4136:e378::1", false}, // Teredo
		{"192.88.99.1", false},         // 6to4 relay anycast
		{"192.0.0.170", false},         // NAT64 discovery
		// Other special-purpose ranges that are not globally reachable.
		{"0.1.2.3", false}, {"192.0.2.10", false}, {"198.51.100.1", false}, {"203.0.113.5", false}, {"198.18.0.1", false},
		{"240.0.0.1", false}, {"255.255.255.255", false}, {"100::1", false}, {"2001:db8::1", false}, {"3fff::1", false},
		{"5f00::1", false}, {"fec0::1", false}, {"2001:2::1", false},
	} {
		a := netip.MustParseAddr(c.addr)
		if strict.Allows(a) != c.allowed {
			t.Errorf("%s: allowed %v", c.addr, !c.allowed)
		}
		if !open.Allows(a) {
			t.Errorf("%s refused with private addresses allowed", c.addr)
		}
	}
	for _, u := range []string{"http://127.0.0.1:8080/x", "http://[::1]/", "http://localhost/", "http://api.localhost/", "http://169.254.169.254/latest",
		"http://[64:ff9b::7f00:1]/", "https://[64:ff9b:1::a00:1]/in", "http://[2002:a00:1::1]/", "http://0.0.0.0/"} {
		if strict.CheckURL(u) == nil {
			t.Errorf("%s accepted", u)
		}
		if open.CheckURL(u) != nil {
			t.Errorf("%s refused with private addresses allowed", u)
		}
	}
	if err := strict.CheckURL("https://hooks.example.com/in"); err != nil {
		t.Fatalf("a public name: %v", err)
	}
}

// Only ports 80 and 443 by default; the configured ports instead when there are some;
// every port with AnyPort, or by default when private addresses are allowed.

func TestWebhookTargetPolicyPorts(t *testing.T) {
	strict := webhook.TargetPolicy{}
	custom := webhook.TargetPolicy{Ports: []uint16{8443}}
	anyPort := webhook.TargetPolicy{AnyPort: true}
	private := webhook.TargetPolicy{AllowPrivate: true}
	privateLimited := webhook.TargetPolicy{AllowPrivate: true, Ports: []uint16{443}}
	for _, c := range []struct {
		url                                   string
		strict, custom, any, private, limited bool
	}{
		{"https://hooks.example.com/in", true, false, true, true, true},
		{"http://hooks.example.com/in", true, false, true, true, false},
		{"https://hooks.example.com:443/in", true, false, true, true, true},
		{"HTTPS://hooks.example.com/in", true, false, true, true, true},
		{"http://hooks.example.com:8080/in", false, false, true, true, false},
		{"https://hooks.example.com:8443/in", false, true, true, true, false},
		{"http://hooks.example.com:25/", false, false, true, true, false},
		{"http://hooks.example.com:6379/", false, false, true, true, false},
		{"http://hooks.example.com:99999/", false, false, false, false, false},
	} {
		for _, p := range []struct {
			name   string
			policy webhook.TargetPolicy
			want   bool
		}{{"strict", strict, c.strict}, {"custom", custom, c.custom}, {"any", anyPort, c.any}, {"private", private, c.private},
			{"private, 443 only", privateLimited, c.limited}} {
			err := p.policy.CheckURL(c.url)
			if (err == nil) != p.want {
				t.Errorf("%s under %s: %v, want allowed %v", c.url, p.name, err, p.want)
			}
			if err != nil && accountable.ErrorCode(err) != accountable.ECodeValidationFailed {
				t.Errorf("%s under %s: %v", c.url, p.name, err)
			}
		}
	}
	public := netip.MustParseAddr("8.8.8.8")
	if !strict.AllowsAddrPort(netip.AddrPortFrom(public, 443)) || strict.AllowsAddrPort(netip.AddrPortFrom(public, 22)) ||
		strict.AllowsAddrPort(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), 443)) ||
		!private.AllowsAddrPort(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), 40000)) {
		t.Fatal("dial-time checks")
	}
	if strict.PortsText() != "80, 443" || custom.PortsText() != "8443" || anyPort.PortsText() != "any port" {
		t.Fatalf("ports text %q %q %q", strict.PortsText(), custom.PortsText(), anyPort.PortsText())
	}
}

// An endpoint more than the cap allows is refused with its own code (409) and the cap in
// the details; one below it is not.
