package store

import (
	"context"
	"errors"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/payload"
)

// Ledger verification compares these aggregates' rows with their chains (aggregateTables).
func init() {
	verifiesAggregateTable(accountable.AggregateWebhook, `SELECT id::text, aggregate_version FROM webhooks WHERE workspace_id = $1`)
}

// Webhook endpoints (migration 019): registered and deleted as commands with their ledger
// events; delivered by a workflow per endpoint (workflows.WebhookDelivery) that reads the
// workspace's stream after the endpoint's last delivered event, when the ledger feed says
// the workspace has new events, and records every attempt.

const webhookColumns = `id, workspace_id, url, event_types, created_at, deleted_at, aggregate_version`

func scanWebhook(row pgx.Row) (accountable.Webhook, error) {
	var w accountable.Webhook
	var deleted *accountable.Time
	err := row.Scan(&w.ID, &w.WorkspaceID, &w.URL, &w.EventTypes, &w.CreatedAt, &deleted, &w.AggregateVersion)
	w.DeletedAt, w.Status = deleted, accountable.WebhookActive
	if deleted != nil {
		w.Status = accountable.WebhookDeleted
	}
	return w, err
}

// RegisterWebhook records an endpoint with its webhook.created event and the message that
// starts its delivery workflow (WebhookDeliveryStart) once the command commits, unless
// the workspace has limit active endpoints already (accountable.CheckWebhookCapacity).
// seal encrypts the secret for the endpoint's id. The result carries no secret (it is the
// idempotency record's document).
//
// The count is taken under the workspace's webhook lock, held to the commit, in a
// statement after the lock (under READ COMMITTED each statement sees what committed
// before it began): two registrations at limit-1 count one after the other, and the second
// sees the first's endpoint. A replay of a registration is answered before the count, so
// it is answered at the cap too.
func (db *DB) RegisterWebhook(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.RegisterWebhook, limit int,
	seal func(webhookID string) []byte) (accountable.WebhookRegistration, bool, error) {
	cmd := commandOf[accountable.WebhookRegistration](p, idem, accountable.Causation{})
	var active int
	var countErr error
	cmd.prepare = func(pre *prelude) {
		active, countErr = 0, nil
		// Gated like every prelude statement: a request whose key another holds answers
		// in-progress at once instead of queueing for the lock.
		pre.batch.Queue(`SELECT pg_advisory_xact_lock(hashtextextended($1::text || '/webhook-endpoints', 0)) WHERE `+pre.Gate(2),
			append([]any{p.WorkspaceID}, pre.GateArgs()...)...)
		pre.QueryRow(`SELECT count(*) FROM webhooks WHERE workspace_id = $1 AND deleted_at IS NULL AND `+pre.Gate(2),
			func(row pgx.Row) error {
				countErr = row.Scan(&active)
				return nil // run reports it
			},
			append([]any{p.WorkspaceID}, pre.GateArgs()...)...)
	}
	cmd.run = func(ctx context.Context, tx *tx) (accountable.WebhookRegistration, error) {
		if countErr != nil {
			return accountable.WebhookRegistration{}, countErr
		}
		if err := accountable.CheckWebhookCapacity(active, limit); err != nil {
			return accountable.WebhookRegistration{}, err
		}
		w := accountable.Webhook{ID: uuid.Must(uuid.NewV7()).String(), WorkspaceID: p.WorkspaceID, URL: in.URL,
			EventTypes: in.EventTypes, Status: accountable.WebhookActive, CreatedAt: accountable.TimeOf(tx.Now()), AggregateVersion: 1}
		ev, err := tx.Append(aggregate(accountable.AggregateWebhook, w.ID), accountable.EventWebhookCreated,
			payload.WebhookCreated{ID: w.ID, URL: w.URL, EventTypes: w.EventTypes})
		if err != nil {
			return accountable.WebhookRegistration{}, err
		}
		tx.Queue(`INSERT INTO webhooks (workspace_id, id, url, event_types, secret_sealed, created_at, created_event_id, aggregate_version)
			VALUES ($1, $2, $3, $4, $5, $6, $7, 1)`,
			p.WorkspaceID, w.ID, w.URL, w.EventTypes, seal(w.ID), w.CreatedAt.Time, ev.ID)
		msg, err := tx.Messages().WebhookDeliveryStart(p.WorkspaceID, w.ID)
		if err != nil {
			return accountable.WebhookRegistration{}, err
		}
		tx.Send(msg)
		return accountable.WebhookRegistration{Webhook: w, Event: ev.Ref()}, nil
	}
	return runCommand(ctx, db, cmd)
}

