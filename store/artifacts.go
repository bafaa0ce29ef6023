package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
)

// entityTables are the tables of the entities an artifact may name, each keyed by
// (workspace_id, id).
var entityTables = map[accountable.EntityType]string{
	accountable.EntityTask:       "tasks",
	accountable.EntityInitiative: "initiatives",
	accountable.EntityRun:        "runs",
	accountable.EntityLaunch:     "launches",
	accountable.EntityHandoff:    "handoffs",
	accountable.EntityDecision:   "decisions",
}

// CreateArtifact records an artifact with its artifact.created event. An artifact that
// names an entity needs that entity in the workspace (404 otherwise, as for an id never
// issued); one that names none reads nothing, so it goes in one round trip.
func (db *DB) CreateArtifact(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.CreateArtifact) (accountable.ArtifactCreated, bool, error) {
	cmd := commandOf[accountable.ArtifactCreated](p, idem, in.Causation)
	cmd.blind = in.EntityType == nil
	cmd.run = func(ctx context.Context, tx *tx) (accountable.ArtifactCreated, error) {
		a, err := in.NewArtifact(uuid.Must(uuid.NewV7()).String(), p.WorkspaceID, p.Actor(), tx.Now())
		if err != nil {
			return accountable.ArtifactCreated{}, err
		}
		if a.EntityType != nil {
			table, ok := entityTables[*a.EntityType]
			if !ok {
				return accountable.ArtifactCreated{}, fmt.Errorf("store: no table of entity type %q", *a.EntityType)
			}
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+table+` WHERE workspace_id = $1 AND id = $2)`,
				p.WorkspaceID, *a.EntityID).Scan(&exists); err != nil {
				return accountable.ArtifactCreated{}, err
			}
			if !exists {
				return accountable.ArtifactCreated{}, accountable.NotFound(string(*a.EntityType))
			}
		}
		ev, err := tx.Append(aggregate(accountable.AggregateArtifact, a.ID), accountable.EventArtifactCreated, a.CreatedPayload(in.Causation.CommandID))
		if err != nil {
			return accountable.ArtifactCreated{}, err
		}
		doc, err := json.Marshal(a.ArtifactSummary)
		if err != nil {
			return accountable.ArtifactCreated{}, err
		}
		tx.Queue(`INSERT INTO artifacts (workspace_id, id, type, entity_type, entity_id, created_at, version, doc, content)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			p.WorkspaceID, a.ID, string(a.Type), optionalString(a.EntityType), a.EntityID, a.CreatedAt.Time, a.Version, string(doc), a.Content)
		return accountable.ArtifactCreated{Artifact: a, Event: ev.Ref()}, nil
	}
	return runCommand(ctx, db, cmd)
}

// GetArtifact reads an artifact of the workspace, with its content.
func (db *DB) GetArtifact(ctx context.Context, workspaceID, id string) (accountable.Artifact, error) {
	var doc string
	var a accountable.Artifact
	err := db.pool.QueryRow(ctx, `SELECT doc::text, content FROM artifacts WHERE workspace_id = $1 AND id = $2`, workspaceID, id).
		Scan(&doc, &a.Content)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return a, accountable.NotFound("artifact")
	case err != nil:
		return a, mapError(err)
	}
	if err := json.Unmarshal([]byte(doc), &a.ArtifactSummary); err != nil {
		return a, fmt.Errorf("store: decode artifact: %w", err)
	}
	return a, nil
}

func scanArtifactSummary(row pgx.Row) (accountable.ArtifactSummary, error) {
	return scanDoc[accountable.ArtifactSummary](row, "artifact")
}

// ListArtifacts reads a page of the workspace's artifacts (of one type, of one entity, when
// asked), newest first, without their content.
func (db *DB) ListArtifacts(ctx context.Context, workspaceID string, f accountable.ArtifactFilter) ([]accountable.ArtifactSummary, *accountable.WorkCursor, error) {
	limit := pageLimit(f.Limit)
	afterAt, afterID := keysetAfter(f.After)
	rows, err := db.pool.Query(ctx, `SELECT doc::text FROM artifacts
		WHERE workspace_id = $1 AND ($2::text IS NULL OR type = $2)
		  AND ($3::text IS NULL OR (entity_type = $3 AND entity_id = $4::uuid))
		  AND ($5::timestamptz IS NULL OR (created_at, id) < ($5, $6::uuid))
		ORDER BY created_at DESC, id DESC LIMIT $7`,
		workspaceID, optionalString(f.Type), optionalString(f.EntityType), f.EntityID, afterAt, afterID, limit+1)
	if err != nil {
		return nil, nil, mapError(err)
	}
	return keysetPage(rows, limit, scanArtifactSummary, func(a accountable.ArtifactSummary) (time.Time, string) { return a.CreatedAt.Time, a.ID })
}
