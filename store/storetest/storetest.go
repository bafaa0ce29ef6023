// Package storetest gives each test package its own freshly migrated PostgreSQL database on
// the server named by DATABASE_URL (started by `make test`). The schema is migrated once
// (as the owner role of MIGRATION_DATABASE_URL, granting the service role of DATABASE_URL
// its privileges, as `accountable migrate` does) into a template database named after a
// digest of the migrations; each test package clones it with CREATE DATABASE ... TEMPLATE,
// which takes milliseconds. The service's stores connect as the service role, as in
// production; raw connections for set-up and tampering connect as the owner.
package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/accountablework/accountable"
	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/tokens"
)

var (
	once    sync.Once
	dbURL   string
	dbName  string
	initErr error
)

// serviceServerURL returns DATABASE_URL (the service role); tests fail (never skip)
// without it.
func serviceServerURL() (string, error) {
	u := os.Getenv("DATABASE_URL")
	if u == "" {
		return "", fmt.Errorf("DATABASE_URL is not set: run the tests with `make test`, which starts PostgreSQL")
	}
	return u, nil
}

// ownerServerURL returns MIGRATION_DATABASE_URL (the owner role), or DATABASE_URL when
// only one role is configured.
func ownerServerURL() (string, error) {
	if u := os.Getenv("MIGRATION_DATABASE_URL"); u != "" {
		return u, nil
	}
	return serviceServerURL()
}

// URL returns the connection URL (as the service role) of this test package's database,
// creating it on first use.
func URL(tb testing.TB) string {
	tb.Helper()
	once.Do(func() { dbURL, dbName, initErr = create(context.Background()) })
	if initErr != nil {
		tb.Fatalf("storetest: %v", initErr)
	}
	return dbURL
}

// OwnerURL returns the connection URL of this test package's database as the owner role
// (migrations, tampering).
func OwnerURL(tb testing.TB) string {
	tb.Helper()
	URL(tb)
	return withDatabase(ownerServerURL, dbName)
}

