package sqldb_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
	"github.com/pressly/goose/v3/lock"
)

// A binary runs on a schema a newer release migrated when every migration past its own left the
// schema one it still runs on (the record a migrating binary writes, schema_compatibility), and
// refuses it, naming both versions, when one of them is a migration it must not run beside: an
// old process restarted during a rolling upgrade that only added an index comes back up, and
// one that would write what a newer release changed stays down.
func TestANewerSchemaIsRefusedOnlyPastABreakingMigration(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, dialect)
		var known, oldest int64
		if err := db.Read.QueryRow(`SELECT MAX(version_id) FROM goose_db_version`).Scan(&known); err != nil {
			t.Fatal(err)
		}
		if err := db.Read.QueryRow(`SELECT oldest_binary FROM schema_compatibility`).Scan(&oldest); err != nil {
			t.Fatalf("the compatibility record after migrating: %v", err)
		}
		if oldest != lastBreaking {
			t.Errorf("the oldest binary recorded is %d, want %d (the last breaking migration)", oldest, lastBreaking)
		}
		// A newer release applied an additive migration.
		if _, err := db.Write.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, true)`, known+1); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Migrate(ctx); err != nil {
			t.Fatalf("migrate on a schema an additive migration advanced: %v", err)
		}
		if err := db.RequireKnownSchema(ctx); err != nil {
			t.Fatalf("a schema an additive migration advanced: %v", err)
		}
		// But no read model is rebuilt by older code: it would write its defaults over the
		// columns the newer release fills.
		if err := db.RequireCurrentSchema(ctx); err == nil || !strings.Contains(err.Error(), "rebuild with the release that migrated it") {
			t.Errorf("a rebuild's check on a schema an additive migration advanced: %v, want a refusal", err)
		}
		if err := db.Read.QueryRow(`SELECT oldest_binary FROM schema_compatibility`).Scan(&oldest); err != nil || oldest != lastBreaking {
			t.Fatalf("the record after an older binary ran: %d, %v; want the newer release's, %d", oldest, err, lastBreaking)
		}
		// Then a breaking one.
		if _, err := db.Write.Exec(`UPDATE schema_compatibility SET oldest_binary = $1`, known+1); err != nil {
			t.Fatal(err)
		}
		for name, check := range map[string]func(context.Context) error{
			"migrate":             func(ctx context.Context) error { _, err := db.Migrate(ctx); return err },
			"require a known one": db.RequireKnownSchema,
		} {
			err := check(ctx)
			if err == nil || !strings.Contains(err.Error(), "newer than this binary knows") || !strings.Contains(err.Error(), "run that release or a newer one") {
				t.Errorf("%s on a schema a breaking migration advanced: %v, want a refusal", name, err)
			}
		}
	})
}

// A breaking migration commits with the record that keeps older binaries out, in its own
// transaction: whatever stops the migrating process once goose has committed it (a kill, an
// ANALYZE that fails), an older binary restarted meanwhile never finds the schema past it with a
// record that lets it run. Here the last migration, undone, is applied again by goose alone,
// without anything Migrate does after.
func TestABreakingMigrationCommitsWithItsRecord(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, dialect)
		last := lastMigration(t, db)
		defer sqldb.PretendBreaking(last)()
		if err := db.MigrateDownTo(ctx, last-1); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Write.Exec(`UPDATE schema_compatibility SET oldest_binary = 16`); err != nil {
			t.Fatal(err)
		}
		if err := db.ApplyMigrationsOnly(ctx); err != nil {
			t.Fatal(err)
		}
		var oldest int64
		if err := db.Read.QueryRow(`SELECT oldest_binary FROM schema_compatibility`).Scan(&oldest); err != nil {
			t.Fatal(err)
		}
		if oldest != last {
			t.Errorf("the record once breaking migration %d committed: %d, want %d", last, oldest, last)
		}
	})
}

// The same through Migrate, as an operator meets it: the migrations commit, then the ANALYZE
// after them fails (an expression index whose function raises, on PostgreSQL). Migrate reports
// the failure, and the record is already past the breaking migration.
func TestAMigrateFailingAfterItsMigrationsLeavesTheRecordWithThem(t *testing.T) {
	ctx := context.Background()
	db := sqldbtest.Open(t, sqldb.Postgres)
	last := lastMigration(t, db)
	defer sqldb.PretendBreaking(last)()
	if err := db.MigrateDownTo(ctx, last-1); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE schema_compatibility SET oldest_binary = 16`,
		`CREATE TABLE boom_switch (x int)`,
		`CREATE FUNCTION boom(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN IF EXISTS (SELECT 1 FROM boom_switch) THEN RAISE EXCEPTION 'boom'; END IF; RETURN x; END $$`,
		`CREATE TABLE boom_t (x int)`,
		`INSERT INTO boom_t VALUES (1)`,
		`CREATE INDEX boom_idx ON boom_t ((boom(x)))`,
		`INSERT INTO boom_switch VALUES (1)`,
	} {
		if _, err := db.Write.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := db.Migrate(ctx); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("migrate with an ANALYZE that fails: %v, want its error", err)
	}
	var version, oldest int64
	if err := db.Read.QueryRow(`SELECT MAX(version_id) FROM goose_db_version`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if err := db.Read.QueryRow(`SELECT oldest_binary FROM schema_compatibility`).Scan(&oldest); err != nil {
		t.Fatal(err)
	}
	if version != last || oldest != last {
		t.Errorf("after the failure: schema at %d, record %d; want both at %d", version, oldest, last)
	}
}

