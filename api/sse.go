package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/cursors"
)

// GET /events/stream?transport=sse answers one lease of Server-Sent Events (CONTRACT.md,
// "Events and webhooks"): the events after the cursor (after, else the Last-Event-ID
// header, else the start of the stream) as `ledger_event` frames whose id is the cursor
// after the event, read with the paged stream's filters and its horizon rule (an event
// that commits late is sent late, never skipped), then new events as they commit, until
// the lease ends: stream_ms (default 25 s, at most 60 s) or limit events (default and at
// most 1,000). An idle stream sends a `:` heartbeat comment every 5 s. A failure while
// streaming (PostgreSQL unreachable) ends the lease with an `error` frame {code,
// message}. The client resumes with the last id it processed.
//
// An idle stream costs no query: it waits for the process's LedgerFeed to say that its
// workspace has new events (commands of this process at once, those of other processes
// through LISTEN/NOTIFY), and polls every poll_ms only while the feed's connection is down
// or when a read found events held behind an older transaction still running. The lease
// is the stream's deadline, and Shutdown ends every stream.

// EventFeed wakes live streams when their workspace may have new events (store.LedgerFeed).
type EventFeed interface {
	// Subscribe returns a channel that receives a value when the workspace may have new
	// events, and the function that ends the subscription.
	Subscribe(workspaceID string) (<-chan struct{}, func())
	// Listening reports whether announcements from every process arrive.
	Listening() bool
}

// sseLease is what one lease streams.
type sseLease struct {
	workspaceID string
	filter      accountable.EventFilter // After advances as events are sent
	left        int                     // events still to send
	duration    time.Duration
	poll        time.Duration
	gone        func() bool // whether the client closed its connection (nil: not known)
}

// startEventStream validates the lease and starts its body stream.
func (s *Server) startEventStream(c *call, in *streamQuery, filter accountable.EventFilter) error {
	if !acceptsEventStream(c.fiber.Get(fiber.HeaderAccept)) {
		return accountable.ValidationError(accountable.Issue{Path: "Accept", Message: "must accept text/event-stream with transport=sse"})
	}
	lease := sseLease{workspaceID: c.principal.WorkspaceID, filter: filter, left: accountable.StreamLeaseEvents,
		duration: accountable.StreamLeaseDefault, poll: accountable.StreamPollDefault}
	if in.Limit != nil {
		lease.left = *in.Limit
	}
	if in.StreamMS != nil {
		lease.duration = time.Duration(*in.StreamMS) * time.Millisecond
	}
	if in.PollMS != nil {
		lease.poll = time.Duration(*in.PollMS) * time.Millisecond
	}
	if in.After == nil && in.Cursor == nil {
		if id := c.fiber.Get("Last-Event-ID"); id != "" {
			pos, ok := cursors.ParseStream(id)
			if !ok {
				return accountable.ValidationError(accountable.Issue{Path: "Last-Event-ID", Message: "is not an id this stream sent"})
			}
			lease.filter.After = pos
		}
	}
	// Counted against its credential's and its workspace's bounds until the stream ends.
	now := time.Now()
	release, err := s.leases.open(c.principal.KeyID, lease.workspaceID, now, now.Add(lease.duration))
	if err != nil {
		return err
	}
	// Subscribed before the first read, so that no commit between that read and the wait
	// goes unnoticed.
	var wake <-chan struct{}
	unsubscribe := func() {}
	if s.deps.Feed != nil {
		wake, unsubscribe = s.deps.Feed.Subscribe(lease.workspaceID)
	}
	ctx, cancel := context.WithTimeout(s.streams, lease.duration)
	fc := c.fiber
	lease.gone = clientGone(fc)
	fc.Set(fiber.HeaderContentType, "text/event-stream; charset=utf-8")
	fc.Set(fiber.HeaderCacheControl, "no-cache")
	fc.Set("X-Accel-Buffering", "no") // proxies that buffer (nginx) pass the frames on at once
	fc.Status(fiber.StatusOK)
	fc.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer release()
		defer cancel()
		defer unsubscribe()
		s.runEventStream(ctx, w, &lease, wake)
	})
	c.streaming = true
	return nil
}

// acceptsEventStream reports whether an Accept header admits text/event-stream (a missing
// header admits anything).
func acceptsEventStream(accept string) bool {
	if strings.TrimSpace(accept) == "" {
		return true
	}
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || params["q"] == "0" {
			continue
		}
		if mt == "text/event-stream" || mt == "text/*" || mt == "*/*" {
			return true
		}
	}
	return false
}

