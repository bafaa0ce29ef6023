package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/valyala/fasthttp"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/canonical"
)

// templates are the values of real requests the service handled in this run: pgbench
// sends them, so its rows are as large as the service's.
type templates struct {
	CreatedPayload, CreatedDigest, CreatedHash       string
	Title, Description, Priority, Metadata           string
	CreateDigest, CreateResponse                     string
	CompletedPayload, CompletedDigest, CompletedHash string
	Summary, Evidence, Hours, Cost                   string
	CompleteDigest, CompleteResponse                 string
	// The parts of the completion's one statement (store.CompleteWorkSQL): its event's
	// canonical header around the version and previous hash, as bytea hex, and its replay
	// document around the event's version and hash and the task, with the task's
	// concurrency.
	HeaderBefore, HeaderMiddle, HeaderAfter string
	DocA, DocB, DocC, DocD, Concurrency     string
}

// commonVars are the pgbench variables of every run.
func (b *bench) commonVars() map[string]string {
	now := time.Now().UTC().Truncate(time.Microsecond)
	return map[string]string{
		"ws": b.main.WorkspaceID, "actor_type": "human", "actor_id": b.main.UserID,
		"task_type": "task", "schema_version": "1.0.0", "todo": "todo", "completed": "completed",
		"created_type": "work.created", "completed_type": "work.completed",
		"create_op": "createWork", "complete_op": "completeWork",
		"v1": "1", "v2": "2", "exact": "true", "seeded_at": b.seededAt,
		"now":     now.Format("2006-01-02T15:04:05.000000Z"),
		"expires": now.Add(24 * time.Hour).Format("2006-01-02T15:04:05.000000Z"),
	}
}

// captureCreated takes the values of a task the service created in this run: its
// work.created event, its row and its idempotency record.
func (b *bench) captureCreated() error {
	t := &b.tmpl
	var desc *string
	err := b.db.QueryRow(b.ctx, `SELECT e.payload::text, e.payload_digest, e.event_hash, t.title, t.description, t.priority,
			t.metadata::text, i.request_digest, i.response::text
		FROM ledger_events e
		JOIN tasks t ON t.workspace_id = e.workspace_id AND t.id = e.aggregate_id::uuid
		JOIN idempotency_records i ON i.workspace_id = e.workspace_id AND i.key = e.idempotency_key
		WHERE e.workspace_id = $1 AND e.event_type = 'work.created' AND e.idempotency_key LIKE 'bench-%'
		LIMIT 1`, b.main.WorkspaceID).Scan(&t.CreatedPayload, &t.CreatedDigest, &t.CreatedHash, &t.Title, &desc, &t.Priority,
		&t.Metadata, &t.CreateDigest, &t.CreateResponse)
	if err != nil {
		return fmt.Errorf("reading a created task of the service: %w", err)
	}
	if desc == nil {
		return errors.New("the service's task has no description")
	}
	t.Description = *desc
	b.haveTmpl.created = true
	for k, v := range map[string]string{"created_payload": t.CreatedPayload, "created_digest": t.CreatedDigest,
		"created_hash": t.CreatedHash, "title": t.Title, "description": t.Description, "priority": t.Priority,
		"metadata": t.Metadata, "create_digest": t.CreateDigest, "create_response": t.CreateResponse} {
		b.pgb.vars[k] = v
	}
	return nil
}

