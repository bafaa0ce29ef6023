package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/payload"
	"github.com/accountablework/accountable/tokens"
)

// Ledger verification compares these aggregates' rows with their chains (aggregateTables).
func init() {
	verifiesAggregateTable(accountable.AggregateAPIKey, `SELECT id::text, CASE WHEN revoked_at IS NULL THEN 1 ELSE 2 END::bigint
		FROM api_keys WHERE workspace_id = $1`)
	verifiesAggregateTable(accountable.AggregateWorkspace, `SELECT id::text, NULL::bigint FROM workspaces WHERE id = $1`)
}

// CreateKeyRequest asks for a new API key. Exactly one of WorkspaceID and NewWorkspace is
// set; the user is found or created by email and becomes a member of the workspace. With
// AgentName the key is an agent's, acting for the user.
type CreateKeyRequest struct {
	Name         string
	UserEmail    string
	WorkspaceID  string
	NewWorkspace string
	AgentName    string
	// By is who grants the access, recorded on its events (nil: the command line's operator).
	By *accountable.Actor
}

// CreatedKey is a new key: the secret is returned once and never stored.
type CreatedKey struct {
	Key         string  `json:"key"`
	KeyPrefix   string  `json:"key_prefix"`
	Kind        string  `json:"kind"`
	AgentName   *string `json:"agent_name"`
	WorkspaceID string  `json:"workspace_id"`
	UserID      string  `json:"user_id"`
}

// operator is the actor of changes made from the command line.
var operator = accountable.Actor{Type: accountable.ActorSystem, ID: "accountable-cli"}

// CreateKey creates (when asked) the workspace and the user, makes the user a member and
// issues a key, each with its ledger event, in one transaction: access grants are
// accountable like any other change.
func (db *DB) CreateKey(ctx context.Context, req CreateKeyRequest) (CreatedKey, error) {
	if req.Name == "" {
		return CreatedKey{}, accountable.Errorf(accountable.ECodeValidationFailed, "a key needs a name")
	}
	return db.grantAccess(ctx, req, true)
}

// CreateUser creates (when asked) the workspace and the user, and makes the user a
// member, as CreateKey does, without issuing a key (a person who signs in to the settings
// page; `accountable users create`). Name and AgentName are not used.
func (db *DB) CreateUser(ctx context.Context, req CreateKeyRequest) (CreatedKey, error) {
	return db.grantAccess(ctx, req, false)
}

