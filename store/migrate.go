package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/tern/v2/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations returns the embedded migration files (for tests that fingerprint them).
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err)
	}
	return sub
}

// migrationLock serialises migrators across processes, including tern's own set-up.
const migrationLock = int64(0x616363745f6d6967) // "acct_mig"

// MigrateConfig names the two roles of the database (see roles.go).
type MigrateConfig struct {
	// OwnerURL connects as the role that owns the schema; the migrations run as it.
	OwnerURL string
	// ServiceURL is how the service connects (DATABASE_URL). When it names another role
	// than OwnerURL, that role is created if missing (LOGIN and nothing else, with the
	// URL's password) and granted the service's privileges. Empty or the same role: the
	// service runs as the owner (the ledger is then protected by its trigger only).
	ServiceURL string
}

// Migrate creates the database named in cfg.OwnerURL when it does not exist yet
// (connecting to the server's "postgres" database to do so), applies every pending
// migration and grants the service role its privileges.
func Migrate(ctx context.Context, mc MigrateConfig) error {
	cfg, err := pgx.ParseConfig(mc.OwnerURL)
	if err != nil {
		return fmt.Errorf("store: parse MIGRATION_DATABASE_URL: %w", err)
	}
	var service *pgx.ConnConfig
	if mc.ServiceURL != "" {
		if service, err = pgx.ParseConfig(mc.ServiceURL); err != nil {
			return fmt.Errorf("store: parse DATABASE_URL: %w", err)
		}
		if service.User == cfg.User {
			service = nil
		}
	}
	if err := ensureDatabase(ctx, cfg); err != nil {
		return err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return mapError(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLock); err != nil {
		return mapError(err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrationLock) //nolint:errcheck // the lock also ends with the session
	m, err := migrate.NewMigrator(ctx, conn, "public.schema_version")
	if err != nil {
		return fmt.Errorf("store: migrator: %w", err)
	}
	if err := m.LoadMigrations(Migrations()); err != nil {
		return fmt.Errorf("store: load migrations: %w", err)
	}
	if err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("store: migrate: %w", err)
	}
	if service != nil {
		return ensureServiceRole(ctx, conn, service)
	}
	return nil
}

func ensureDatabase(ctx context.Context, cfg *pgx.ConnConfig) error {
	name := cfg.Database
	if name == "" || name == "postgres" {
		return nil
	}
	admin := cfg.Copy()
	admin.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, admin)
	if err != nil {
		// Without access to the maintenance database, assume the database exists; the
		// migration's own connection reports a clear error if it does not.
		return nil
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return mapError(err)
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	if err != nil && !uniqueViolation(err, "") && sqlState(err) != "42P04" { // 42P04: duplicate_database (a racing creator)
		return fmt.Errorf("store: create database %s: %w", name, err)
	}
	return nil
}