// captureCompleted takes the values of a completion the service made in this run.
func (b *bench) captureCompleted() error {
	t := &b.tmpl
	var taskID string
	var h accountable.EventHeader
	err := b.db.QueryRow(b.ctx, `SELECT e.aggregate_id, e.payload::text, e.payload_digest, e.event_hash, i.request_digest, i.response::text,
			e.id::text, e.workspace_id::text, e.aggregate_type, e.aggregate_version, e.event_type, e.schema_version, e.actor_type,
			e.actor_id, e.occurred_at, e.recorded_at, e.idempotency_key, e.causation_id, e.correlation_id, e.previous_hash
		FROM ledger_events e
		JOIN idempotency_records i ON i.workspace_id = e.workspace_id AND i.key = e.idempotency_key
		WHERE e.workspace_id = $1 AND e.event_type = 'work.completed' AND e.idempotency_key LIKE 'bench-%'
		LIMIT 1`, b.main.WorkspaceID).Scan(&taskID, &t.CompletedPayload, &t.CompletedDigest, &t.CompletedHash,
		&t.CompleteDigest, &t.CompleteResponse, &h.ID, &h.WorkspaceID, &h.AggregateType, &h.AggregateVersion, &h.EventType,
		&h.SchemaVersion, &h.ActorType, &h.ActorID, &h.OccurredAt, &h.RecordedAt, &h.IdempotencyKey, &h.CausationID,
		&h.CorrelationID, &h.PreviousHash)
	if err != nil {
		return fmt.Errorf("reading a completion of the service: %w", err)
	}
	h.AggregateID, h.PayloadDigest = taskID, t.CompletedDigest
	if err := t.completionParts(h); err != nil {
		return err
	}
	err = b.db.QueryRow(b.ctx, `SELECT summary, evidence::text, measured_duration_hours::text, cost_cents::text
		FROM receipts WHERE workspace_id = $1 AND task_id = $2`, b.main.WorkspaceID, taskID).
		Scan(&t.Summary, &t.Evidence, &t.Hours, &t.Cost)
	if err != nil {
		return fmt.Errorf("reading a receipt of the service: %w", err)
	}
	b.haveTmpl.completed = true
	for k, v := range map[string]string{"completed_payload": t.CompletedPayload, "completed_digest": t.CompletedDigest,
		"completed_hash": t.CompletedHash, "summary": t.Summary, "evidence": t.Evidence, "hours": t.Hours, "cost": t.Cost,
		"complete_digest": t.CompleteDigest, "complete_response": t.CompleteResponse,
		"header_before": t.HeaderBefore, "header_middle": t.HeaderMiddle, "header_after": t.HeaderAfter,
		"doc_a": t.DocA, "doc_b": t.DocB, "doc_c": t.DocC, "doc_d": t.DocD, "concurrency": t.Concurrency} {
		b.pgb.vars[k] = v
	}
	return nil
}

// completionParts cuts the parts of the completion's one statement out of the completion
// the service made (its event's header h, and the replay document in CompleteResponse).
func (t *templates) completionParts(h accountable.EventHeader) error {
	header, err := canonical.JSON(h)
	if err != nil {
		return err
	}
	version := `"aggregateVersion":` + strconv.FormatInt(h.AggregateVersion, 10)
	previous := `"previousHash":null`
	if h.PreviousHash != nil {
		previous = `"previousHash":"` + *h.PreviousHash + `"`
	}
	before, rest, ok1 := strings.Cut(string(header), version)
	middle, after, ok2 := strings.Cut(rest, previous)
	doc := t.CompleteResponse
	docA, rest, ok3 := strings.Cut(doc, `"aggregateVersion":`)
	task, docD, ok4 := strings.Cut(rest, `,"receipt":`)
	_, concurrency, ok5 := strings.Cut(task, `"concurrency"`)
	concurrency = strings.TrimPrefix(strings.TrimSpace(concurrency), ":")
	if !(ok1 && ok2 && ok3 && ok4 && ok5) || !strings.HasSuffix(concurrency, "}}") {
		return fmt.Errorf("cutting the service's completion into the statement's parts: header %s, document %s", header, doc)
	}
	hexOf := func(s string) string { return `\x` + hex.EncodeToString([]byte(s)) }
	t.HeaderBefore = hexOf(before + `"aggregateVersion":`)
	t.HeaderMiddle = hexOf(middle + `"previousHash":`)
	t.HeaderAfter = hexOf(after)
	t.DocA, t.DocB, t.DocC, t.DocD = docA+`"aggregateVersion":`, `,"eventHash":"`, `","duplicate":false,"task":`, `,"receipt":`+docD
	t.Concurrency = strings.TrimSpace(strings.TrimSuffix(concurrency, "}"))
	return nil
}

// runsNeed is how many work items runs runs at rate (per second) may use, with a margin.
func (b *bench) runsNeed(rate float64, runs int) int {
	return int(rate*b.window().Seconds()*float64(runs)*1.25) + 1000
}