// grantAccess is CreateKey, and CreateUser when issueKey is false.
func (db *DB) grantAccess(ctx context.Context, req CreateKeyRequest, issueKey bool) (CreatedKey, error) {
	if req.UserEmail == "" || (req.WorkspaceID == "") == (req.NewWorkspace == "") {
		return CreatedKey{}, accountable.Errorf(accountable.ECodeValidationFailed, "a user email and exactly one of a workspace id or a new workspace name are needed")
	}
	if req.WorkspaceID != "" && !accountable.ValidUUID(req.WorkspaceID) {
		return CreatedKey{}, accountable.Errorf(accountable.ECodeValidationFailed, "the workspace id must be a UUID")
	}
	wsID := accountable.NormalizeUUID(req.WorkspaceID)
	if req.NewWorkspace != "" {
		wsID = uuid.Must(uuid.NewV7()).String()
	}
	var agent *string
	if req.AgentName != "" {
		agent = &req.AgentName
	}
	wsRef := aggregate(accountable.AggregateWorkspace, wsID)
	by := operator
	if req.By != nil {
		by = *req.By
	}
	cmd := command[CreatedKey]{workspaceID: wsID, actor: by}
	if req.NewWorkspace == "" {
		cmd.locks = []aggregateRef{wsRef} // a new member changes the workspace
	}
	cmd.run = func(ctx context.Context, tx *tx) (CreatedKey, error) {
		now := tx.Now()
		if req.NewWorkspace != "" {
			// Now, not with the COMMIT: the membership below refers to it.
			if err := tx.Exec(ctx, `INSERT INTO workspaces (id, name, created_at) VALUES ($1, $2, $3)`, wsID, req.NewWorkspace, now); err != nil {
				return CreatedKey{}, err
			}
			if _, err := tx.Append(wsRef, accountable.EventWorkspaceCreated, payload.WorkspaceCreated{WorkspaceID: wsID, Name: req.NewWorkspace}); err != nil {
				return CreatedKey{}, err
			}
		} else if _, ok := tx.Head(wsRef); !ok {
			return CreatedKey{}, accountable.NotFound("workspace")
		}
		var userID string
		var userCreated bool
		err := tx.QueryRow(ctx, `INSERT INTO users (id, email, created_at) VALUES ($1, $2, $3)
			ON CONFLICT (email) DO UPDATE SET email = excluded.email RETURNING id, xmax = 0`,
			uuid.Must(uuid.NewV7()).String(), req.UserEmail, now).Scan(&userID, &userCreated)
		if err != nil {
			return CreatedKey{}, err
		}
		if userCreated {
			if _, err := tx.Append(aggregate(accountable.AggregateUser, userID), accountable.EventUserCreated,
				payload.UserCreated{UserID: userID, Email: req.UserEmail}); err != nil {
				return CreatedKey{}, err
			}
		}
		var memberAdded bool
		err = tx.QueryRow(ctx, `WITH m AS (INSERT INTO workspace_members (workspace_id, user_id, role, created_at)
				VALUES ($1, $2, 'owner', $3) ON CONFLICT DO NOTHING RETURNING 1)
			SELECT EXISTS (SELECT 1 FROM m)`, wsID, userID, now).Scan(&memberAdded)
		if err != nil {
			return CreatedKey{}, err
		}
		if memberAdded {
			if _, err := tx.Append(wsRef, accountable.EventMemberAdded, payload.MemberAdded{UserID: userID, Role: "owner"}); err != nil {
				return CreatedKey{}, err
			}
			// Key caches hold the user's keys with the workspaces they may act in.
			notifyMembershipChanged(tx.batch, userID)
		}
		if !issueKey {
			return CreatedKey{WorkspaceID: wsID, UserID: userID}, nil
		}
		key, prefix := tokens.NewAPIKey()
		keyID := uuid.Must(uuid.NewV7()).String()
		tx.Queue(`INSERT INTO api_keys (id, prefix, key_hash, name, user_id, workspace_id, agent_name, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, keyID, prefix, tokens.HashAPIKey(key), req.Name, userID, wsID, agent, now)
		out := CreatedKey{Key: key, KeyPrefix: prefix, Kind: accountable.KeyKindHuman, AgentName: agent, WorkspaceID: wsID, UserID: userID}
		if agent != nil {
			out.Kind = accountable.KeyKindAgent
		}
		_, err = tx.Append(aggregate(accountable.AggregateAPIKey, keyID), accountable.EventAPIKeyCreated, payload.APIKeyCreated{
			KeyID: keyID, KeyPrefix: prefix, Name: req.Name, UserID: userID, Kind: out.Kind, AgentName: agent})
		// Key caches may remember the prefix as unknown: the key works at once everywhere.
		notifyKeyChanged(tx.batch, prefix)
		return out, err
	}
	out, _, err := runCommand(ctx, db, cmd)
	return out, err
}

const keyColumns = `k.id, k.prefix, k.name, k.user_id, u.email, k.workspace_id, k.agent_name, k.created_at, k.last_used_at, k.revoked_at`

func scanKey(row pgx.Row, extra ...any) (accountable.APIKey, error) {
	var k accountable.APIKey
	err := row.Scan(append([]any{&k.ID, &k.Prefix, &k.Name, &k.UserID, &k.UserEmail, &k.WorkspaceID, &k.AgentName, &k.CreatedAt,
		&k.LastUsedAt, &k.RevokedAt}, extra...)...)
	return k, err
}

// ListKeys lists every key (workspaceID "" ) or the keys made in one workspace, oldest
// first (the command line's `keys list`).
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

// actsIn is the condition under which the settings page of workspace $1 shows the key k:
// it can act there (its user is a member of $1 and of the key's own workspace: a key whose
// user left its workspace acts nowhere, see KeyByPrefix), or could until it was revoked,
// for a key made in $1 (the page keeps its own keys' history).
const actsIn = `EXISTS (SELECT 1 FROM workspace_members m WHERE m.workspace_id = $1 AND m.user_id = k.user_id)
	AND EXISTS (SELECT 1 FROM workspace_members h WHERE h.workspace_id = k.workspace_id AND h.user_id = k.user_id)
	AND (k.workspace_id = $1 OR k.revoked_at IS NULL)`

// WorkspaceKeys lists the keys that can act in the workspace (its settings page): those
// its current members made in it, revoked ones too, then the live keys they made in their
// other workspaces (which act here through workspace_id), each with its own workspace's
// name; oldest first. A key of a user who is not a member is not among them.
func (db *DB) WorkspaceKeys(ctx context.Context, workspaceID string) ([]accountable.APIKey, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+keyColumns+`, w.name FROM api_keys k JOIN users u ON u.id = k.user_id
		JOIN workspaces w ON w.id = k.workspace_id
		WHERE `+actsIn+`
		ORDER BY k.workspace_id <> $1, k.created_at, k.id`, workspaceID)
	if err != nil {
		return nil, mapError(err)
	}
	defer rows.Close()
	var keys []accountable.APIKey
	for rows.Next() {
		var home string
		k, err := scanKey(rows, &home)
		if err != nil {
			return nil, mapError(err)
		}
		k.WorkspaceName = home
		keys = append(keys, k)
	}
	return keys, mapError(rows.Err())
}

// RevokeKey revokes the key with prefix, with its ledger event; revoking a revoked key is a
// no-op. Every process serving the API hears of it at once (notifyKeyChanged).
func (db *DB) RevokeKey(ctx context.Context, prefix string) (accountable.APIKey, error) {
	return db.RevokeKeyAs(ctx, prefix, operator)
}

// RevokeKeyAs is RevokeKey with the actor its event records.
func (db *DB) RevokeKeyAs(ctx context.Context, prefix string, by accountable.Actor) (accountable.APIKey, error) {
	k, err := db.keyRecord(ctx, prefix, "")
	if err != nil {
		return k, err
	}
	return db.revokeKey(ctx, k, by, "")
}

// RevokeWorkspaceKey revokes, for a person signed in to the workspace's settings page, a
// key that can act in that workspace (one WorkspaceKeys lists): the key
// is revoked everywhere, with its event in the key's own workspace, recording who revoked
// it and from which workspace. Another key is not_found, as a key never issued.
func (db *DB) RevokeWorkspaceKey(ctx context.Context, workspaceID, prefix string, by accountable.Actor) (accountable.APIKey, error) {
	k, err := db.keyRecord(ctx, prefix, workspaceID)
	if err != nil {
		return k, err
	}
	from := ""
	if k.WorkspaceID != accountable.NormalizeUUID(workspaceID) {
		from = accountable.NormalizeUUID(workspaceID)
	}
	return db.revokeKey(ctx, k, by, from)
}

// keyRecord returns the key with prefix, whatever its user's memberships; or, with
// actingIn, only when it can act in that workspace (actsIn).
func (db *DB) keyRecord(ctx context.Context, prefix, actingIn string) (accountable.APIKey, error) {
	query, args := `SELECT `+keyColumns+` FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.prefix = $1`, []any{prefix}
	if actingIn != "" {
		if !accountable.ValidUUID(actingIn) {
			return accountable.APIKey{}, accountable.NotFound("API key")
		}
		query = `SELECT ` + keyColumns + ` FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.prefix = $2 AND ` + actsIn
		args = []any{actingIn, prefix}
	}
	k, err := scanKey(db.pool.QueryRow(ctx, query, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return k, accountable.NotFound("API key")
	}
	return k, mapError(err)
}

// revokeKey revokes k (revoking a revoked key is a no-op) with its ledger event; from is
// the workspace whose page revoked it when that is not k's own.
func (db *DB) revokeKey(ctx context.Context, k accountable.APIKey, by accountable.Actor, from string) (accountable.APIKey, error) {
	if k.RevokedAt != nil {
		return k, nil
	}
	ref := aggregate(accountable.AggregateAPIKey, k.ID)
	cmd := command[accountable.APIKey]{workspaceID: k.WorkspaceID, actor: by, locks: []aggregateRef{ref}}
	cmd.run = func(ctx context.Context, tx *tx) (accountable.APIKey, error) {
		revoked, err := scanKey(tx.QueryRow(ctx, `WITH r AS (
				UPDATE api_keys SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL RETURNING *)
			SELECT `+keyColumns+` FROM r k JOIN users u ON u.id = k.user_id`, k.ID, tx.Now()))
		if errors.Is(err, pgx.ErrNoRows) {
			return k, nil // revoked meanwhile: nothing more to record
		}
		if err != nil {
			return k, err
		}
		if _, err := tx.Append(ref, accountable.EventAPIKeyRevoked, payload.APIKeyRevoked{KeyID: k.ID, KeyPrefix: k.Prefix, RevokedFrom: from}); err != nil {
			return k, err
		}
		notifyKeyChanged(tx.batch, k.Prefix)
		return revoked, nil
	}
	k, _, err := runCommand(ctx, db, cmd)
	return k, err
}

// KeyByPrefix returns the key with prefix, its stored hash and the workspaces its user is
// a member of, for authentication. A key whose user is no longer a member of the key's
// own workspace is not found, as a session or an OAuth grant whose user left is not:
// membership is what gives a credential its access.
func (db *DB) KeyByPrefix(ctx context.Context, prefix string) (accountable.APIKey, []byte, error) {
	var hash []byte
	var memberOf []string
	k, err := scanKey(db.pool.QueryRow(ctx, `SELECT `+keyColumns+`, k.key_hash, m.ws FROM api_keys k
		JOIN users u ON u.id = k.user_id
		CROSS JOIN LATERAL (SELECT array_agg(workspace_id::text ORDER BY workspace_id) AS ws
			FROM workspace_members WHERE user_id = k.user_id) m
		WHERE k.prefix = $1 AND k.workspace_id::text = ANY (m.ws)`, prefix), &hash, &memberOf)
	if errors.Is(err, pgx.ErrNoRows) {
		return k, nil, accountable.NotFound("API key")
	}
	k.MemberOf = memberOf
	return k, hash, mapError(err)
}

// RemoveMember ends the membership of the user with email in the workspace, with its
// ledger event (workspace.member_removed, the command line's act): every credential of
// the user stops acting there at once. Keys: every process's key cache hears of it
// (notifyMembershipChanged) and reads the user's keys again; sessions and OAuth grants
// are checked against the membership on every request. The user's keys are not revoked:
// a key made in the workspace acts nowhere while its user is not a member of it, and
// again if the user is added back. Not a member: not_found.
func (db *DB) RemoveMember(ctx context.Context, workspaceID, email string) (userID string, err error) {
	if !accountable.ValidUUID(workspaceID) {
		return "", accountable.Errorf(accountable.ECodeValidationFailed, "the workspace id must be a UUID")
	}
	wsID := accountable.NormalizeUUID(workspaceID)
	wsRef := aggregate(accountable.AggregateWorkspace, wsID)
	cmd := command[string]{workspaceID: wsID, actor: operator, locks: []aggregateRef{wsRef}}
	cmd.run = func(ctx context.Context, tx *tx) (string, error) {
		if _, ok := tx.Head(wsRef); !ok {
			return "", accountable.NotFound("workspace")
		}
		var userID string
		err := tx.QueryRow(ctx, `DELETE FROM workspace_members m USING users u
			WHERE m.workspace_id = $1 AND m.user_id = u.id AND u.email = $2 RETURNING m.user_id`, wsID, email).Scan(&userID)
		if errors.Is(err, pgx.ErrNoRows) {
			return "", accountable.NotFound("member")
		}
		if err != nil {
			return "", err
		}
		if _, err := tx.Append(wsRef, accountable.EventMemberRemoved, payload.MemberRemoved{UserID: userID}); err != nil {
			return "", err
		}
		notifyMembershipChanged(tx.batch, userID)
		return userID, nil
	}
	userID, _, err = runCommand(ctx, db, cmd)
	return userID, err
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
