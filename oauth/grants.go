package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/url"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/handler/pkce"
	"github.com/ory/fosite/storage"

	"github.com/accountablework/accountable"
)

// grants is fosite's storage over the Store: clients, authorization codes, access and
// refresh tokens and PKCE requests, each kept under the SHA-256 of its token's signature.
type grants struct {
	store  Store
	server *Server
}

var (
	_ fosite.ClientManager          = (*grants)(nil)
	_ oauth2.CoreStorage            = (*grants)(nil)
	_ oauth2.TokenRevocationStorage = (*grants)(nil)
	_ pkce.PKCERequestStorage       = (*grants)(nil)
	_ storage.Transactional         = (*grants)(nil)
)

// storedRequest is a fosite request as a grant keeps it. Form holds only what fosite
// sanitized it to (redirect_uri, the PKCE challenge): never a token or a verifier.
type storedRequest struct {
	ID                string          `json:"id"`
	RequestedAt       time.Time       `json:"requested_at"`
	ClientID          string          `json:"client_id"`
	RequestedScope    []string        `json:"requested_scope"`
	GrantedScope      []string        `json:"granted_scope"`
	RequestedAudience []string        `json:"requested_audience"`
	GrantedAudience   []string        `json:"granted_audience"`
	Form              url.Values      `json:"form"`
	Session           json.RawMessage `json:"session"`
}

func signatureHash(signature string) []byte {
	h := sha256.Sum256([]byte(signature))
	return h[:]
}

// fallbackLifespan bounds a grant whose session names no expiry for its kind.
const fallbackLifespan = 30 * 24 * time.Hour

func (g *grants) create(ctx context.Context, kind, signature string, tokenType fosite.TokenType, r fosite.Requester) error {
	grant, err := g.grant(kind, signature, tokenType, r)
	if err != nil {
		return err
	}
	return g.store.CreateOAuthGrant(ctx, grant)
}

// grant is the stored form of a token's request.
func (g *grants) grant(kind, signature string, tokenType fosite.TokenType, r fosite.Requester) (accountable.OAuthGrant, error) {
	sessionJSON, err := json.Marshal(r.GetSession())
	if err != nil {
		return accountable.OAuthGrant{}, err
	}
	body, err := json.Marshal(storedRequest{ID: r.GetID(), RequestedAt: r.GetRequestedAt(), ClientID: r.GetClient().GetID(),
		RequestedScope: r.GetRequestedScopes(), GrantedScope: r.GetGrantedScopes(), RequestedAudience: r.GetRequestedAudience(),
		GrantedAudience: r.GetGrantedAudience(), Form: r.GetRequestForm(), Session: sessionJSON})
	if err != nil {
		return accountable.OAuthGrant{}, err
	}
	grant := accountable.OAuthGrant{Signature: signatureHash(signature), Kind: kind, RequestID: r.GetID(),
		ClientID: r.GetClient().GetID(), Request: body}
	if sess, ok := r.GetSession().(*Session); ok {
		grant.UserID, grant.WorkspaceID = sess.Subject, sess.WorkspaceID
		grant.ExpiresAt = sess.GetExpiresAt(tokenType)
	}
	if grant.ExpiresAt.IsZero() {
		grant.ExpiresAt = time.Now().Add(fallbackLifespan)
	}
	return grant, nil
}

