package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/webhook"
)

// WebhookStore is what the webhook activities need.
type WebhookStore interface {
	NextWebhookDeliveries(ctx context.Context, workspaceID, webhookID string, limit int) (deliveries []accountable.WebhookDelivery, ended, held bool, err error)
	WebhookEndpoint(ctx context.Context, workspaceID, webhookID string) (accountable.WebhookEndpoint, error)
	WebhookEvent(ctx context.Context, workspaceID, eventID string) (accountable.Event, error)
	RecordWebhookAttempt(ctx context.Context, d accountable.WebhookDelivery, a accountable.WebhookAttempt) error
}

// WebhookWaker wakes an endpoint's delivery workflow when its workspace has new events
// (worker.WebhookWaker, on the process's ledger feed).
type WebhookWaker interface {
	// Park asks for one wake signal to the endpoint's workflow at the next commit of
	// events in its workspace.
	Park(workspaceID, webhookID string)
}

// Webhooks holds the webhook activities: reading what is due to an endpoint and
// delivering one event, signed, recording every attempt.
type Webhooks struct {
	Store WebhookStore
	// Waker wakes idle endpoints; nil: none (the workflow then reads every few seconds).
	Waker WebhookWaker
	Key   webhook.SecretKey
	// Client sends the deliveries; NewWebhookClient makes one that keeps to the policy.
	Client *http.Client
	// Now is the clock of the signatures (time.Now when nil).
	Now func() time.Time
	// Log receives why an attempt got no answer (the delivery record says only that it got
	// none: accountable.WebhookNoAnswer); nil: not logged.
	Log *slog.Logger
}

// WebhookRef names an endpoint.
type WebhookRef struct {
	WorkspaceID string `json:"workspaceId"`
	WebhookID   string `json:"webhookId"`
}

// WebhookBatch is what is due to an endpoint.
type WebhookBatch struct {
	Deliveries []accountable.WebhookDelivery `json:"deliveries"`
	Ended      bool                          `json:"ended"` // the endpoint was deleted
	// Held: an event of the endpoint's types has committed but is held behind an older
	// transaction still running, whose end may announce nothing (read again soon).
	Held bool `json:"held,omitempty"`
	// Parked: the next commit of the workspace's events, from before this read on, wakes
	// the workflow (WebhookWaker.Park), so it may wait for the wake instead of polling.
	Parked bool `json:"parked,omitempty"`
}

// WebhookBatchSize is the most events one read hands to the delivery workflow.
const WebhookBatchSize = 20

// NextWebhookDeliveries reads the events due to an endpoint. The endpoint is parked before
// the read: an event that commits after that moment wakes the workflow, and one that
// committed before it is read now (or found held), so none falls between this read and
// the workflow's wait. A park outlives its read harmlessly: the wake it brings costs one
// more read.
func (a *Webhooks) NextWebhookDeliveries(ctx context.Context, in WebhookRef) (WebhookBatch, error) {
	parked := a.Waker != nil
	if parked {
		a.Waker.Park(in.WorkspaceID, in.WebhookID)
	}
	ds, ended, held, err := a.Store.NextWebhookDeliveries(ctx, in.WorkspaceID, in.WebhookID, WebhookBatchSize)
	return WebhookBatch{Deliveries: ds, Ended: ended, Held: held, Parked: parked}, retryable(err)
}

// errWebhookRefused is an attempt the receiver did not accept (a status other than 2xx,
// or no answer): retried with backoff by the workflow's retry policy.
var errWebhookRefused = errors.New("webhook delivery not accepted")

