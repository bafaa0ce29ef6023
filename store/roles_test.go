package store_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/accountablework/accountable/store"
	"github.com/accountablework/accountable/store/storetest"
)

// wantDenied fails unless sql, run as the connection's role, is refused for lack of
// privilege (SQLSTATE 42501) and changes nothing.
func wantDenied(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a read-only transaction
	_, err = tx.Exec(ctx, sql)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Errorf("%s: got %v, want insufficient_privilege (42501)", sql, err)
	}
}

// The service connects as a role that may only insert into and read the ledger: it may
// not update, delete or truncate events, skip or disable the append-only trigger, or
// rewrite the stream's epochs and the migrations' record.
func TestServiceRoleMayOnlyInsertAndReadTheLedger(t *testing.T) {
	ctx := context.Background()
	db := storetest.Open(t)
	storetest.NewTenant(t, db) // the service role appends events
	conn, err := pgx.Connect(ctx, storetest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var role string
	var super, owner bool
	if err := conn.QueryRow(ctx, `SELECT current_user::text, r.rolsuper, pg_has_role(current_user, c.relowner, 'USAGE')
		FROM pg_roles r, pg_class c WHERE r.rolname = current_user AND c.oid = 'ledger_events'::regclass`).Scan(&role, &super, &owner); err != nil {
		t.Fatal(err)
	}
	if super || owner {
		t.Fatalf("the service connects as %s: superuser %v, owner of the ledger %v (make test configures a service role of its own)", role, super, owner)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM ledger_events`).Scan(&n); err != nil || n == 0 {
		t.Fatalf("the service role reads %d events: %v", n, err)
	}
	for _, sql := range []string{
		`UPDATE ledger_events SET event_type = 'forged'`,
		`DELETE FROM ledger_events`,
		`TRUNCATE ledger_events`,
		`ALTER TABLE ledger_events DISABLE TRIGGER ledger_events_append_only`,
		`SET session_replication_role = replica`,
		`UPDATE ledger_stream_epochs SET position_offset = 0`,
		`DELETE FROM ledger_stream_epochs`,
		`DELETE FROM schema_version`,
		`CREATE TABLE ledger_shadow (id int)`,
	} {
		wantDenied(t, conn, sql)
	}
	if c, err := db.CheckRole(ctx); err != nil || c.Privileged {
		t.Errorf("CheckRole of the service role: %+v %v", c, err)
	}
	// The owner is reported as privileged (the service warns when it runs as one).
	owned := openURL(t, storetest.OwnerURL(t))
	if c, err := owned.CheckRole(ctx); err != nil || !c.Privileged {
		t.Errorf("CheckRole of the owner: %+v %v", c, err)
	}
}

// `accountable migrate` creates a missing service role with the URL's password and grants
// it exactly the service's privileges; a superuser named as the service role is refused.
func TestMigrateCreatesAndGrantsTheServiceRole(t *testing.T) {
	ctx := context.Background()
	ownerURL, serviceURL := storetest.NewDatabase(t)
	admin, err := pgx.Connect(ctx, ownerURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	role := "accountable_svc_test_" + uuid.NewString()[:8]
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), ownerURL)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		c.Exec(context.Background(), `DROP OWNED BY `+pgx.Identifier{role}.Sanitize())       //nolint:errcheck // clean-up of a role the test may not have made
		c.Exec(context.Background(), `DROP ROLE IF EXISTS `+pgx.Identifier{role}.Sanitize()) //nolint:errcheck // clean-up of a role the test may not have made
	})
	cfg, err := pgx.ParseConfig(serviceURL)
	if err != nil {
		t.Fatal(err)
	}
	svc := "postgres://" + role + ":s3cret-'quote@" + cfg.Host + ":" + strconv.Itoa(int(cfg.Port)) + "/" + cfg.Database + "?sslmode=disable"
	if err := store.Migrate(ctx, store.MigrateConfig{OwnerURL: ownerURL, ServiceURL: svc}); err != nil {
		t.Fatal(err)
	}
	var login, super, hasPassword bool
	if err := admin.QueryRow(ctx, `SELECT rolcanlogin, rolsuper, rolpassword IS NOT NULL FROM pg_authid WHERE rolname = $1`, role).
		Scan(&login, &super, &hasPassword); err != nil {
		t.Fatal(err)
	}
	if !login || super || !hasPassword {
		t.Fatalf("role %s: login %v, superuser %v, password %v", role, login, super, hasPassword)
	}
	var canInsert, canSelect, canUpdate, canDelete, canUpdateTasks bool
	if err := admin.QueryRow(ctx, `SELECT has_table_privilege($1, 'ledger_events', 'INSERT'), has_table_privilege($1, 'ledger_events', 'SELECT'),
		has_table_privilege($1, 'ledger_events', 'UPDATE'), has_table_privilege($1, 'ledger_events', 'DELETE'),
		has_table_privilege($1, 'tasks', 'UPDATE')`, role).Scan(&canInsert, &canSelect, &canUpdate, &canDelete, &canUpdateTasks); err != nil {
		t.Fatal(err)
	}
	if !canInsert || !canSelect || canUpdate || canDelete || !canUpdateTasks {
		t.Fatalf("privileges of %s: ledger insert %v select %v update %v delete %v; tasks update %v",
			role, canInsert, canSelect, canUpdate, canDelete, canUpdateTasks)
	}
	// Migrating again changes nothing and succeeds.
	if err := store.Migrate(ctx, store.MigrateConfig{OwnerURL: ownerURL, ServiceURL: svc}); err != nil {
		t.Fatal(err)
	}
	// A superuser as the service role is refused.
	owner, _ := pgx.ParseConfig(ownerURL)
	if _, err := admin.Exec(ctx, `ALTER ROLE `+pgx.Identifier{role}.Sanitize()+` SUPERUSER`); err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx, store.MigrateConfig{OwnerURL: ownerURL, ServiceURL: svc}); err == nil {
		t.Fatalf("migrate accepted the superuser %s as the service role (owner %s)", role, owner.User)
	}
}
