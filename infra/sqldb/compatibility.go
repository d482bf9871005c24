package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
)

// Schema compatibility (docs/deployment.md, "An older binary on a newer schema"). A binary does
// not know what migrations newer than its own changed, so it refused any newer schema, and an
// old process restarted during a rolling upgrade stayed down even when the upgrade only added an
// index. Now the database records the oldest binary that may run on it (schema_compatibility,
// migration 27): the last migration applied that binaries older than it must not run beside
// (breakingMigrations). A binary refuses a newer schema only when its own migrations end below
// that; the record is written by each binary that migrates, which knows its own migrations, in the
// transaction of each migration it applies (recordingStore): whatever stops the migrating process
// afterwards, the record is never behind the schema. A binary checks the record again after
// applying its migrations: a newer release may have migrated while it waited for their lock.

// breakingMigrations are the migrations that binaries older than them must not run beside: they
// change what older code writes or how it must read. Migration 12 dropped the head row older
// binaries append through; migration 16 is another: an older binary read
// personal values sealed in the log as null and wrote new ones unsealed, where no erasure reaches
// them; migration 29 made person_keys, which older binaries insert into, a view. A new migration goes here unless binaries from before it keep working correctly beside
// it (a new index; a table, or a column with a default, that older code need not write).
// Binaries from before migration 27 refuse every newer schema whatever this says.
var breakingMigrations = []int64{12, 16, 29}

// additiveMigrations are the migrations from 27 on that older binaries keep working beside. Every
// migration from 27 on is in one list or the other (TestEveryNewMigrationSaysWhetherItBreaks).
var additiveMigrations = []int64{27, 28}

// oldestBinaryFor is the oldest binary, by its last migration, that may run on a schema at
// version: the last breaking migration up to it.
func oldestBinaryFor(version int64) int64 {
	var oldest int64
	for _, v := range breakingMigrations {
		if v <= version {
			oldest = max(oldest, v)
		}
	}
	return oldest
}

// compatibilityRecorded is the migration that creates the record's table: the versions from it on
// are recorded with their migration.
const compatibilityRecorded = 27

// raiseCompatibility writes the oldest binary that may run on a schema at version, raising the
// record, never lowering it (a newer release's may be higher).
func raiseCompatibility(ctx context.Context, db database.DBTxConn, version int64) error {
	_, err := db.ExecContext(ctx, `INSERT INTO schema_compatibility (id, oldest_binary) VALUES (1, $1)
		ON CONFLICT (id) DO UPDATE SET oldest_binary = excluded.oldest_binary WHERE schema_compatibility.oldest_binary < excluded.oldest_binary`,
		oldestBinaryFor(version))
	if err != nil {
		return fmt.Errorf("sqldb: record the schema's compatibility: %w", err)
	}
	return nil
}

// recordingStore is goose's table of applied versions, which also raises the compatibility record
// when it records a version from compatibilityRecorded on, in the same transaction: a breaking
// migration commits with the record that keeps older binaries out. (goose records a migration
// that runs outside a transaction, a Go one on *sql.DB or one marked NO TRANSACTION, after it:
// a breaking migration must not be one.)
type recordingStore struct {
	database.Store
}

// TableExists tells whether the version table exists, as the wrapped store does (goose asks the
// store for it, and without it would read the table and take a failure for its absence).
func (s recordingStore) TableExists(ctx context.Context, db database.DBTxConn) (bool, error) {
	if t, ok := s.Store.(interface {
		TableExists(context.Context, database.DBTxConn) (bool, error)
	}); ok {
		return t.TableExists(ctx, db)
	}
	return false, errors.ErrUnsupported
}

// Insert records version as applied, and raises the compatibility record to match.
func (s recordingStore) Insert(ctx context.Context, db database.DBTxConn, req database.InsertRequest) error {
	if err := s.Store.Insert(ctx, db, req); err != nil {
		return err
	}
	if req.Version < compatibilityRecorded {
		return nil
	}
	return raiseCompatibility(ctx, db, req.Version)
}

// refuseNewerSchema fails when the database's schema is at a version above this binary's last
// migration and a migration past it is one this binary must not run beside (the record is
// missing: a schema from before migration 27 records nothing, and a newer one always does).
// goose itself would go ahead.
func (db *DB) refuseNewerSchema(ctx context.Context, provider *goose.Provider) error {
	current, known, err := provider.GetVersions(ctx)
	if err != nil {
		return fmt.Errorf("sqldb: schema version: %w", err)
	}
	if current <= known {
		return nil
	}
	var oldest int64
	err = db.Write.QueryRowContext(ctx, `SELECT oldest_binary FROM schema_compatibility WHERE id = 1`).Scan(&oldest)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("sqldb: the schema is at version %d, newer than this binary knows (its last migration is %d), "+
			"and records no compatibility with older binaries: run the release that migrated it or a newer one", current, known)
	case err == nil && oldest > known:
		return fmt.Errorf("sqldb: the schema is at version %d, newer than this binary knows (its last migration is %d), "+
			"and a newer release's migration %d changed what this binary would write: run that release or a newer one", current, known, oldest)
	case err != nil:
		return fmt.Errorf("sqldb: the schema is at version %d, newer than this binary knows (its last migration is %d), and its compatibility record cannot be read: %w", current, known, err)
	}
	return nil
}