// A binary that starts while a newer release migrates checks the schema at its own version, then
// waits for the migrations' lock (it has a migration to apply); the newer release meanwhile
// applies it and a breaking migration after it, with its record. Once the lock is its own, the
// binary finds the schema past it and refuses, rather than run on what it checked before.
func TestABinaryThatWaitedForANewerReleasesMigrationsIsRefused(t *testing.T) {
	ctx := context.Background()
	db := sqldbtest.Open(t, sqldb.Postgres)
	known := lastMigration(t, db)
	if err := db.MigrateDownTo(ctx, known-1); err != nil {
		t.Fatal(err)
	}
	newer, err := db.Write.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer newer.Close()
	if _, err := newer.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, lock.DefaultLockID); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := db.Migrate(ctx); done <- err }()
	// Migrate has checked the schema once it asks for goose's lock (goose asks again every 5 s).
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting bool
		err := db.Read.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND query = 'SELECT pg_try_advisory_lock($1)')`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Migrate never asked for the migrations' lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`CREATE TABLE IF NOT EXISTS schema_compatibility (id INTEGER PRIMARY KEY CHECK (id = 1), oldest_binary BIGINT NOT NULL)`, nil},
		{`INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, true), ($2, true)`, []any{known, known + 1}},
		{`INSERT INTO schema_compatibility (id, oldest_binary) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET oldest_binary = excluded.oldest_binary`, []any{known + 1}},
		{`SELECT pg_advisory_unlock($1)`, []any{lock.DefaultLockID}},
	} {
		if _, err := newer.ExecContext(ctx, q.sql, q.args...); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "run that release or a newer one") {
		t.Errorf("Migrate on a schema a newer release advanced past a breaking migration while it waited: %v, want a refusal", err)
	}
}

// lastBreaking is the last of the breaking migrations (sqldb's breakingMigrations).
const lastBreaking = 29

// lastMigration is the version the database is at.
func lastMigration(t *testing.T, db *sqldb.DB) int64 {
	t.Helper()
	var v int64
	if err := db.Read.QueryRow(`SELECT MAX(version_id) FROM goose_db_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// goose asks its store whether the version table exists; the store that records the
// compatibility answers as goose's own does (PostgreSQL's asks the catalog), rather than leave
// goose to read the table and take any failure for its absence.
func TestTheMigrationsStoreTellsWhetherItsTableExists(t *testing.T) {
	ctx := context.Background()
	db := sqldbtest.Open(t, sqldb.Postgres)
	exists, err := db.VersionTableExists(ctx)
	if err != nil || !exists {
		t.Fatalf("the version table of a migrated database: exists %v, %v", exists, err)
	}
	if _, err := db.Write.Exec(`ALTER TABLE goose_db_version RENAME TO goose_db_version_gone`); err != nil {
		t.Fatal(err)
	}
	if exists, err := db.VersionTableExists(ctx); err != nil || exists {
		t.Fatalf("the version table once gone: exists %v, %v", exists, err)
	}
}
