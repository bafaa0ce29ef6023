package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
)

// Ledger vocabulary of workspaces and keys.
const (
	aggregateWorkspace = "workspace"
	aggregateAPIKey    = "api_key"
)

// CreateKeyRequest asks for a new API key. Exactly one of WorkspaceID and NewWorkspace is
// set; the user is found or created by email and becomes a member of the workspace.
type CreateKeyRequest struct {
	Name         string
	UserEmail    string
	WorkspaceID  string
	NewWorkspace string
}

// CreatedKey is a new key: the secret is returned once and never stored.
type CreatedKey struct {
	Key         string `json:"key"`
	KeyPrefix   string `json:"key_prefix"`
	WorkspaceID string `json:"workspace_id"`
	UserID      string `json:"user_id"`
}

// operator is the actor of changes made from the command line.
var operator = accountable.Actor{Type: accountable.ActorSystem, ID: "accountable-cli"}

// CreateKey creates (when asked) the workspace and the user, makes the user a member and
// issues a key, with their ledger events, in one transaction.
func (db *DB) CreateKey(ctx context.Context, req CreateKeyRequest) (CreatedKey, error) {
	if req.Name == "" || req.UserEmail == "" || (req.WorkspaceID == "") == (req.NewWorkspace == "") {
		return CreatedKey{}, accountable.Errorf(accountable.ECodeValidationFailed, "a key needs a name, a user email and exactly one of a workspace id or a new workspace name")
	}
	if req.WorkspaceID != "" && !accountable.ValidUUID(req.WorkspaceID) {
		return CreatedKey{}, accountable.Errorf(accountable.ECodeValidationFailed, "the workspace id must be a UUID")
	}
	wsID := req.WorkspaceID
	if req.NewWorkspace != "" {
		wsID = uuid.Must(uuid.NewV7()).String()
	}
	cc := commandContext{WorkspaceID: wsID, Actor: operator, Now: accountable.Now()}
	out, _, err := runCommand(ctx, db, cc, func(ctx context.Context, q querier, b *pgx.Batch) (CreatedKey, error) {
		if req.NewWorkspace != "" {
			b.Queue(`INSERT INTO workspaces (id, name, created_at) VALUES ($1, $2, $3)`, wsID, req.NewWorkspace, cc.Now)
			ev, err := newEvent(cc, change{
				AggregateType: aggregateWorkspace, AggregateID: wsID, AggregateVersion: 1,
				EventType: "workspace.created", Payload: map[string]any{"workspace_id": wsID, "name": req.NewWorkspace},
			})
			if err != nil {
				return CreatedKey{}, err
			}
			queueEvent(b, ev)
		} else {
			var exists bool
			if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM workspaces WHERE id = $1)`, wsID).Scan(&exists); err != nil {
				return CreatedKey{}, err
			}
			if !exists {
				return CreatedKey{}, accountable.NotFound("workspace")
			}
		}
		var userID string
		err := q.QueryRow(ctx, `INSERT INTO users (id, email, created_at) VALUES ($1, $2, $3)
			ON CONFLICT (email) DO UPDATE SET email = excluded.email RETURNING id`,
			uuid.Must(uuid.NewV7()).String(), req.UserEmail, cc.Now).Scan(&userID)
		if err != nil {
			return CreatedKey{}, err
		}
		b.Queue(`INSERT INTO workspace_members (workspace_id, user_id, role, created_at) VALUES ($1, $2, 'owner', $3)
			ON CONFLICT DO NOTHING`, wsID, userID, cc.Now)
		key, prefix := accountable.NewAPIKey()
		keyID := uuid.Must(uuid.NewV7()).String()
		b.Queue(`INSERT INTO api_keys (id, prefix, key_hash, name, user_id, workspace_id, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, keyID, prefix, accountable.HashAPIKey(key), req.Name, userID, wsID, cc.Now)
		ev, err := newEvent(cc, change{
			AggregateType: aggregateAPIKey, AggregateID: keyID, AggregateVersion: 1, EventType: "api_key.created",
			Payload: map[string]any{"key_id": keyID, "key_prefix": prefix, "name": req.Name, "user_id": userID},
		})
		if err != nil {
			return CreatedKey{}, err
		}
		queueEvent(b, ev)
		return CreatedKey{Key: key, KeyPrefix: prefix, WorkspaceID: wsID, UserID: userID}, nil
	})
	return out, err
}

const keyColumns = `k.id, k.prefix, k.name, k.user_id, u.email, k.workspace_id, k.created_at, k.last_used_at, k.revoked_at`

func scanKey(row pgx.Row, extra ...any) (accountable.APIKey, error) {
	var k accountable.APIKey
	err := row.Scan(append([]any{&k.ID, &k.Prefix, &k.Name, &k.UserID, &k.UserEmail, &k.WorkspaceID, &k.CreatedAt,
		&k.LastUsedAt, &k.RevokedAt}, extra...)...)
	return k, err
}

