package sqldb

import (
	"context"
	"fmt"

	"github.com/pressly/goose/v3"
)

// vacuumVersion is the migration that records that a SQLite file was vacuumed once.
const vacuumVersion = 25

// vacuumMigration is migration 25: it records that the database's file was rewritten whole once,
// by vacuumOnce, which Migrate runs before it. Releases before secure_delete was turned on
// (9a568d2) left the bytes of deleted and moved cells in the free space of pages, emails among
// them, which nothing since overwrites; erasing those people later leaves them in the file.
// VACUUM copies every live row into new pages, so the file holds nothing else
// (decisions.md, "Erasure"). goose runs a migration written in Go without a transaction on the
// write pool while it holds a connection of that pool, and on SQLite the pool has one: hence the
// VACUUM runs before goose, and this migration only records it. A stop between the two vacuums
// again at the next start. It does nothing on PostgreSQL, whose dump holds only live rows.
func vacuumMigration() *goose.Migration {
	m := goose.NewGoMigration(vacuumVersion, &goose.GoFunc{RunTx: run(nil)}, &goose.GoFunc{RunTx: run(nil)})
	m.Source = "00025_vacuum.go" // how `migrate` names it
	return m
}

// vacuumOnce rewrites a SQLite file whole (VACUUM) while migration 25 is pending on it, and
// empties the WAL that the rewrite went through. A file still to be created holds nothing stale.
// It takes time proportional to the file's size and free disk space about twice the file's:
// the copy in SQLite's temporary directory (Migrate keeps temporary storage on disk), then the
// WAL it is written through (docs/deployment.md). Samples of earlier releases' ANALYZE are deleted first (Analyze
// says why), so that the rewritten file never holds them.
func (db *DB) vacuumOnce(ctx context.Context, provider *goose.Provider) error {
	if db.Dialect != SQLite {
		return nil
	}
	current, err := provider.GetDBVersion(ctx)
	if err != nil {
		return fmt.Errorf("sqldb: schema version: %w", err)
	}
	if current == 0 || current >= vacuumVersion {
		return nil
	}
	var samples int
	if err := db.Write.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table' AND name = 'sqlite_stat4'`).Scan(&samples); err != nil {
		return fmt.Errorf("sqldb: vacuum: %w", err)
	}
	if samples > 0 {
		if _, err := db.Write.ExecContext(ctx, `DELETE FROM sqlite_stat4`); err != nil {
			return fmt.Errorf("sqldb: vacuum: delete the statistics' samples: %w", err)
		}
	}
	if _, err := db.Write.ExecContext(ctx, `VACUUM`); err != nil {
		return fmt.Errorf("sqldb: vacuum: %w", err)
	}
	return db.ScrubErased(ctx)
}
