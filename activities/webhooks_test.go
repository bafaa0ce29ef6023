package activities_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/activities"
	"github.com/accountablework/accountable/webhook"
)

// fakeWebhookStore holds one endpoint and records the attempts.
type fakeWebhookStore struct {
	mu       sync.Mutex
	url      string
	sealed   []byte
	attempts []accountable.WebhookAttempt
}

func (s *fakeWebhookStore) NextWebhookDeliveries(context.Context, string, string, int) ([]accountable.WebhookDelivery, bool, bool, error) {
	return nil, false, false, nil
}

func (s *fakeWebhookStore) WebhookEndpoint(context.Context, string, string) (accountable.WebhookEndpoint, error) {
	return accountable.WebhookEndpoint{URL: s.url, SealedSecret: s.sealed}, nil
}

func (s *fakeWebhookStore) WebhookEvent(_ context.Context, workspaceID, eventID string) (accountable.Event, error) {
	return accountable.Event{EventHeader: accountable.EventHeader{ID: eventID, WorkspaceID: workspaceID, EventType: "work.created"},
		Payload: accountable.Object("{}")}, nil
}

func (s *fakeWebhookStore) RecordWebhookAttempt(_ context.Context, _ accountable.WebhookDelivery, a accountable.WebhookAttempt) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts = append(s.attempts, a)
	return nil
}

// A delivery that gets no HTTP answer (its address refused by the policy, its port not
// allowed, a closed port) is recorded with the generic reason, never the dial error with
// the addresses and ports it names; one that gets an answer keeps its status. The
// worker's log has the cause.
func TestWebhookAttemptsDoNotRevealTheNetwork(t *testing.T) {
	answering := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(answering.Close)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String() + "/in"
	closed.Close() // nothing listens there any more: connection refused
	answeringPort := mustPort(t, answering.URL)

	key, err := webhook.ParseSecretKey("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		policy webhook.TargetPolicy
		url    string
		status int // 0: no answer
	}{
		{"a loopback address under the default policy", webhook.TargetPolicy{}, answering.URL + "/in", 0},
		{"a port outside the allowed ones", webhook.TargetPolicy{AllowPrivate: true, Ports: []uint16{443}}, answering.URL + "/in", 0},
		{"a closed port", webhook.TargetPolicy{AllowPrivate: true}, closedURL, 0},
		{"an answer", webhook.TargetPolicy{AllowPrivate: true}, answering.URL + "/in", http.StatusServiceUnavailable},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := &fakeWebhookStore{url: c.url, sealed: key.Seal("wh-1", "0123456789abcdef")}
			logs := &bytes.Buffer{}
			a := &activities.Webhooks{Store: store, Key: key, Client: activities.NewWebhookClient(c.policy, 2*time.Second),
				Log: slog.New(slog.NewTextHandler(logs, nil))}
			var s testsuite.WorkflowTestSuite
			env := s.NewTestActivityEnvironment()
			env.RegisterActivity(a)
			_, err := env.ExecuteActivity(a.DeliverWebhook, accountable.WebhookDelivery{WorkspaceID: "ws-1", WebhookID: "wh-1",
				DeliveryID: "whd_1", EventID: "ev-1", EventType: "work.created", Position: accountable.StreamPosition{Position: 10, Seq: 1}})
			if err == nil {
				t.Fatal("an attempt that was not accepted succeeded")
			}
			if len(store.attempts) != 1 {
				t.Fatalf("%d attempts recorded", len(store.attempts))
			}
			got := store.attempts[0]
			if got.Succeeded || got.Error == nil {
				t.Fatalf("attempt %+v", got)
			}
			if c.status != 0 {
				if got.StatusCode == nil || *got.StatusCode != c.status || *got.Error != "the receiver answered 503" {
					t.Fatalf("attempt %+v: want the status kept", got)
				}
				return
			}
			if got.StatusCode != nil || *got.Error != accountable.WebhookNoAnswer {
				t.Fatalf("attempt %+v (error %q): want no status and the generic reason", got, *got.Error)
			}
			// Neither the record nor the activity's failure (kept in Temporal's history) names
			// the address, the port or how the connection failed.
			for _, text := range []string{*got.Error, err.Error()} {
				for _, leak := range []string{"127.0.0.1", answeringPort, mustPort(t, closedURL), "refused", "dial", "connect"} {
					if strings.Contains(text, leak) {
						t.Fatalf("%q names %q", text, leak)
					}
				}
			}
			if !strings.Contains(logs.String(), "127.0.0.1") {
				t.Fatalf("the log does not keep the cause: %s", logs)
			}
		})
	}
}

func mustPort(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}