// ListKeys lists every key (workspaceID "" ) or the keys of one workspace, oldest first.
func (db *DB) ListKeys(ctx context.Context, workspaceID string) ([]accountable.APIKey, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+keyColumns+` FROM api_keys k JOIN users u ON u.id = k.user_id
		WHERE ($1 = '' OR k.workspace_id::text = $1) ORDER BY k.created_at, k.id`, workspaceID)
	if err != nil {
		return nil, mapError(err)
	}
	defer rows.Close()
	var keys []accountable.APIKey
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, mapError(err)
		}
		keys = append(keys, k)
	}
	return keys, mapError(rows.Err())
}

// RevokeKey revokes the key with prefix; revoking a revoked key is a no-op. Every process
// serving the API hears of it at once (notifyKeyChanged).
func (db *DB) RevokeKey(ctx context.Context, prefix string) (accountable.APIKey, error) {
	now := accountable.Now()
	k, _, err := runCommand(ctx, db, commandContext{Actor: operator, Now: now},
		func(ctx context.Context, q querier, b *pgx.Batch) (accountable.APIKey, error) {
			var prevHash *string
			var version int64
			k, err := scanKey(q.QueryRow(ctx, `WITH r AS (
					UPDATE api_keys SET revoked_at = $2 WHERE prefix = $1 AND revoked_at IS NULL RETURNING *)
				SELECT `+keyColumns+`, COALESCE(e.aggregate_version, 0), e.event_hash
				FROM r k JOIN users u ON u.id = k.user_id
				LEFT JOIN LATERAL (SELECT aggregate_version, event_hash FROM ledger_events e
					WHERE e.workspace_id = k.workspace_id AND e.aggregate_type = 'api_key' AND e.aggregate_id = k.id::text
					ORDER BY aggregate_version DESC LIMIT 1) e ON true`, prefix, now), &version, &prevHash)
			if errors.Is(err, pgx.ErrNoRows) {
				k, err = scanKey(q.QueryRow(ctx, `SELECT `+keyColumns+` FROM api_keys k JOIN users u ON u.id = k.user_id
					WHERE k.prefix = $1`, prefix))
				if errors.Is(err, pgx.ErrNoRows) {
					return k, accountable.NotFound("API key")
				}
				return k, err // already revoked: nothing to record
			}
			if err != nil {
				return k, err
			}
			ev, err := newEvent(commandContext{WorkspaceID: k.WorkspaceID, Actor: operator, Now: now}, change{
				AggregateType: aggregateAPIKey, AggregateID: k.ID, AggregateVersion: version + 1, PreviousHash: prevHash,
				EventType: "api_key.revoked", Payload: map[string]any{"key_id": k.ID, "key_prefix": k.Prefix},
			})
			if err != nil {
				return k, err
			}
			queueEvent(b, ev)
			notifyKeyChanged(b, k.Prefix)
			return k, nil
		})
	return k, err
}

// KeyByPrefix returns the key with prefix and its stored hash, for authentication.
func (db *DB) KeyByPrefix(ctx context.Context, prefix string) (accountable.APIKey, []byte, error) {
	var hash []byte
	k, err := scanKey(db.pool.QueryRow(ctx, `SELECT `+keyColumns+`, k.key_hash FROM api_keys k
		JOIN users u ON u.id = k.user_id WHERE k.prefix = $1`, prefix), &hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return k, nil, accountable.NotFound("API key")
	}
	return k, hash, mapError(err)
}

// IsMember reports whether the user may act in the workspace.
func (db *DB) IsMember(ctx context.Context, userID, workspaceID string) (bool, error) {
	var ok bool
	err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM workspace_members WHERE workspace_id = $1 AND user_id = $2)`,
		workspaceID, userID).Scan(&ok)
	return ok, mapError(err)
}

// GetWorkspace reads a workspace.
func (db *DB) GetWorkspace(ctx context.Context, id string) (accountable.Workspace, error) {
	var w accountable.Workspace
	err := db.pool.QueryRow(ctx, `SELECT id, name, created_at FROM workspaces WHERE id = $1`, id).Scan(&w.ID, &w.Name, &w.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return w, accountable.NotFound("workspace")
	}
	w.CreatedAt = w.CreatedAt.UTC()
	return w, mapError(err)
}

// ListWorkspaceIDs lists every workspace id (for offline verification).
func (db *DB) ListWorkspaceIDs(ctx context.Context) ([]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT id FROM workspaces ORDER BY created_at, id`)
	if err != nil {
		return nil, mapError(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, mapError(err)
}

// TouchKeys records when keys were last used. The API batches these in memory and calls
// this periodically, so authentication costs no write per request.
func (db *DB) TouchKeys(ctx context.Context, lastUsed map[string]time.Time) error {
	if len(lastUsed) == 0 {
		return nil
	}
	ids := make([]string, 0, len(lastUsed))
	times := make([]time.Time, 0, len(lastUsed))
	for id, t := range lastUsed {
		ids = append(ids, id)
		times = append(times, t)
	}
	_, err := db.pool.Exec(ctx, `UPDATE api_keys k SET last_used_at = v.t
		FROM unnest($1::uuid[], $2::timestamptz[]) AS v(id, t)
		WHERE k.id = v.id AND (k.last_used_at IS NULL OR k.last_used_at < v.t)`, ids, times)
	return mapError(err)
}
