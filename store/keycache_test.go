package store_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
	"github.com/accountablework/accountable/tokens"
)

// waitCached polls until the cache serves prefix from memory (once its listener is up):
// a change made behind the cache's back is then not seen.
func waitCached(t *testing.T, kc *store.KeyCache, prefix string, conn *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	storetest.WaitFor(t, 10*time.Second, "the key cache to serve from memory", func() bool {
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
		return after.Name == before.Name
	})
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
	storetest.WaitFor(t, 5*time.Second, "the cache to drop the revoked key", func() bool {
		k, _, err := kc.KeyByPrefix(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		return k.RevokedAt != nil
	})
}

func TestKeyCacheEntriesExpire(t *testing.T) {
	ctx := context.Background()
	_, kc, conn, prefix := cachedKey(t, 200*time.Millisecond)
	if _, err := conn.Exec(ctx, `UPDATE api_keys SET name = 'renamed' WHERE prefix = $1`, prefix); err != nil {
		t.Fatal(err)
	}
	// A change that sends no notification is served from memory until the entry expires,
	// then read again.
	storetest.WaitFor(t, 5*time.Second, "the entry to expire (TTL 200ms)", func() bool {
		k, _, err := kc.KeyByPrefix(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		return k.Name == "renamed"
	})
}

// renamePrefix changes a key's prefix behind the cache's back (no notification).
func renamePrefix(t *testing.T, conn *pgx.Conn, from, to string) {
	t.Helper()
	tag, err := conn.Exec(context.Background(), `UPDATE api_keys SET prefix = $2 WHERE prefix = $1`, from, to)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("renaming %s to %s: %v %v", from, to, tag, err)
	}
}

// waitUnknownCached polls until the cache answers not_found for a prefix no key has from
// memory (once its listener is up): the key with prefix is then renamed to it behind the
// cache's back and still not found. It returns that prefix, which the key keeps.
func waitUnknownCached(t *testing.T, kc *store.KeyCache, conn *pgx.Conn, prefix string) string {
	t.Helper()
	ctx := context.Background()
	var unknown string
	storetest.WaitFor(t, 10*time.Second, "the key cache to remember an unknown prefix", func() bool {
		_, unknown = tokens.NewAPIKey()
		if _, _, err := kc.KeyByPrefix(ctx, unknown); accountable.ErrorCode(err) != accountable.ECodeNotFound {
			t.Fatalf("unknown prefix: %v", err)
		}
		renamePrefix(t, conn, prefix, unknown)
		_, _, err := kc.KeyByPrefix(ctx, unknown)
		if accountable.ErrorCode(err) == accountable.ECodeNotFound {
			return true
		}
		if err != nil {
			t.Fatal(err)
		}
		renamePrefix(t, conn, unknown, prefix)
		return false
	})
	return unknown
}

// A prefix no key has is answered from memory (no query), and a key that appears under it
// works as soon as its creation is announced, however long unknown prefixes are kept.
func TestKeyCacheRemembersUnknownPrefixesUntilAKeyIsAnnounced(t *testing.T) {
	ctx := context.Background()
	_, kc, conn, prefix := cachedKey(t, time.Hour)
	kc.UnknownTTL = time.Hour
	unknown := waitUnknownCached(t, kc, conn, prefix)

	// What CreateKey sends with its COMMIT (TestCreatingAKeyAnnouncesIt).
	if _, err := conn.Exec(ctx, `SELECT pg_notify('accountable_api_keys', $1)`, unknown); err != nil {
		t.Fatal(err)
	}
	storetest.WaitFor(t, 10*time.Second, "the announced key to be known", func() bool {
		k, _, err := kc.KeyByPrefix(ctx, unknown)
		if err == nil && k.Prefix == unknown {
			return true
		}
		if accountable.ErrorCode(err) != accountable.ECodeNotFound {
			t.Fatalf("the announced key: %v", err)
		}
		return false
	})
}

func TestKeyCacheForgetsUnknownPrefixesAfterTheirTTL(t *testing.T) {
	ctx := context.Background()
	_, kc, conn, prefix := cachedKey(t, time.Hour)
	kc.UnknownTTL = 300 * time.Millisecond
	unknown := waitUnknownCached(t, kc, conn, prefix)
	storetest.WaitFor(t, 10*time.Second, "the unknown prefix to be forgotten after its TTL", func() bool {
		_, _, err := kc.KeyByPrefix(ctx, unknown)
		if err != nil && accountable.ErrorCode(err) != accountable.ECodeNotFound {
			t.Fatalf("after its TTL: %v", err)
		}
		return err == nil
	})
}

// Creating a key announces its prefix, so caches that remember it as unknown accept it at
// once.
func TestCreatingAKeyAnnouncesIt(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	conn := storetest.Conn(t)
	if _, err := conn.Exec(ctx, `LISTEN accountable_api_keys`); err != nil {
		t.Fatal(err)
	}
	tenant := storetest.NewTenant(t, db)
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := conn.WaitForNotification(wait)
	if err != nil {
		t.Fatalf("no notification: %v", err)
	}
	if n.Payload != tenant.Principal.KeyPrefix {
		t.Fatalf("notification %q, created %q", n.Payload, tenant.Principal.KeyPrefix)
	}
}
