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
	"github.com/accountablework/accountable/canonical"
	"github.com/accountablework/accountable/payload"
)

// Ledger verification compares these aggregates' rows with their chains (aggregateTables).
func init() {
	verifiesAggregateTable(accountable.AggregateArtifact, `SELECT id::text, version FROM artifacts WHERE workspace_id = $1`)
}

// entityTable is where the entities of a type an artifact may be attached to are, each
// keyed by (workspace_id, id), and the SQL expression of the initiative an entity belongs
// to (NULL when its kind belongs to none).
type entityTable struct{ table, initiative string }

// entityTables are the entity types the service holds (accountable.EntityType.Checked).
var entityTables = map[accountable.EntityType]entityTable{
	accountable.EntityInitiative: {"initiatives", "id"},
	accountable.EntityWorkstream: {"workstreams", "initiative_id"},
	accountable.EntityMilestone:  {"milestones", "initiative_id"},
	accountable.EntityTask:       {"tasks", "initiative_id"},
	accountable.EntityDecision:   {"decisions", "initiative_id"},
	accountable.EntityRun:        {"runs", "initiative_id"},
	accountable.EntityLaunch:     {"launches", "initiative_id"},
	accountable.EntityHandoff:    {"handoffs", "NULL::uuid"},
}

// CreateArtifact records an artifact with its artifact.created event. An artifact attached
// to an entity the service holds needs that entity in the workspace, and an initiative it
// names needs that initiative (404 otherwise, as for an id never issued); its initiative is
// otherwise the entity's. One attached to a project without an initiative reads nothing,
// so it goes in one round trip.
func (db *DB) CreateArtifact(ctx context.Context, p accountable.Principal, idem *accountable.Idempotency, in accountable.CreateArtifact) (accountable.ArtifactCreated, bool, error) {
	cmd := commandOf[accountable.ArtifactCreated](p, idem, in.Causation)
	entity, checked := entityTables[in.EntityType]
	if in.EntityType.Checked() && !checked {
		return accountable.ArtifactCreated{}, false, fmt.Errorf("store: no table of entity type %q", in.EntityType)
	}
	cmd.blind = !checked && in.InitiativeID == nil
	cmd.run = func(ctx context.Context, tx *tx) (accountable.ArtifactCreated, error) {
		var ofEntity *string
		if checked {
			err := tx.QueryRow(ctx, `SELECT `+entity.initiative+`::text FROM `+entity.table+` WHERE workspace_id = $1 AND id = $2`,
				p.WorkspaceID, accountable.NormalizeUUID(in.EntityID)).Scan(&ofEntity)
			if errors.Is(err, pgx.ErrNoRows) {
				return accountable.ArtifactCreated{}, accountable.NotFound(string(in.EntityType))
			}
			if err != nil {
				return accountable.ArtifactCreated{}, err
			}
		}
		initiative, needsCheck, err := in.ArtifactInitiative(ofEntity)
		if err != nil {
			return accountable.ArtifactCreated{}, err
		}
		if needsCheck {
			var exists bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM initiatives WHERE workspace_id = $1 AND id = $2)`,
				p.WorkspaceID, *initiative).Scan(&exists); err != nil {
				return accountable.ArtifactCreated{}, err
			}
			if !exists {
				return accountable.ArtifactCreated{}, accountable.NotFound("initiative")
			}
		}
		digest, err := canonical.DigestOf(in.Content())
		if err != nil {
			return accountable.ArtifactCreated{}, err
		}
		a := in.NewArtifact(uuid.Must(uuid.NewV7()).String(), p.WorkspaceID, initiative, p.Actor(), tx.Now(), digest)
		ev, err := tx.Append(aggregate(accountable.AggregateArtifact, a.ID), accountable.EventArtifactCreated, payload.ArtifactCreatedOf(a, in.Causation.CommandID))
		if err != nil {
			return accountable.ArtifactCreated{}, err
		}
		a.Verification.EventID, a.Verification.EventHash = ev.ID, ev.EventHash
		doc, err := json.Marshal(a.ArtifactSummary)
		if err != nil {
			return accountable.ArtifactCreated{}, err
		}
		tx.Queue(`INSERT INTO artifacts (workspace_id, id, artifact_type, requested_type, status, entity_type, entity_id, initiative_id,
				created_at, version, doc, preview_markdown)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			p.WorkspaceID, a.ID, a.ArtifactType, a.RequestedArtifactType, string(a.Status), optionalString(a.EntityType), a.EntityID,
			a.InitiativeID, a.CreatedAt.Time, a.Version, string(doc), a.PreviewMarkdown)
		return accountable.ArtifactCreated{OK: true, Artifact: a, ArtifactTypeFallback: a.ArtifactType != a.RequestedArtifactType,
			EffectiveArtifactType: a.ArtifactType}, nil
	}
	return runCommand(ctx, db, cmd)
}

// GetArtifact reads an artifact of the workspace, with its preview.
func (db *DB) GetArtifact(ctx context.Context, workspaceID, id string) (accountable.Artifact, error) {
	var doc string
	var a accountable.Artifact
	err := db.pool.QueryRow(ctx, `SELECT doc::text, preview_markdown FROM artifacts WHERE workspace_id = $1 AND id = $2`, workspaceID, id).
		Scan(&doc, &a.PreviewMarkdown)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return a, accountable.NotFound("artifact")
	case err != nil:
		return a, mapError(err)
	}
	if err := decodeStored([]byte(doc), &a.ArtifactSummary); err != nil {
		return a, fmt.Errorf("store: decode artifact: %w", err)
	}
	return a, nil
}

func scanArtifactSummary(row pgx.Row) (accountable.ArtifactSummary, error) {
	return scanDoc[accountable.ArtifactSummary](row, "artifact")
}

// ListArtifacts reads a page of the workspace's artifacts (those the filter selects),
// newest first, without their previews.
func (db *DB) ListArtifacts(ctx context.Context, workspaceID string, f accountable.ArtifactFilter) ([]accountable.ArtifactSummary, *accountable.WorkCursor, error) {
	limit := pageLimit(f.Limit)
	afterAt, afterID := keysetAfter(f.After)
	rows, err := db.pool.Query(ctx, `SELECT doc::text FROM artifacts
		WHERE workspace_id = $1 AND ($2::text IS NULL OR artifact_type = $2 OR requested_type = $2)
		  AND ($3::text IS NULL OR (entity_type = $3 AND entity_id = $4::text))
		  AND ($5::uuid IS NULL OR initiative_id = $5)
		  AND ($6::text IS NULL OR status = $6)
		  AND ($7::timestamptz IS NULL OR created_at >= $7)
		  AND ($8::timestamptz IS NULL OR (created_at, id) < ($8, $9::uuid))
		ORDER BY created_at DESC, id DESC LIMIT $10`,
		workspaceID, f.Type, optionalString(f.EntityType), f.EntityID, f.InitiativeID, optionalString(f.Status), f.Since,
		afterAt, afterID, limit+1)
	if err != nil {
		return nil, nil, mapError(err)
	}
	return keysetPage(rows, limit, scanArtifactSummary, func(a accountable.ArtifactSummary) (time.Time, string) { return a.CreatedAt.Time, a.ID })
}