// get returns the request of a grant, filling session; an inactive grant is returned
// with inactive (fosite needs the request to revoke its family).
func (g *grants) get(ctx context.Context, kind, signature string, session fosite.Session, inactive error) (fosite.Requester, error) {
	grant, err := g.store.OAuthGrant(ctx, kind, signatureHash(signature))
	if accountable.ErrorCode(err) == accountable.ECodeNotFound {
		return nil, fosite.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	var sr storedRequest
	if err := json.Unmarshal(grant.Request, &sr); err != nil {
		return nil, err
	}
	if session == nil {
		session = g.server.EmptySession()
	}
	if err := json.Unmarshal(sr.Session, session); err != nil {
		return nil, err
	}
	client, err := g.GetClient(ctx, sr.ClientID)
	if err != nil {
		return nil, err
	}
	r := &fosite.Request{ID: sr.ID, RequestedAt: sr.RequestedAt, Client: client, RequestedScope: sr.RequestedScope,
		GrantedScope: sr.GrantedScope, RequestedAudience: sr.RequestedAudience, GrantedAudience: sr.GrantedAudience,
		Form: sr.Form, Session: session}
	if r.Form == nil {
		r.Form = url.Values{}
	}
	if !grant.Active {
		return r, inactive
	}
	return r, nil
}

// GetClient returns a registered client.
func (g *grants) GetClient(ctx context.Context, id string) (fosite.Client, error) {
	c, err := g.store.OAuthClient(ctx, id)
	if accountable.ErrorCode(err) == accountable.ECodeNotFound {
		return nil, fosite.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return g.server.fositeClient(c), nil
}

// ClientAssertionJWTValid: clients do not authenticate with JWT assertions here, so no
// assertion id was ever used.
func (g *grants) ClientAssertionJWTValid(context.Context, string) error { return nil }

// SetClientAssertionJWT: see ClientAssertionJWTValid.
func (g *grants) SetClientAssertionJWT(context.Context, string, time.Time) error { return nil }

// CreateAuthorizeCodeSession records a consent's code, and the consent on the ledger.
func (g *grants) CreateAuthorizeCodeSession(ctx context.Context, code string, r fosite.Requester) error {
	grant, err := g.grant(accountable.GrantKindCode, code, fosite.AuthorizeCode, r)
	if err != nil {
		return err
	}
	sess, ok := r.GetSession().(*Session)
	if !ok || grant.UserID == "" || grant.WorkspaceID == "" {
		return errors.New("oauth: a code without its user and workspace")
	}
	return g.store.AuthorizeOAuthCode(ctx, grant, sess.ClientName, r.GetGrantedScopes(), r.GetGrantedAudience())
}

func (g *grants) GetAuthorizeCodeSession(ctx context.Context, code string, session fosite.Session) (fosite.Requester, error) {
	return g.get(ctx, accountable.GrantKindCode, code, session, fosite.ErrInvalidatedAuthorizeCode)
}

// InvalidateAuthorizeCodeSession marks a code used; using it again revokes what it gave.
// A code another request has just used is refused (the api answers invalid_grant).
func (g *grants) InvalidateAuthorizeCodeSession(ctx context.Context, code string) error {
	ok, err := g.store.DeactivateOAuthGrant(ctx, accountable.GrantKindCode, signatureHash(code))
	if err == nil && !ok {
		err = fosite.ErrInvalidatedAuthorizeCode
	}
	return err
}

func (g *grants) CreateAccessTokenSession(ctx context.Context, signature string, r fosite.Requester) error {
	return g.create(ctx, accountable.GrantKindAccess, signature, fosite.AccessToken, r)
}

func (g *grants) GetAccessTokenSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	return g.get(ctx, accountable.GrantKindAccess, signature, session, fosite.ErrInactiveToken)
}

func (g *grants) DeleteAccessTokenSession(ctx context.Context, signature string) error {
	return g.store.DeleteOAuthGrant(ctx, accountable.GrantKindAccess, signatureHash(signature))
}

func (g *grants) CreateRefreshTokenSession(ctx context.Context, signature, _ string, r fosite.Requester) error {
	return g.create(ctx, accountable.GrantKindRefresh, signature, fosite.RefreshToken, r)
}

// GetRefreshTokenSession returns a refresh token's request; a used (rotated) one answers
// fosite.ErrInactiveToken, on which fosite revokes the whole family (reuse detection).
func (g *grants) GetRefreshTokenSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	return g.get(ctx, accountable.GrantKindRefresh, signature, session, fosite.ErrInactiveToken)
}

func (g *grants) DeleteRefreshTokenSession(ctx context.Context, signature string) error {
	return g.store.DeleteOAuthGrant(ctx, accountable.GrantKindRefresh, signatureHash(signature))
}

// RotateRefreshToken retires the refresh token just used (kept inactive, so that its
// reuse is recognized) and the family's access tokens: after a refresh only the new pair
// works. Of refreshes with one token at the same moment, one rotates it.
func (g *grants) RotateRefreshToken(ctx context.Context, requestID, signature string) error {
	ok, err := g.store.DeactivateOAuthGrant(ctx, accountable.GrantKindRefresh, signatureHash(signature))
	if err != nil {
		return err
	}
	if !ok { // another refresh with this token won: fosite rolls back and asks for a retry
		return fosite.ErrSerializationFailure
	}
	return g.store.DeleteOAuthFamily(ctx, accountable.GrantKindAccess, requestID)
}

// RevokeRefreshToken revokes every refresh token of a family.
func (g *grants) RevokeRefreshToken(ctx context.Context, requestID string) error {
	return g.store.DeactivateOAuthFamily(ctx, accountable.GrantKindRefresh, requestID)
}

// RevokeAccessToken revokes every access token of a family.
func (g *grants) RevokeAccessToken(ctx context.Context, requestID string) error {
	return g.store.DeleteOAuthFamily(ctx, accountable.GrantKindAccess, requestID)
}

func (g *grants) CreatePKCERequestSession(ctx context.Context, signature string, r fosite.Requester) error {
	return g.create(ctx, accountable.GrantKindPKCE, signature, fosite.AuthorizeCode, r)
}

func (g *grants) GetPKCERequestSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	return g.get(ctx, accountable.GrantKindPKCE, signature, session, fosite.ErrNotFound)
}

func (g *grants) DeletePKCERequestSession(ctx context.Context, signature string) error {
	return g.store.DeleteOAuthGrant(ctx, accountable.GrantKindPKCE, signatureHash(signature))
}

func (g *grants) BeginTX(ctx context.Context) (context.Context, error) {
	return g.store.BeginOAuthTx(ctx)
}
func (g *grants) Commit(ctx context.Context) error   { return g.store.CommitOAuthTx(ctx) }
func (g *grants) Rollback(ctx context.Context) error { return g.store.RollbackOAuthTx(ctx) }