// Open returns a DB on this test package's database, closed when the test ends.
func Open(tb testing.TB) *store.DB {
	tb.Helper()
	db, err := store.Open(context.Background(), store.Config{URL: URL(tb)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(db.Close)
	return db
}

// Main runs the package's tests, drops its database and runs cleanups afterwards. Use
// from TestMain. When logs are kept (logs.go), the secrets of every response read through
// http.DefaultTransport are noted.
func Main(m *testing.M, cleanups ...func()) {
	if logDir() != "" {
		http.DefaultTransport = secretNoter{http.DefaultTransport}
	}
	code := m.Run()
	if dbName != "" {
		if err := drop(context.Background(), dbName); err != nil {
			fmt.Fprintf(os.Stderr, "storetest: drop %s: %v\n", dbName, err)
		}
	}
	for _, cleanup := range cleanups { // os.Exit runs no deferred calls
		cleanup()
	}
	os.Exit(code)
}

func adminConn(ctx context.Context) (*pgx.Conn, error) {
	if _, err := serviceServerURL(); err != nil {
		return nil, err
	}
	return pgx.Connect(ctx, withDatabase(ownerServerURL, "postgres"))
}

func migrationsDigest() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(store.Migrations(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(store.Migrations(), path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\n%d\n", path, len(b))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:16], err
}

func create(ctx context.Context) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	conn, err := adminConn(ctx)
	if err != nil {
		return "", "", err
	}
	defer conn.Close(ctx)
	digest, err := migrationsDigest()
	if err != nil {
		return "", "", err
	}
	template := "accountable_tmpl_" + digest
	// Test packages run in parallel processes: one of them builds the template.
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext('accountable-storetest-template'))`); err != nil {
		return "", "", err
	}
	var exists bool
	err = conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, template).Scan(&exists)
	if err == nil && !exists {
		err = buildTemplate(ctx, conn, template)
	}
	_, unlockErr := conn.Exec(ctx, `SELECT pg_advisory_unlock(hashtext('accountable-storetest-template'))`)
	if err != nil {
		return "", "", err
	}
	if unlockErr != nil {
		return "", "", unlockErr
	}
	name := "accountable_test_" + uuid.NewString()[:8]
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{template}.Sanitize()); err != nil {
		return "", "", fmt.Errorf("clone template: %w", err)
	}
	return withDatabase(serviceServerURL, name), name, nil
}

func buildTemplate(ctx context.Context, conn *pgx.Conn, template string) error {
	building := template + "_build"
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{building}.Sanitize()); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{building}.Sanitize()); err != nil {
		return err
	}
	if err := store.Migrate(ctx, store.MigrateConfig{OwnerURL: withDatabase(ownerServerURL, building),
		ServiceURL: withDatabase(serviceServerURL, building)}); err != nil {
		return fmt.Errorf("migrate template: %w", err)
	}
	_, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{building}.Sanitize()+" RENAME TO "+pgx.Identifier{template}.Sanitize())
	return err
}

func drop(ctx context.Context, name string) error {
	conn, err := adminConn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}

// withDatabase returns the server URL with its database replaced by name.
func withDatabase(serverURL func() (string, error), name string) string {
	raw, _ := serverURL()
	u, err := url.Parse(raw)
	if err != nil {
		panic(err) // pgx.ParseConfig accepted it already
	}
	u.Path = "/" + name
	return u.String()
}

// TenantEvents is how many ledger events making a tenant writes: workspace.created,
// user.created, workspace.member_added and api_key.created.
const TenantEvents = 4

// Tenant is a workspace with a user and an API key, made through the real key store.
type Tenant struct {
	Key       string
	Principal accountable.Principal
}

// NewTenant creates a new workspace, user and key in db.
func NewTenant(tb testing.TB, db *store.DB) Tenant {
	tb.Helper()
	email := "user-" + uuid.NewString()[:8] + "@example.test"
	k, err := db.CreateKey(context.Background(), store.CreateKeyRequest{Name: "test", UserEmail: email, NewWorkspace: "ws " + email})
	if err != nil {
		tb.Fatal(err)
	}
	NoteSecrets(k.Key)
	prefix, _ := tokens.ParseAPIKey(k.Key)
	return Tenant{Key: k.Key, Principal: accountable.Principal{UserID: k.UserID, UserEmail: email, WorkspaceID: k.WorkspaceID, KeyPrefix: prefix}}
}

// Conn opens a plain connection to this test package's database as the owner role (for
// set-up and tampering that must bypass the store and its role), closed when the test
// ends.
func Conn(tb testing.TB) *pgx.Conn {
	tb.Helper()
	conn, err := pgx.Connect(context.Background(), OwnerURL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// NewDatabase creates an empty database on the test server, dropped when the test ends,
// and returns its URLs as the owner role and as the service role.
func NewDatabase(tb testing.TB) (ownerURL, serviceURL string) {
	tb.Helper()
	if _, err := serviceServerURL(); err != nil {
		tb.Fatal(err)
	}
	name := "accountable_test_" + uuid.NewString()[:8]
	CreateDatabase(tb, withDatabase(ownerServerURL, "postgres"), name)
	tb.Cleanup(func() {
		if err := drop(context.Background(), name); err != nil {
			tb.Errorf("drop %s: %v", name, err)
		}
	})
	return withDatabase(ownerServerURL, name), withDatabase(serviceServerURL, name)
}

// NewMigratedCluster starts a private cluster (NewCluster) with the service's schema
// migrated into its database "accountable", and returns it with that database's URLs as the
// owner role and as the service role.
func NewMigratedCluster(tb testing.TB) (c *Cluster, ownerURL, serviceURL string) {
	tb.Helper()
	c = NewCluster(tb)
	ownerURL, serviceURL = c.URL("accountable", "accountable"), c.URL("accountable_service", "accountable")
	if err := store.Migrate(context.Background(), store.MigrateConfig{OwnerURL: ownerURL, ServiceURL: serviceURL}); err != nil {
		tb.Fatal(err)
	}
	return c, ownerURL, serviceURL
}
