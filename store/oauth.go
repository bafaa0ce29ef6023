package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/payload"
)

// The authorization server's clients and grants (migration 021). The authorization
// server's library asks for some of its steps to be atomic (rotating a refresh token:
// deactivate the old, create the new access and refresh tokens); it begins a transaction
// with BeginOAuthTx, and every method here runs in the transaction its context carries.

type oauthTxKey struct{}

// execQuerier is what a pool and a transaction share, writes included.
type execQuerier interface {
	querier
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func (db *DB) oauthQuerier(ctx context.Context) execQuerier {
	if tx, ok := ctx.Value(oauthTxKey{}).(pgx.Tx); ok {
		return tx
	}
	return db.pool
}

// BeginOAuthTx returns a context whose OAuth statements run in one transaction.
func (db *DB) BeginOAuthTx(ctx context.Context) (context.Context, error) {
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		return ctx, mapError(err)
	}
	return context.WithValue(ctx, oauthTxKey{}, tx), nil
}

// CommitOAuthTx commits the transaction of ctx.
func (db *DB) CommitOAuthTx(ctx context.Context) error {
	if tx, ok := ctx.Value(oauthTxKey{}).(pgx.Tx); ok {
		return mapError(tx.Commit(ctx))
	}
	return nil
}

// RollbackOAuthTx rolls the transaction of ctx back.
func (db *DB) RollbackOAuthTx(ctx context.Context) error {
	if tx, ok := ctx.Value(oauthTxKey{}).(pgx.Tx); ok {
		return mapError(tx.Rollback(ctx))
	}
	return nil
}

