package store_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// waitCached polls until the cache serves prefix from memory (once its listener is up):
// a change made behind the cache's back is then not seen.
func waitCached(t *testing.T, kc *store.KeyCache, prefix string, conn *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		before, _, err := kc.KeyByPrefix(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `UPDATE api_keys SET name = name || '.' WHERE prefix = $1`, prefix); err != nil {
			t.Fatal(err)
		}
		after, _, err := kc.KeyByPrefix(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		if after.Name == before.Name {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the key cache never served from memory")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cachedKey starts a key cache and returns it with a key it serves from memory.
func cachedKey(t *testing.T, ttl time.Duration) (*store.DB, *store.KeyCache, *pgx.Conn, string) {
	t.Helper()
	db := storetest.Open(t)
	kc := store.NewKeyCache(db, ttl, slog.New(slog.NewTextHandler(io.Discard, nil)))
	kc.Start()
	t.Cleanup(kc.Stop)
	conn := storetest.Conn(t)
	prefix := storetest.NewTenant(t, db).Principal.KeyPrefix
	waitCached(t, kc, prefix, conn)
	return db, kc, conn, prefix
}

func TestKeyCacheDropsRevokedKeysAtOnce(t *testing.T) {
	ctx := context.Background()
	db, kc, _, prefix := cachedKey(t, time.Hour)

	// A revocation through the store is announced and the entry dropped before the TTL.
	if _, err := db.RevokeKey(ctx, prefix); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		k, _, err := kc.KeyByPrefix(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		if k.RevokedAt != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("revoked key still served from the cache")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestKeyCacheEntriesExpire(t *testing.T) {
	ctx := context.Background()
	_, kc, conn, prefix := cachedKey(t, 200*time.Millisecond)
	if _, err := conn.Exec(ctx, `UPDATE api_keys SET name = 'renamed' WHERE prefix = $1`, prefix); err != nil {
		t.Fatal(err)
	}
	// A change that sends no notification is served from memory until the entry expires,
	// then read again.
	changed := time.Now()
	for {
		k, _, err := kc.KeyByPrefix(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		if k.Name == "renamed" {
			if since := time.Since(changed); since > 5*time.Second {
				t.Fatalf("the entry expired after %s, TTL 200ms", since)
			}
			return
		}
		if time.Since(changed) > 5*time.Second {
			t.Fatal("the entry never expired")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
