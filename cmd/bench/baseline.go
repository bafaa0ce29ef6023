package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/cursors"
	"github.com/accountablework/accountable/store"
)

// The baselines of the read lines: the least an HTTP server on this stack can do for the
// same read. A bare Fiber app with a pgx pool and no middleware: no authentication, no
// envelope checks, no logging, no metrics. The workspace comes from a header instead of
// an API key. Each handler sends the same SQL as the service (the same columns, the same
// WHERE clause, the same index) and answers similar JSON (the same members, encoding/json).

const baselineTaskSQL = `SELECT id, workspace_id, title, description, status, priority, due_date, initiative_id,
	workstream_id, milestone_id, metadata::text, estimated_cost_cents, created_at, updated_at, aggregate_version
	FROM tasks WHERE workspace_id = $1 AND id = $2`

// baselineStreamSQL is store.StreamEvents' query with no type filters.
const baselineStreamSQL = `SELECT id, workspace_id, aggregate_type, aggregate_id, aggregate_version, event_type,
	schema_version, actor_type, actor_id, payload::text, payload_digest, occurred_at, recorded_at,
	idempotency_key, causation_id, correlation_id, previous_hash, event_hash, stream_position, seq
	FROM ledger_events
	WHERE workspace_id = $1
	  AND (stream_position, seq) > ($2::bigint, $3::bigint)
	  AND stream_position < (SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint + ledger_stream_offset())
	ORDER BY stream_position, seq
	LIMIT $4`

type baseTask struct {
	ID                 string          `json:"id"`
	WorkspaceID        string          `json:"-"`
	Title              string          `json:"title"`
	Description        *string         `json:"description"`
	Status             string          `json:"status"`
	Priority           string          `json:"priority"`
	DueDate            *time.Time      `json:"due_date"`
	InitiativeID       *string         `json:"initiative_id"`
	WorkstreamID       *string         `json:"workstream_id"`
	MilestoneID        *string         `json:"milestone_id"`
	Metadata           json.RawMessage `json:"metadata"`
	EstimatedCostCents *int64          `json:"estimated_cost_cents"`
	CreatedAt          time.Time       `json:"created_at"`
	UpdatedAt          time.Time       `json:"updated_at"`
	AggregateVersion   int64           `json:"aggregate_version"`
	Concurrency        struct {
		VersionToken             string    `json:"version_token"`
		ExpectedUpdatedAt        time.Time `json:"expected_updated_at"`
		ExpectedAggregateVersion int64     `json:"expected_aggregate_version"`
	} `json:"concurrency"`
}

type baseEvent struct {
	ID               string          `json:"id"`
	WorkspaceID      string          `json:"workspaceId"`
	AggregateType    string          `json:"aggregateType"`
	AggregateID      string          `json:"aggregateId"`
	AggregateVersion int64           `json:"aggregateVersion"`
	EventType        string          `json:"eventType"`
	SchemaVersion    string          `json:"schemaVersion"`
	ActorType        string          `json:"actorType"`
	ActorID          string          `json:"actorId"`
	PayloadDigest    string          `json:"payloadDigest"`
	OccurredAt       time.Time       `json:"occurredAt"`
	RecordedAt       time.Time       `json:"recordedAt"`
	IdempotencyKey   *string         `json:"idempotencyKey"`
	CausationID      *string         `json:"causationId"`
	CorrelationID    *string         `json:"correlationId"`
	PreviousHash     *string         `json:"previousHash"`
	Payload          json.RawMessage `json:"payload"`
	EventHash        string          `json:"eventHash"`
}

type baseMeta struct {
	APIVersion  string  `json:"apiVersion"`
	WorkspaceID string  `json:"workspaceId"`
	Count       *int    `json:"count,omitempty"`
	NextCursor  *string `json:"nextCursor,omitempty"`
	HasMore     *bool   `json:"hasMore,omitempty"`
	Limit       *int    `json:"limit,omitempty"`
}

type baseEnvelope struct {
	Data any      `json:"data"`
	Meta baseMeta `json:"meta"`
}

// readBaseTask is GET /work/{id}'s row, as the service answers it.
func readBaseTask(ctx context.Context, pool *pgxpool.Pool, ws, id string) (baseTask, error) {
	var t baseTask
	var metadata string
	err := pool.QueryRow(ctx, baselineTaskSQL, ws, id).Scan(&t.ID, &t.WorkspaceID, &t.Title,
		&t.Description, &t.Status, &t.Priority, &t.DueDate, &t.InitiativeID, &t.WorkstreamID, &t.MilestoneID, &metadata,
		&t.EstimatedCostCents, &t.CreatedAt, &t.UpdatedAt, &t.AggregateVersion)
	if err != nil {
		return t, err
	}
	t.Metadata = json.RawMessage(metadata)
	t.Concurrency.VersionToken = accountable.TaskVersion{AggregateVersion: t.AggregateVersion, UpdatedAt: t.UpdatedAt}.Token()
	t.Concurrency.ExpectedUpdatedAt, t.Concurrency.ExpectedAggregateVersion = t.UpdatedAt, t.AggregateVersion
	return t, nil
}

