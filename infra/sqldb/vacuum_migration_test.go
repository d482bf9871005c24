package sqldb_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A SQLite file written by a release before secure_delete kept the bytes of deleted rows in the
// free space of its pages. The upgrade's migration 25 rewrites the file once: afterwards neither
// the file nor its WAL holds them, and every live row is still there. On PostgreSQL the
// migration applies and does nothing.
func TestVacuumMigrationLeavesNoStaleBytesInASQLiteFile(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		dbURL := sqldbtest.URL(t, dialect)
		db, err := sqldb.Open(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if err := db.MigrateDownTo(ctx, 24); err != nil {
			t.Fatal(err)
		}
		path := db.Path()
		db.Close()
		const stale = "stale-person@example.com"
		if dialect == sqldb.SQLite {
			writeAndDeleteWithoutSecureDelete(t, path, stale)
			if files := sqliteFiles(t, path); !bytes.Contains(files, []byte(stale)) {
				t.Fatal("the file holds no stale bytes to begin with: the test proves nothing")
			}
		}

		db, err = sqldb.Open(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		migrated, err := db.Migrate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(migrated.Applied, "00025_vacuum.go") {
			t.Fatalf("applied %v, want 00025_vacuum.go", migrated.Applied)
		}
		if dialect != sqldb.SQLite {
			return
		}
		var kept int
		if err := db.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM person_keys WHERE sealed_key LIKE 'kept-%'`).Scan(&kept); err != nil || kept != 100 {
			t.Fatalf("live rows after the vacuum: %d %v, want 100", kept, err)
		}
		if files := sqliteFiles(t, path); bytes.Contains(files, []byte(stale)) {
			t.Fatalf("after migration 25 the SQLite file or its WAL still holds %s", stale)
		}
	})
}

// writeAndDeleteWithoutSecureDelete writes rows into person_keys as a release before
// secure_delete did, deletes those holding value (and every other), and checkpoints: the deleted
// cells stay in the free space of pages still in use.
func writeAndDeleteWithoutSecureDelete(t *testing.T, path, value string) {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=secure_delete(off)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for i := range 200 {
		key := fmt.Sprintf("kept-%03d", i)
		if i%2 == 1 {
			key = fmt.Sprintf("%s-%03d", value, i)
		}
		if _, err := raw.Exec(`INSERT INTO person_keys (contact_id, account_id, sealed_key) VALUES ($1, 'acc_1', $2)`, fmt.Sprintf("ct_%03d", i), key); err != nil {
			t.Fatal(err)
		}
		// The contact's first event, which its key belongs to (migration 29 keys it by its position).
		if _, err := raw.Exec(`INSERT INTO events (position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, data, metadata)
			VALUES ($1, $2, $3, 1, 'ContactCreated', 1, 0, 'acc_1', '{}', '{}')`, 1000+i, fmt.Sprintf("evt_%03d", i), fmt.Sprintf("ct_%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, stmt := range []string{`DELETE FROM person_keys WHERE sealed_key NOT LIKE 'kept-%'`, `PRAGMA wal_checkpoint(TRUNCATE)`} {
		if _, err := raw.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
}

// sqliteFiles is the database file and its WAL, as they are on disk.
func sqliteFiles(t *testing.T, path string) []byte {
	t.Helper()
	var all []byte
	for _, f := range []string{path, path + "-wal"} {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}