// ListWebhooks lists the workspace's active endpoints, newest first.
func (db *DB) ListWebhooks(ctx context.Context, workspaceID string) ([]accountable.Webhook, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+webhookColumns+` FROM webhooks
		WHERE workspace_id = $1 AND deleted_at IS NULL ORDER BY created_at DESC, id DESC`, workspaceID)
	if err != nil {
		return nil, mapError(err)
	}
	defer rows.Close()
	out := []accountable.Webhook{}
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, mapError(err)
		}
		out = append(out, w)
	}
	return out, mapError(rows.Err())
}

// DeleteWebhook ends an endpoint's deliveries (its workflow stops at its next step) with a
// webhook.deleted event. Deleting a deleted endpoint answers it as it is.
func (db *DB) DeleteWebhook(ctx context.Context, p accountable.Principal, id string) (accountable.Webhook, error) {
	ref := aggregate(accountable.AggregateWebhook, id)
	cmd := commandOf[accountable.Webhook](p, nil, accountable.Causation{})
	cmd.locks = []aggregateRef{ref}
	cmd.run = func(ctx context.Context, tx *tx) (accountable.Webhook, error) {
		w, err := scanWebhook(tx.QueryRow(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE workspace_id = $1 AND id = $2`, p.WorkspaceID, id))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return w, accountable.NotFound("webhook")
		case err != nil || w.Status == accountable.WebhookDeleted:
			return w, err
		}
		now := accountable.TimeOf(tx.Now())
		w.Status, w.DeletedAt = accountable.WebhookDeleted, &now
		w.AggregateVersion++
		if _, err := tx.Append(ref, accountable.EventWebhookDeleted, payload.WebhookDeleted{ID: id}); err != nil {
			return w, err
		}
		tx.Queue(`UPDATE webhooks SET deleted_at = $3, aggregate_version = $4 WHERE workspace_id = $1 AND id = $2`,
			p.WorkspaceID, id, now.Time, w.AggregateVersion)
		return w, nil
	}
	w, _, err := runCommand(ctx, db, cmd)
	return w, err
}

// ListWebhookAttempts lists an endpoint's delivery attempts, newest first (404 for an
// endpoint the workspace does not have).
func (db *DB) ListWebhookAttempts(ctx context.Context, workspaceID, webhookID string, limit int) ([]accountable.WebhookAttempt, error) {
	var exists bool
	if err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhooks WHERE workspace_id = $1 AND id = $2)`,
		workspaceID, webhookID).Scan(&exists); err != nil {
		return nil, mapError(err)
	}
	if !exists {
		return nil, accountable.NotFound("webhook")
	}
	rows, err := db.pool.Query(ctx, `SELECT delivery_id, attempt, event_id, event_type, attempted_at, duration_ms, status_code, error, succeeded
		FROM webhook_attempts WHERE workspace_id = $1 AND webhook_id = $2
		ORDER BY attempted_at DESC, delivery_id, attempt DESC LIMIT $3`, workspaceID, webhookID, limit)
	if err != nil {
		return nil, mapError(err)
	}
	defer rows.Close()
	out := []accountable.WebhookAttempt{}
	for rows.Next() {
		var a accountable.WebhookAttempt
		if err := rows.Scan(&a.DeliveryID, &a.Attempt, &a.EventID, &a.EventType, &a.AttemptedAt, &a.DurationMS, &a.StatusCode, &a.Error, &a.Succeeded); err != nil {
			return nil, mapError(err)
		}
		out = append(out, a)
	}
	return out, mapError(rows.Err())
}

// WebhookEndpoint reads what a delivery needs of an endpoint.
func (db *DB) WebhookEndpoint(ctx context.Context, workspaceID, webhookID string) (accountable.WebhookEndpoint, error) {
	var e accountable.WebhookEndpoint
	var deleted *accountable.Time
	var pos, seq *int64
	err := db.pool.QueryRow(ctx, `SELECT url, secret_sealed, deleted_at, delivered_position, delivered_seq
		FROM webhooks WHERE workspace_id = $1 AND id = $2`, workspaceID, webhookID).Scan(&e.URL, &e.SealedSecret, &deleted, &pos, &seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return e, accountable.NotFound("webhook")
	}
	if err != nil {
		return e, mapError(err)
	}
	e.Deleted = deleted != nil
	if pos != nil && seq != nil {
		e.Delivered = accountable.StreamPosition{Position: *pos, Seq: *seq}
	}
	return e, nil
}

// NextWebhookDeliveries returns up to limit events due to an endpoint: those of its event
// types after the last one delivered (or after its own webhook.created event), read with
// the stream's horizon rule, so none that commits late is skipped. ended is true for a
// deleted endpoint; held is true when an event of its types has committed but is held
// behind an older transaction still running (it is read once that one ends, which may
// announce nothing: the caller reads again soon instead of waiting for a wake).
func (db *DB) NextWebhookDeliveries(ctx context.Context, workspaceID, webhookID string, limit int) (deliveries []accountable.WebhookDelivery, ended, held bool, err error) {
	var eventTypes []string
	var deleted *accountable.Time
	var after accountable.StreamPosition
	err = db.pool.QueryRow(ctx, `SELECT w.event_types, w.deleted_at,
			coalesce(w.delivered_position, e.stream_position), coalesce(w.delivered_seq, e.seq)
		FROM webhooks w JOIN ledger_events e ON e.workspace_id = w.workspace_id AND e.id = w.created_event_id
		WHERE w.workspace_id = $1 AND w.id = $2`, workspaceID, webhookID).Scan(&eventTypes, &deleted, &after.Position, &after.Seq)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && deleted != nil {
		return nil, true, false, nil
	}
	if err != nil {
		return nil, false, false, mapError(err)
	}
	f := accountable.EventFilter{After: after, Limit: limit}
	if !slices.Contains(eventTypes, accountable.WebhookAllEvents) {
		f.EventTypes = eventTypes
	}
	page, err := db.StreamEvents(ctx, workspaceID, f)
	if err != nil {
		return nil, false, false, err
	}
	for i, e := range page.Events {
		deliveries = append(deliveries, accountable.WebhookDelivery{WorkspaceID: workspaceID, WebhookID: webhookID,
			DeliveryID: accountable.WebhookDeliveryID(webhookID, e.ID), EventID: e.ID, EventType: e.EventType, Position: page.Positions[i]})
	}
	return deliveries, false, page.Held, nil
}

// ActiveWebhooks returns the ids of every active endpoint, by workspace: a worker that
// starts wakes them all, since the wake-ups promised to endpoints by a worker that stopped
// or died went with it. A system read across workspaces, like the outbox relay's.
func (db *DB) ActiveWebhooks(ctx context.Context) (map[string][]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT workspace_id, id FROM webhooks WHERE deleted_at IS NULL ORDER BY workspace_id, id`)
	if err != nil {
		return nil, mapError(err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var ws, id string
		if err := rows.Scan(&ws, &id); err != nil {
			return nil, mapError(err)
		}
		out[ws] = append(out[ws], id)
	}
	return out, mapError(rows.Err())
}

// WebhookEvent reads the event a delivery carries.
func (db *DB) WebhookEvent(ctx context.Context, workspaceID, eventID string) (accountable.Event, error) {
	e, _, err := scanEvent(db.pool.QueryRow(ctx, `SELECT `+eventColumns+` FROM ledger_events WHERE workspace_id = $1 AND id = $2`,
		workspaceID, eventID))
	if errors.Is(err, pgx.ErrNoRows) {
		return e, accountable.NotFound("event")
	}
	return e, mapError(err)
}

// RecordWebhookAttempt records an attempt as the delivery's next (its number counts the
// attempts recorded before it, so a delivery retried by a new workflow run after a worker
// died goes on counting) and, for a delivered one, moves the endpoint's place in the
// stream to the event, never back, in the same transaction. One delivery is attempted by
// one activity at a time.
func (db *DB) RecordWebhookAttempt(ctx context.Context, d accountable.WebhookDelivery, a accountable.WebhookAttempt) error {
	batch := &pgx.Batch{}
	batch.Queue(`INSERT INTO webhook_attempts (workspace_id, webhook_id, delivery_id, attempt, event_id, event_type, attempted_at,
			duration_ms, status_code, error, succeeded)
		SELECT $1, $2, $3, coalesce(max(attempt), 0) + 1, $4, $5, $6, $7, $8, $9, $10
		FROM webhook_attempts WHERE workspace_id = $1 AND webhook_id = $2 AND delivery_id = $3`,
		d.WorkspaceID, d.WebhookID, d.DeliveryID, d.EventID, d.EventType, a.AttemptedAt.Time, a.DurationMS, a.StatusCode, a.Error, a.Succeeded)
	if a.Succeeded {
		batch.Queue(`UPDATE webhooks SET delivered_position = $3, delivered_seq = $4
			WHERE workspace_id = $1 AND id = $2
			  AND (delivered_position IS NULL OR (delivered_position, delivered_seq) < ($3::bigint, $4::bigint))`,
			d.WorkspaceID, d.WebhookID, d.Position.Position, d.Position.Seq)
	}
	return mapError(pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error { return tx.SendBatch(ctx, batch).Close() }))
}