// baselineMCP is the MCP line's limit: the least an MCP server on this stack does for a
// tools/call of get_work. The MCP Go SDK's server with the one tool, served as the service
// serves /mcp (Streamable HTTP, stateless, JSON answers, behind Fiber's net/http adaptor),
// without authentication, scoping, rate limits or dispatch: the tool reads the row with the
// same SELECT and answers its GET /work/{id} JSON as text and as structured content, as the
// service's tools do. The workspace comes from the X-Workspace-Id header.
func baselineMCP(pool *pgxpool.Pool) fiber.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "bench-baseline", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "get_work", Description: "Read a work item.",
		InputSchema: map[string]any{"type": "object", "required": []any{"taskId"},
			"properties": map[string]any{"taskId": map[string]any{"type": "string"}}},
		OutputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct {
				TaskID string `json:"taskId"`
			}
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			ws := req.Extra.Header.Get("X-Workspace-Id")
			t, err := readBaseTask(ctx, pool, ws, args.TaskID)
			if errors.Is(err, pgx.ErrNoRows) {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: `{"error":"not found"}`}}}, nil
			}
			if err != nil {
				return nil, err
			}
			body, err := json.Marshal(baseEnvelope{Data: t, Meta: baseMeta{APIVersion: "1", WorkspaceID: ws}})
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(body)}},
				StructuredContent: json.RawMessage(body)}, nil
		})
	return adaptor.HTTPHandler(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true, DisableLocalhostProtection: true}))
}

// serveBaseline serves the baseline handlers on BENCH_BASELINE_ADDR until SIGINT/SIGTERM.
func serveBaseline() error {
	addr := env("BENCH_BASELINE_ADDR", "127.0.0.1:18081")
	pc, err := pgxpool.ParseConfig(os.Getenv("DATABASE_URL"))
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	var errs []string
	if n := envInt("BENCH_BASELINE_CONNS", 0, &errs); n > 0 {
		pc.MaxConns = int32(n)
	}
	if len(errs) > 0 {
		return errors.New(errs[0])
	}
	ctx := context.Background()
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return err
	}
	defer pool.Close()

	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/healthz", func(c *fiber.Ctx) error { return c.SendString("ok") })
	app.Get("/work/:id", func(c *fiber.Ctx) error {
		ws := c.Get("X-Workspace-Id")
		t, err := readBaseTask(c.UserContext(), pool, ws, c.Params("id"))
		if errors.Is(err, pgx.ErrNoRows) {
			return c.Status(fiber.StatusNotFound).JSON(fiber.Map{"error": "not found"})
		}
		if err != nil {
			return err
		}
		return c.JSON(baseEnvelope{Data: t, Meta: baseMeta{APIVersion: "1", WorkspaceID: ws}})
	})
	app.Post("/mcp", baselineMCP(pool))
	app.Get("/events/stream", func(c *fiber.Ctx) error {
		ws := c.Get("X-Workspace-Id")
		limit := c.QueryInt("limit", 100)
		var after accountable.StreamPosition
		if cur := c.Query("cursor"); cur != "" {
			var ok bool
			if after, ok = cursors.ParseStream(cur); !ok {
				return c.Status(fiber.StatusBadRequest).JSON(fiber.Map{"error": "bad cursor"})
			}
		}
		rows, err := pool.Query(c.UserContext(), baselineStreamSQL, ws, after.Position, after.Seq, limit+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		events := make([]baseEvent, 0, min(limit, 64))
		next, hasMore := after, false
		for rows.Next() {
			var e baseEvent
			var payload string
			var pos, seq int64
			if err := rows.Scan(&e.ID, &e.WorkspaceID, &e.AggregateType, &e.AggregateID, &e.AggregateVersion, &e.EventType,
				&e.SchemaVersion, &e.ActorType, &e.ActorID, &payload, &e.PayloadDigest, &e.OccurredAt, &e.RecordedAt,
				&e.IdempotencyKey, &e.CausationID, &e.CorrelationID, &e.PreviousHash, &e.EventHash, &pos, &seq); err != nil {
				return err
			}
			if len(events) == limit {
				hasMore = true
				break
			}
			e.Payload = json.RawMessage(payload)
			events = append(events, e)
			next = accountable.StreamPosition{Position: pos, Seq: seq}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		cursor, count := cursors.EncodeStream(next), len(events)
		return c.JSON(baseEnvelope{Data: events, Meta: baseMeta{APIVersion: "1", WorkspaceID: ws,
			Count: &count, NextCursor: &cursor, HasMore: &hasMore, Limit: &limit}})
	})

	// The context line's limit reads with the store's own code, from a store over the same
	// database (its pool connects lazily, as many connections at most).
	sdb, err := store.Open(ctx, store.Config{URL: os.Getenv("DATABASE_URL"), MaxConns: pc.MaxConns})
	if err != nil {
		return err
	}
	defer sdb.Close()

	baselineRoutes(app, pool)
	baselineLogRoutes(app, pool)
	baselineContextRoutes(app, sdb)
	baselineFloorRoutes(app, os.Getenv("DATABASE_URL"))

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sig
		app.ShutdownWithTimeout(5 * time.Second) //nolint:errcheck // exiting
	}()
	return app.Listener(ln)
}