// CreateOAuthClient records a registered client.
func (db *DB) CreateOAuthClient(ctx context.Context, c accountable.OAuthClient) error {
	_, err := db.oauthQuerier(ctx).Exec(ctx, `INSERT INTO oauth_clients (id, name, client_uri, redirect_uris, grant_types,
		response_types, token_endpoint_auth_method, secret_hash, scope, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		c.ID, c.Name, c.ClientURI, c.RedirectURIs, c.GrantTypes, c.ResponseTypes, c.TokenEndpointAuthMethod, c.SecretHash, c.Scope, c.CreatedAt)
	return mapError(err)
}

// OAuthClient returns a registered client (404 for an unknown one).
func (db *DB) OAuthClient(ctx context.Context, id string) (accountable.OAuthClient, error) {
	var c accountable.OAuthClient
	err := db.oauthQuerier(ctx).QueryRow(ctx, `SELECT id, name, client_uri, redirect_uris, grant_types, response_types,
		token_endpoint_auth_method, secret_hash, scope, created_at FROM oauth_clients WHERE id = $1`, id).
		Scan(&c.ID, &c.Name, &c.ClientURI, &c.RedirectURIs, &c.GrantTypes, &c.ResponseTypes, &c.TokenEndpointAuthMethod,
			&c.SecretHash, &c.Scope, &c.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, accountable.NotFound("client")
	}
	return c, mapError(err)
}

// insertGrant records a grant g: the statement and its arguments.
const insertGrant = `INSERT INTO oauth_grants (kind, signature, request_id, client_id, user_id, workspace_id, request, active, expires_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, true, $8)`

func grantArgs(g accountable.OAuthGrant) []any {
	return []any{g.Kind, g.Signature, g.RequestID, g.ClientID, emptyAsNull(g.UserID), emptyAsNull(g.WorkspaceID), g.Request, g.ExpiresAt}
}

// CreateOAuthGrant records a grant.
func (db *DB) CreateOAuthGrant(ctx context.Context, g accountable.OAuthGrant) error {
	_, err := db.oauthQuerier(ctx).Exec(ctx, insertGrant, grantArgs(g)...)
	return mapError(err)
}

// OAuthGrant returns a grant, active or not (404 for an unknown one). A grant whose user
// left its workspace is not found: the access it stood for is gone.
func (db *DB) OAuthGrant(ctx context.Context, kind string, signature []byte) (accountable.OAuthGrant, error) {
	g := accountable.OAuthGrant{Kind: kind, Signature: signature}
	var userID, workspaceID *string
	err := db.oauthQuerier(ctx).QueryRow(ctx, `SELECT g.request_id, g.client_id, g.user_id, g.workspace_id, g.request, g.active, g.expires_at
		FROM oauth_grants g
		WHERE g.kind = $1 AND g.signature = $2 AND (g.user_id IS NULL OR EXISTS (SELECT 1 FROM workspace_members m
			WHERE m.user_id = g.user_id AND m.workspace_id = g.workspace_id))`, kind, signature).
		Scan(&g.RequestID, &g.ClientID, &userID, &workspaceID, &g.Request, &g.Active, &g.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return g, accountable.NotFound("grant")
	}
	if userID != nil {
		g.UserID = *userID
	}
	if workspaceID != nil {
		g.WorkspaceID = *workspaceID
	}
	return g, mapError(err)
}

// DeactivateOAuthGrant marks an active grant used (an authorization code, a rotated
// refresh token): it is kept, so that its reuse is recognized. false: it was not active
// (another request used it first; of requests using one token at the same moment, one
// wins: the row's lock orders them and the others find it used).
func (db *DB) DeactivateOAuthGrant(ctx context.Context, kind string, signature []byte) (bool, error) {
	tag, err := db.oauthQuerier(ctx).Exec(ctx, `UPDATE oauth_grants SET active = false WHERE kind = $1 AND signature = $2 AND active`, kind, signature)
	if err != nil {
		return false, mapError(err)
	}
	return tag.RowsAffected() == 1, nil
}

// DeleteOAuthGrant deletes a grant.
func (db *DB) DeleteOAuthGrant(ctx context.Context, kind string, signature []byte) error {
	_, err := db.oauthQuerier(ctx).Exec(ctx, `DELETE FROM oauth_grants WHERE kind = $1 AND signature = $2`, kind, signature)
	return mapError(err)
}

// DeactivateOAuthFamily deactivates the grants of a kind in a family (revoking its
// refresh tokens).
func (db *DB) DeactivateOAuthFamily(ctx context.Context, kind, requestID string) error {
	_, err := db.oauthQuerier(ctx).Exec(ctx, `UPDATE oauth_grants SET active = false WHERE request_id = $1 AND kind = $2`, requestID, kind)
	return mapError(err)
}

// DeleteOAuthFamily deletes the grants of a kind in a family (revoking its access tokens).
func (db *DB) DeleteOAuthFamily(ctx context.Context, kind, requestID string) error {
	_, err := db.oauthQuerier(ctx).Exec(ctx, `DELETE FROM oauth_grants WHERE request_id = $1 AND kind = $2`, requestID, kind)
	return mapError(err)
}

// PurgeOAuthGrants deletes grants that expired before cutoff (a used refresh token is kept
// until then, to recognize its reuse).
func (db *DB) PurgeOAuthGrants(ctx context.Context, cutoff time.Time) (int64, error) {
	tag, err := db.pool.Exec(ctx, `DELETE FROM oauth_grants WHERE expires_at < $1`, cutoff)
	return tag.RowsAffected(), mapError(err)
}

// emptyAsNull is NULL for "" (a grant not yet tied to a user: a PKCE request).
func emptyAsNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// AuthorizeOAuthCode records the authorization code of a consent with its ledger event
// (oauth.client_authorized on the workspace, the user's act), in one transaction: an
// agent given access to a workspace is an accountable change, as a key is.
func (db *DB) AuthorizeOAuthCode(ctx context.Context, g accountable.OAuthGrant, clientName string, scopes, resources []string) error {
	ref := aggregate(accountable.AggregateWorkspace, g.WorkspaceID)
	cmd := command[struct{}]{workspaceID: g.WorkspaceID, actor: accountable.Actor{Type: accountable.ActorHuman, ID: g.UserID},
		locks: []aggregateRef{ref}}
	cmd.run = func(ctx context.Context, tx *tx) (struct{}, error) {
		tx.Queue(insertGrant, grantArgs(g)...)
		_, err := tx.Append(ref, accountable.EventOAuthClientAuthorized, payload.OAuthClientAuthorized{GrantID: g.RequestID,
			ClientID: g.ClientID, ClientName: clientName, UserID: g.UserID, Scopes: scopes, Resources: resources})
		return struct{}{}, err
	}
	_, _, err := runCommand(ctx, db, cmd)
	return err
}