// serviceRateEstimate is the rate of completions to seed for: the highest seen so far
// with a margin (more clients may go faster), or before any the highest creation rate (a
// completion costs more than a creation), or a guess.
func (b *bench) serviceRateEstimate() float64 {
	if r := b.maxRate["svc-complete"]; r > 0 {
		return 1.3 * r
	}
	if r := b.maxRate["svc-create"]; r > 0 {
		return r
	}
	return 2000
}

// pgbenchRateEstimate is the highest transaction rate pgbench reached so far over a whole
// run, or a guess before any.
func (b *bench) pgbenchRateEstimate() float64 {
	if r := b.maxRate["pgb-total"]; r > 0 {
		return r
	}
	return 4000
}

// ensureServicePool makes sure need work items wait to be completed, creating the missing
// ones through POST /work (unmeasured).
func (b *bench) ensureServicePool(need int) error {
	missing := need - (len(b.pool) - b.poolNext)
	if missing <= 0 {
		return nil
	}
	logf("  seeding %d work items through POST /work at %d clients", missing, seedClients)
	start := time.Now()
	s := runLoad(b.ctx, b.svcAddr, seedClients, 0, 30*time.Minute, b.createWork(b.main.Key, b.nextTag("seed"), missing, b.addToPool))
	if err := b.ctx.Err(); err != nil {
		return err
	}
	if s.Errors > 0 || s.Count < missing {
		return fmt.Errorf("seeding work items: %d of %d created, %d errors (first: %s)", s.Count, missing, s.Errors, s.FirstErr)
	}
	logf("  seeded in %s", time.Since(start).Round(time.Millisecond))
	if !b.haveTmpl.created {
		if err := b.captureCreated(); err != nil {
			return err
		}
	}
	return b.analyze()
}

// ensurePgbenchPool makes sure need tasks wait for pgbench's complete script: rows as
// POST /work makes them (the task, its work.created event, its ledger head and its
// idempotency record, with the values of a task the service created), written in bulk.
func (b *bench) ensurePgbenchPool(need int) error {
	missing := int64(need) - (b.pgbPoolEnd - b.pgbPoolNext)
	if missing <= 0 {
		return nil
	}
	if !b.haveTmpl.created {
		if err := b.ensureServicePool(1); err != nil {
			return err
		}
	}
	logf("  seeding %d tasks for pgbench (bulk SQL)", missing)
	start := time.Now()
	t := b.tmpl
	ws := b.main.WorkspaceID
	const chunk = 50000
	for from := b.pgbPoolEnd; from < b.pgbPoolEnd+missing; from += chunk {
		to := min(from+chunk, b.pgbPoolEnd+missing)
		batch := &pgx.Batch{}
		batch.Queue(`INSERT INTO tasks (workspace_id, id, title, description, status, priority, due_date,
				initiative_id, workstream_id, milestone_id, metadata, estimated_cost_cents, created_at, updated_at, aggregate_version)
			SELECT $1::uuid, ($2 || lpad(to_hex(k), 12, '0'))::uuid, $3, $4, 'todo', $5, NULL, NULL, NULL, NULL, $6::jsonb, NULL,
				$7::timestamptz, $7::timestamptz, 1
			FROM generate_series($8::bigint, $9::bigint - 1) AS k`,
			ws, pgbPoolTask, t.Title, t.Description, t.Priority, t.Metadata, b.seededAt, from, to)
		batch.Queue(`INSERT INTO ledger_events (workspace_id, id, aggregate_type, aggregate_id,
				aggregate_version, event_type, schema_version, actor_type, actor_id, payload, payload_digest,
				occurred_at, recorded_at, idempotency_key, causation_id, correlation_id, previous_hash, event_hash)
			SELECT $1::uuid, ($2 || lpad(to_hex(k), 12, '0'))::uuid, 'task', $3 || lpad(to_hex(k), 12, '0'), 1, 'work.created',
				'1.0.0', 'human', $4, $5::jsonb, $6, $7::timestamptz, $7::timestamptz, 'pgbench-seed-' || k, NULL, NULL, NULL, $8
			FROM generate_series($9::bigint, $10::bigint - 1) AS k`,
			ws, pgbPoolEvent, pgbPoolTask, b.main.UserID, t.CreatedPayload, t.CreatedDigest, b.seededAt, t.CreatedHash, from, to)
		batch.Queue(`INSERT INTO ledger_heads (workspace_id, aggregate_type, aggregate_id, version, event_id, event_hash, updated_at)
			SELECT $1::uuid, 'task', $2 || lpad(to_hex(k), 12, '0'), 1, ($3 || lpad(to_hex(k), 12, '0'))::uuid, $4, $5::timestamptz
			FROM generate_series($6::bigint, $7::bigint - 1) AS k`,
			ws, pgbPoolTask, pgbPoolEvent, t.CreatedHash, b.seededAt, from, to)
		batch.Queue(`INSERT INTO idempotency_records (workspace_id, key, operation, request_digest, response, status, created_at, expires_at)
			SELECT $1::uuid, 'pgbench-seed-' || k, 'createWork', $2, $3::json, 'completed', $4::timestamptz,
				$4::timestamptz + interval '24 hours'
			FROM generate_series($5::bigint, $6::bigint - 1) AS k`,
			ws, t.CreateDigest, t.CreateResponse, b.seededAt, from, to)
		tx, err := b.db.Begin(b.ctx)
		if err != nil {
			return err
		}
		if err := tx.SendBatch(b.ctx, batch).Close(); err != nil {
			tx.Rollback(b.ctx) //nolint:errcheck // reporting err
			return fmt.Errorf("seeding pgbench's tasks: %w", err)
		}
		if err := tx.Commit(b.ctx); err != nil {
			return err
		}
	}
	b.pgbPoolEnd += missing
	logf("  seeded in %s", time.Since(start).Round(time.Millisecond))
	return b.analyze()
}