// DeliverWebhook sends one event to its endpoint and records the attempt; an attempt that
// is not accepted fails (and is retried). Idempotent: an event the endpoint has passed
// already (a retry after a worker died between the receiver's answer and the activity's
// completion) is not sent again, and a deleted endpoint is sent nothing.
func (a *Webhooks) DeliverWebhook(ctx context.Context, d accountable.WebhookDelivery) error {
	ep, err := a.Store.WebhookEndpoint(ctx, d.WorkspaceID, d.WebhookID)
	if err != nil {
		return retryable(err)
	}
	if ep.Deleted || !positionBefore(ep.Delivered, d.Position) {
		return nil
	}
	secret, err := a.Key.Open(d.WebhookID, ep.SealedSecret)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), "webhook_secret", err)
	}
	ev, err := a.Store.WebhookEvent(ctx, d.WorkspaceID, d.EventID)
	if err != nil {
		return retryable(err)
	}
	body, err := json.Marshal(accountable.WebhookBody{ID: d.DeliveryID, Type: d.EventType, WebhookID: d.WebhookID, Event: ev})
	if err != nil {
		return temporal.NewNonRetryableApplicationError(err.Error(), "webhook_body", err)
	}
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	attempt := accountable.WebhookAttempt{DeliveryID: d.DeliveryID, EventID: d.EventID, EventType: d.EventType} // numbered by the store
	started := now()
	// Heartbeats while the receiver is waited for: a worker that dies in the middle of an
	// attempt is noticed within the heartbeat timeout, and the event is delivered again.
	beat, stopBeat := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-beat.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	status, sendErr := a.send(ctx, ep.URL, secret, started, d, body)
	stopBeat()
	attempt.AttemptedAt = accountable.TimeOf(started)
	attempt.DurationMS = time.Since(started).Milliseconds()
	if status != 0 {
		attempt.StatusCode = &status
	}
	attempt.Succeeded = sendErr == nil && status >= 200 && status < 300
	if !attempt.Succeeded {
		msg := fmt.Sprintf("the receiver answered %d", status)
		if sendErr != nil {
			// The cause names addresses and ports of the network the worker is in: the
			// operators' log keeps it, the workspace's record a generic reason.
			msg = accountable.WebhookNoAnswer
			if a.Log != nil {
				a.Log.Info("a webhook delivery attempt got no answer", "workspace_id", d.WorkspaceID, "webhook_id", d.WebhookID,
					"delivery_id", d.DeliveryID, "err", sendErr)
			}
		}
		attempt.Error = &msg
	}
	if err := a.Store.RecordWebhookAttempt(context.WithoutCancel(ctx), d, attempt); err != nil {
		return retryable(err)
	}
	if !attempt.Succeeded {
		return fmt.Errorf("%w: %s", errWebhookRefused, *attempt.Error)
	}
	return nil
}

// send POSTs body signed at t and returns the receiver's status (0: no answer).
func (a *Webhooks) send(ctx context.Context, url, secret string, t time.Time, d accountable.WebhookDelivery, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "accountable-webhooks/1")
	req.Header.Set(accountable.WebhookSignatureHeader, webhook.Sign(secret, t, body))
	req.Header.Set("X-Svc-Delivery-Id", d.DeliveryID)
	req.Header.Set("X-Svc-Event-Type", d.EventType)
	res, err := a.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10)) //nolint:errcheck // the answer's body is not kept
	return res.StatusCode, nil
}

// positionBefore reports whether a comes before b in the stream.
func positionBefore(a, b accountable.StreamPosition) bool {
	return a.Position < b.Position || a.Position == b.Position && a.Seq < b.Seq
}

// NewWebhookClient returns the HTTP client of deliveries: each attempt bounded by timeout,
// no redirects followed (a receiver answers where it was registered), no proxy, and every
// connection refused unless the policy allows the address it resolved to and its port (so
// a name that resolves to a private or translated address is refused too, whenever it
// does).
func NewWebhookClient(policy webhook.TargetPolicy, timeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: timeout, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !policy.AllowsAddrPort(ap) {
			return fmt.Errorf("%w: %s", errWebhookTargetRefused, address)
		}
		return nil
	}}
	return &http.Client{
		Timeout:       timeout,
		Transport:     &http.Transport{DialContext: dialer.DialContext, Proxy: nil, MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// errWebhookTargetRefused is a connection the policy refused (WEBHOOK_ALLOW_PRIVATE,
// WEBHOOK_PORTS).
var errWebhookTargetRefused = errors.New("webhook delivery refused: the address or port is not allowed (WEBHOOK_ALLOW_PRIVATE, WEBHOOK_PORTS)")
