package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store/storetest"
	"github.com/accountablework/accountable/tokens"
)

func TestSessions(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	ten := storetest.NewTenant(t, db)
	email := ten.Principal.UserEmail
	if _, hash, ws, err := db.SignInTarget(ctx, email); err != nil || hash != "" || ws != ten.Principal.WorkspaceID {
		t.Fatalf("before a password: %q %q %v", hash, ws, err)
	}
	if err := db.SetPassword(ctx, "nobody@example.test", "h"); accountable.ErrorCode(err) != accountable.ECodeNotFound {
		t.Fatalf("unknown user: %v", err)
	}
	if err := db.SetPassword(ctx, email, "$argon2id$stored"); err != nil {
		t.Fatal(err)
	}
	user, hash, ws, err := db.SignInTarget(ctx, email)
	if err != nil || hash != "$argon2id$stored" || user != ten.Principal.UserID || ws != ten.Principal.WorkspaceID {
		t.Fatalf("sign-in target: %q %q %q %v", user, hash, ws, err)
	}

	token, tokenHash := tokens.NewSessionToken(make([]byte, 32))
	s := accountable.Session{UserID: user, WorkspaceID: ws, CSRFToken: tokens.NewCSRFToken(), ExpiresAt: time.Now().Add(time.Hour)}
	if err := db.CreateSession(ctx, tokenHash, s); err != nil {
		t.Fatal(err)
	}
	got, err := db.SessionByToken(ctx, tokens.HashSessionToken(token))
	if err != nil || got.UserID != user || got.UserEmail != email || got.WorkspaceID != ws || got.CSRFToken != s.CSRFToken {
		t.Fatalf("session %+v %v", got, err)
	}
	if err := db.RevokeSession(ctx, tokenHash); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SessionByToken(ctx, tokenHash); accountable.ErrorCode(err) != accountable.ECodeNotFound {
		t.Fatalf("a revoked session: %v", err)
	}

	_, expiredHash := tokens.NewSessionToken(make([]byte, 32))
	s.ExpiresAt = time.Now().Add(-time.Second)
	if err := db.CreateSession(ctx, expiredHash, s); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SessionByToken(ctx, expiredHash); accountable.ErrorCode(err) != accountable.ECodeNotFound {
		t.Fatalf("an expired session: %v", err)
	}
	if n, err := db.PurgeSessions(ctx, time.Now().Add(time.Minute)); err != nil || n < 2 {
		t.Fatalf("purged %d: %v", n, err)
	}
}

// The session key is made by a migration, 32 random bytes, readable by the service role
// and by no means writable by it.
func TestServiceSecretIsMadeOnceAndReadOnly(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	key, err := db.ServiceSecret(ctx, "session_mac")
	if err != nil || len(key) != tokens.SessionKeyLength {
		t.Fatalf("session key: %d bytes, %v", len(key), err)
	}
	if again, _ := db.ServiceSecret(ctx, "session_mac"); string(again) != string(key) {
		t.Fatal("the key changed between reads")
	}
	if _, err := db.ServiceSecret(ctx, "nonesuch"); accountable.ErrorCode(err) != accountable.ECodeNotFound {
		t.Fatalf("an unknown secret: %v", err)
	}
	conn, err := pgx.Connect(ctx, storetest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	wantDenied(t, conn, `UPDATE service_secrets SET secret = 'x'`)
	wantDenied(t, conn, `DELETE FROM service_secrets`)
	wantDenied(t, conn, `INSERT INTO service_secrets VALUES ('mine', 'x')`)
}