// countTasks counts pgbench's tasks (those whose id starts with prefix), in status when
// it is not empty.
func (b *bench) countTasks(prefix, status string) (int, error) {
	var n int
	err := b.db.QueryRow(b.ctx, `SELECT count(*) FROM tasks WHERE workspace_id = $1 AND id BETWEEN $2::uuid AND $3::uuid
		AND ($4 = '' OR status = $4)`, b.main.WorkspaceID, prefix+"000000000000", prefix+"ffffffffffff", status).Scan(&n)
	return n, err
}

// rememberCommand keeps the first command line of each pgbench script for the report.
func (b *bench) rememberCommand(script string, r pgbResult) {
	if b.pgbCommands == nil {
		b.pgbCommands = map[string]string{}
	}
	if _, ok := b.pgbCommands[script]; !ok && r.Command != "" {
		b.pgbCommands[script] = r.Command
	}
}

// seedPosts makes n resources in k's workspace through POST path (each answered 201),
// request i sending body(i): the unmeasured seeding of the lines that read a large ledger.
// keyed sends each request with an Idempotency-Key of its own (for an operation that
// requires one).
func (b *bench) seedPosts(what string, k keyInfo, path string, n int, keyed bool, body func(i int) []byte) error {
	logf("seeding %d %s through POST %s", n, what, path)
	uri, auth := "http://"+b.svcAddr+"/api/v1"+path, "Bearer "+k.Key
	tag := b.nextTag("seed")
	s := runLoad(b.ctx, b.svcAddr, seedClients, 0, 30*time.Minute, workload{
		prepare: func(i int, req *fasthttp.Request) bool {
			if i >= n {
				return false
			}
			req.Header.SetMethod(fasthttp.MethodPost)
			req.SetRequestURI(uri)
			req.Header.Set(fasthttp.HeaderAuthorization, auth)
			if keyed {
				req.Header.Set("Idempotency-Key", fmt.Sprintf("%s-%d", tag, i))
			}
			req.Header.SetContentType("application/json")
			req.SetBodyRaw(body(i))
			return true
		},
		ok: func(status int) bool { return status == fasthttp.StatusCreated },
	})
	if s.Errors > 0 || s.Count < n {
		return fmt.Errorf("seeding %s: %d of %d created, %d errors (first: %s)", what, s.Count, n, s.Errors, s.FirstErr)
	}
	return nil
}