// runEventStream writes the lease's frames until it ends, the client goes away or the
// server shuts down.
func (s *Server) runEventStream(ctx context.Context, w *bufio.Writer, lease *sseLease, wake <-chan struct{}) {
	// The opening comment sends the headers at once; retry tells EventSource clients to
	// reconnect after a second.
	if !sseWrite(w, ": stream open\nretry: 1000\n\n") {
		return
	}
	heartbeat := time.NewTicker(accountable.StreamHeartbeatEvery)
	defer heartbeat.Stop()
	// A client that went away is noticed within a second, not at the next frame's failed
	// write (a heartbeat or two later): its lease is released for the next one it opens.
	var checkC <-chan time.Time
	if lease.gone != nil {
		check := time.NewTicker(clientCheckEvery)
		defer check.Stop()
		checkC = check.C
	}
	retry := time.NewTimer(0)
	defer retry.Stop()
	for {
		held, ok := s.sendEvents(ctx, w, lease)
		if !ok || lease.left == 0 {
			return
		}
		// Read again after poll_ms when nothing would wake the stream; sooner when an older
		// transaction held events back (they are committed: a wake-up has come already).
		var again time.Duration
		switch {
		case held:
			again = min(50*time.Millisecond, lease.poll)
		case wake == nil || !s.deps.Feed.Listening():
			again = lease.poll
		}
		var retryC <-chan time.Time
		if again > 0 {
			retry.Reset(again)
			retryC = retry.C
		}
	wait:
		for {
			select {
			case <-ctx.Done():
				sseWrite(w, ": lease ended\n\n")
				return
			case <-heartbeat.C:
				if !sseWrite(w, ": heartbeat\n\n") {
					return
				}
			case <-checkC:
				if lease.gone() {
					return
				}
			case <-wake:
				break wait
			case <-retryC:
				break wait
			}
		}
		if !retry.Stop() {
			select {
			case <-retry.C:
			default:
			}
		}
	}
}

// sendEvents sends every event readable after the lease's cursor (up to what it has
// left) and reports whether events after them were held back. ok is false when the
// stream must end.
func (s *Server) sendEvents(ctx context.Context, w *bufio.Writer, lease *sseLease) (held, ok bool) {
	for lease.left > 0 {
		f := lease.filter
		f.Limit = min(lease.left, 500)
		read, err := s.readForStreams(lease.workspaceID, f)
		if err != nil {
			if ctx.Err() != nil { // the lease ended or the server is shutting down
				sseWrite(w, ": lease ended\n\n")
				return false, false
			}
			e := s.streamError(err)
			data, _ := json.Marshal(map[string]string{"code": e.Code, "message": e.Message})
			sseWrite(w, "event: error\ndata: "+string(data)+"\n\n")
			return false, false
		}
		page := read.page
		if len(page.Events) > 0 {
			if _, err := w.Write(read.frames); err != nil || w.Flush() != nil {
				return false, false
			}
			lease.left -= len(page.Events)
			lease.filter.After = page.Next
		}
		if !page.HasMore {
			return page.Held, true
		}
	}
	return false, true
}

// streamRead is one read of the stream with its frames.
type streamRead struct {
	page   accountable.EventPage
	frames []byte // the events as ledger_event frames
}

// readForStreams reads a page for a live stream and encodes its frames. Streams that ask
// for the same page at the same moment share one read: the streams following a workspace
// are woken together by its commit and all ask for what follows the same cursor, so 500
// subscribers cost one query and one encoding per commit, not 500. The read has a context
// of its own (bounded, ended by Shutdown), since any of the streams that share it may end
// first.
func (s *Server) readForStreams(workspaceID string, f accountable.EventFilter) (*streamRead, error) {
	key := strings.Join([]string{workspaceID, cursors.EncodeStream(f.After), strconv.Itoa(f.Limit),
		strings.Join(f.EventTypes, ","), strings.Join(f.AggregateTypes, ",")}, "|")
	v, err, _ := s.streamReads.Do(key, func() (any, error) {
		ctx, cancel := context.WithTimeout(s.streams, 15*time.Second)
		defer cancel()
		page, err := ledgerStore.of(s).StreamEvents(ctx, workspaceID, f)
		if err != nil {
			return nil, err
		}
		frames := make([]byte, 0, 1024*len(page.Events))
		for i, e := range page.Events {
			data, err := json.Marshal(e)
			if err != nil {
				return nil, fmt.Errorf("api: encode ledger event %s for a live stream: %w", e.ID, err)
			}
			frames = append(frames, "id: "...)
			frames = append(frames, cursors.EncodeStream(page.Positions[i])...)
			frames = append(frames, "\nevent: ledger_event\ndata: "...)
			frames = append(frames, data...)
			frames = append(frames, "\n\n"...)
		}
		return &streamRead{page: page, frames: frames}, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*streamRead), nil
}

// streamError is the catalogued error a failed read of a live stream reports.
func (s *Server) streamError(err error) *accountable.Error {
	var e *accountable.Error
	if errors.As(err, &e) {
		return e
	}
	s.log.Error("reading the ledger for a live stream", "err", err)
	return accountable.Errorf(accountable.ECodeInternal, "The stream could not be read; resume it with the last id received.")
}

// sseWrite writes and flushes text; false when the client is gone.
func sseWrite(w *bufio.Writer, text string) bool {
	if _, err := w.WriteString(text); err != nil {
		return false
	}
	return w.Flush() == nil
}
