package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
)

// MigrateDownTo undoes the migrations after version, so that a test can apply a migration to a
// database that has lived without it.
func (db *DB) MigrateDownTo(ctx context.Context, version int64) error {
	provider, err := db.migrations()
	if err != nil {
		return err
	}
	if _, err := provider.DownTo(ctx, version); err != nil {
		return fmt.Errorf("sqldb: migrate down to %d: %w", version, err)
	}
	return nil
}

// KeptStatements counts the prepared statements kept for pool (Query, QueryRow).
func KeptStatements(pool *sql.DB) int {
	statements.mu.Lock()
	defer statements.mu.Unlock()
	n := 0
	for key := range statements.byID {
		if key.pool == pool {
			n++
		}
	}
	return n
}

// KeepPrepared keeps stmt, prepared on pool for query, as Query does once its prepare returns.
func KeepPrepared(pool *sql.DB, query string, stmt *sql.Stmt) *sql.Stmt {
	return keep(statementKey{pool, query}, stmt)
}

// ApplyMigrationsOnly applies the pending migrations as goose does, without what Migrate does
// around them (its checks, its record, ANALYZE): a process stopped the moment they committed.
func (db *DB) ApplyMigrationsOnly(ctx context.Context) error {
	provider, err := db.migrations()
	if err != nil {
		return err
	}
	if _, err := provider.Up(ctx); err != nil {
		return fmt.Errorf("sqldb: migrate: %w", err)
	}
	return nil
}

// PretendBreaking counts versions among the breaking migrations (and none as additive) until the
// returned func is called: a test stands for a release whose last migration breaks older binaries.
func PretendBreaking(versions ...int64) (restore func()) {
	breaking, additive := breakingMigrations, additiveMigrations
	breakingMigrations = append(slices.Clone(breakingMigrations), versions...)
	additiveMigrations = nil
	return func() { breakingMigrations, additiveMigrations = breaking, additive }
}

// VersionTableExists asks the migrations' store whether goose's version table exists, as goose
// does before it migrates.
func (db *DB) VersionTableExists(ctx context.Context) (bool, error) {
	store, err := db.migrationsStore()
	if err != nil {
		return false, err
	}
	return store.TableExists(ctx, db.Write)
}
