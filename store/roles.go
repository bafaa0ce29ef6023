package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Two roles (least privilege). The owner role owns the schema and runs the migrations. The
// service connects as its own role, which may read and write the service's tables but may
// only insert into and read the ledger: it cannot update, delete or truncate events, is
// not a superuser (so it cannot set session_replication_role to skip the append-only
// trigger) and owns nothing (so it cannot disable triggers or alter tables). `accountable
// migrate` creates the service role when it is missing and grants it its privileges after
// every migration, so a table a migration adds is covered at once.

// ServiceRoleName is the service role `make run`, `make test` and compose use.
const ServiceRoleName = "accountable_service"

// appendOnlyTables may only be read and inserted into by the service role.
var appendOnlyTables = []string{"ledger_events", "ledger_stream_epochs"}

// readOnlyTables may only be read by the service role.
var readOnlyTables = []string{"schema_version", "service_secrets"}

// errPrivilegedServiceRole refuses a service role that could rewrite the ledger.
var errPrivilegedServiceRole = errors.New("store: the service role is a superuser or may bypass row security; " +
	"give the service a plain role in DATABASE_URL (see docs/architecture.md, Database roles)")

// ensureServiceRole creates the service role named by service (a connection config) when
// it does not exist and grants it the service's privileges on the schema conn migrated.
func ensureServiceRole(ctx context.Context, conn *pgx.Conn, service *pgx.ConnConfig) error {
	role := service.User
	var exists, super bool
	err := conn.QueryRow(ctx, `SELECT true, rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = $1`, role).Scan(&exists, &super)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		// CREATE ROLE takes no parameters: format() quotes the name and the password.
		var stmt string
		if err := conn.QueryRow(ctx, `SELECT format('CREATE ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS', $1::text)
			|| CASE WHEN $2::text = '' THEN '' ELSE format(' PASSWORD %L', $2::text) END`, role, service.Password).Scan(&stmt); err != nil {
			return mapError(err)
		}
		if _, err := conn.Exec(ctx, stmt); err != nil && sqlState(err) != "42710" { // 42710: created meanwhile
			return fmt.Errorf("store: create the service role %s: %w", role, err)
		}
	case err != nil:
		return mapError(err)
	case super:
		return errPrivilegedServiceRole
	}
	id := pgx.Identifier{role}.Sanitize()
	stmts := []string{
		"GRANT USAGE ON SCHEMA public TO " + id,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO " + id,
		"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO " + id,
	}
	for _, t := range appendOnlyTables {
		stmts = append(stmts, "REVOKE UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON "+pgx.Identifier{t}.Sanitize()+" FROM "+id)
	}
	for _, t := range readOnlyTables {
		stmts = append(stmts, "REVOKE INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER ON "+pgx.Identifier{t}.Sanitize()+" FROM "+id)
	}
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("store: grant the service role %s its privileges: %w", role, err)
		}
	}
	return nil
}

// RoleCheck describes the role the service connects as.
type RoleCheck struct {
	Role string
	// Privileged: a superuser, or a role that may bypass row security, own the ledger or
	// change its events; the ledger's append-only rule then rests on the trigger alone.
	Privileged bool
}

// CheckRole reports whether the service's own role is as unprivileged as it should be
// (the service logs a warning when it is not).
func (db *DB) CheckRole(ctx context.Context) (RoleCheck, error) {
	var c RoleCheck
	err := db.pool.QueryRow(ctx, `SELECT current_user::text,
			r.rolsuper OR r.rolbypassrls OR pg_has_role(current_user, c.relowner, 'USAGE')
			OR has_table_privilege('ledger_events', 'UPDATE') OR has_table_privilege('ledger_events', 'DELETE')
			OR has_table_privilege('ledger_events', 'TRUNCATE')
		FROM pg_roles r, pg_class c WHERE r.rolname = current_user AND c.oid = 'ledger_events'::regclass`).Scan(&c.Role, &c.Privileged)
	return c, mapError(err)
}
