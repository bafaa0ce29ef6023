package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
)

// Passwords and web sessions (migration 020).

// SetPassword stores the password hash of the user with email (404 for an unknown user).
func (db *DB) SetPassword(ctx context.Context, email, hash string) error {
	tag, err := db.pool.Exec(ctx, `UPDATE users SET password_hash = $2, password_set_at = now() WHERE email = $1`, email, hash)
	if err != nil {
		return mapError(err)
	}
	if tag.RowsAffected() == 0 {
		return accountable.NotFound("user")
	}
	return nil
}

// SignInTarget returns what signing in as email needs: the user, their password hash
// ("" when they have none) and the workspace the session opens (their first).
func (db *DB) SignInTarget(ctx context.Context, email string) (userID, hash, workspaceID string, err error) {
	var h *string
	err = db.pool.QueryRow(ctx, `SELECT u.id, u.password_hash, m.workspace_id FROM users u
		JOIN workspace_members m ON m.user_id = u.id
		WHERE u.email = $1 ORDER BY m.created_at, m.workspace_id LIMIT 1`, email).Scan(&userID, &h, &workspaceID)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", "", accountable.NotFound("user")
	}
	if err != nil {
		return "", "", "", mapError(err)
	}
	if h != nil {
		hash = *h
	}
	return userID, hash, workspaceID, nil
}

// CreateSession records a session by the hash of its token.
func (db *DB) CreateSession(ctx context.Context, tokenHash []byte, s accountable.Session) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO web_sessions (token_hash, user_id, workspace_id, csrf_token, created_at, expires_at)
		VALUES ($1, $2, $3, $4, now(), $5)`, tokenHash, s.UserID, s.WorkspaceID, s.CSRFToken, s.ExpiresAt)
	return mapError(err)
}

// SessionByToken returns the live session of a token hash (404 for an unknown, expired or
// revoked one, or one whose user is no longer a member of its workspace).
func (db *DB) SessionByToken(ctx context.Context, tokenHash []byte) (accountable.Session, error) {
	var s accountable.Session
	err := db.pool.QueryRow(ctx, `SELECT s.user_id, u.email, s.workspace_id, s.csrf_token, s.expires_at FROM web_sessions s
		JOIN users u ON u.id = s.user_id
		JOIN workspace_members m ON m.user_id = s.user_id AND m.workspace_id = s.workspace_id
		WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > now()`, tokenHash).
		Scan(&s.UserID, &s.UserEmail, &s.WorkspaceID, &s.CSRFToken, &s.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, accountable.NotFound("session")
	}
	return s, mapError(err)
}

// RevokeSession ends a session (signing out).
func (db *DB) RevokeSession(ctx context.Context, tokenHash []byte) error {
	_, err := db.pool.Exec(ctx, `UPDATE web_sessions SET revoked_at = now() WHERE token_hash = $1 AND revoked_at IS NULL`, tokenHash)
	return mapError(err)
}

// PurgeSessions deletes sessions that ended before cutoff.
func (db *DB) PurgeSessions(ctx context.Context, cutoff time.Time) (int64, error) {
	tag, err := db.pool.Exec(ctx, `DELETE FROM web_sessions WHERE expires_at < $1 OR revoked_at < $1`, cutoff)
	return tag.RowsAffected(), mapError(err)
}

// IssueKey issues a key named name to the session's user in its workspace (the settings
// page's "Create key"), with its ledger event (the user's act); the key is returned once.
func (db *DB) IssueKey(ctx context.Context, s accountable.Session, name string) (key, prefix string, err error) {
	by := accountable.Actor{Type: accountable.ActorHuman, ID: s.UserID}
	k, err := db.CreateKey(ctx, CreateKeyRequest{Name: name, UserEmail: s.UserEmail, WorkspaceID: s.WorkspaceID, By: &by})
	return k.Key, k.KeyPrefix, err
}

// ServiceSecret returns the deployment's shared secret named name (service_secrets,
// made by a migration).
func (db *DB) ServiceSecret(ctx context.Context, name string) ([]byte, error) {
	var secret []byte
	err := db.pool.QueryRow(ctx, `SELECT secret FROM service_secrets WHERE name = $1`, name).Scan(&secret)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, accountable.NotFound("service secret")
	}
	return secret, mapError(err)
}
