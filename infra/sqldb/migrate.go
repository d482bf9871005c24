package sqldb

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
	"github.com/pressly/goose/v3/lock"
)

// The schema is plain SQL that both PostgreSQL and SQLite accept (BIGINT, TEXT, INTEGER, unique
// and partial indexes), so there is one history of migrations for both storage modes. The
// exceptions are Go (goMigrations).
//
//go:embed migrations/*.sql
var migrations embed.FS

// goMigrations are the migrations written in Go, each in its own file, for what each database
// spells differently.
func goMigrations(dialect Dialect) []*goose.Migration {
	return []*goose.Migration{
		subscriptionHistoryMigration(dialect),  // 8
		lockFreeLogMigration(dialect),          // 12
		erasedLeadTitlesMigration(dialect),     // 22
		activationContactsMigration(dialect),   // 24
		vacuumMigration(),                      // 25
		personKeysInLogOrderMigration(dialect), // 29
	}
}

// Migrated is what Migrate did.
type Migrated struct {
	// Applied names the migrations it applied, in order, by file: "00004_webhooks.sql".
	Applied []string
	// Version is the schema version the database is at now: the number of its last migration.
	Version int64
}

// Migrate applies every pending migration. Several processes may start at once on one PostgreSQL
// database: a session lock lets one migrate while the others wait. On SQLite the migrations run
// with temporary storage on disk: a migration may change a whole table in one transaction
// (migration 8 fills a column of every event), and the statement journal of such a statement can
// be as large as the table.
func (db *DB) Migrate(ctx context.Context) (_ Migrated, err error) {
	provider, err := db.migrations()
	if err != nil {
		return Migrated{}, err
	}
	// Through the pool: its one connection is the one goose migrates on.
	restore, err := db.TempStoreOnDisk(ctx, db.Write)
	if err != nil {
		return Migrated{}, err
	}
	defer func() {
		if rerr := restore(); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	if err := db.refuseNewerSchema(ctx, provider); err != nil {
		return Migrated{}, err
	}
	if err := db.vacuumOnce(ctx, provider); err != nil {
		return Migrated{}, err
	}
	results, err := provider.Up(ctx)
	if err != nil {
		return Migrated{}, fmt.Errorf("sqldb: migrate: %w", err)
	}
	// A newer release may have migrated while this binary waited for the migrations' lock.
	if err := db.refuseNewerSchema(ctx, provider); err != nil {
		return Migrated{}, err
	}
	var done Migrated
	for _, r := range results {
		done.Applied = append(done.Applied, path.Base(r.Source.Path))
	}
	var known int64
	if done.Version, known, err = provider.GetVersions(ctx); err != nil {
		return Migrated{}, fmt.Errorf("sqldb: schema version: %w", err)
	}
	if done.Version <= known && done.Version >= compatibilityRecorded {
		// Each migration recorded itself (recordingStore); a database whose migration 27 was
		// applied by a binary that recorded after it may still lack the record.
		if err := raiseCompatibility(ctx, db.Write, done.Version); err != nil {
			return Migrated{}, err
		}
	}
	if len(done.Applied) > 0 {
		// New tables and indexes start without statistics, and PostgreSQL may run with autovacuum
		// off: nothing would ever analyze them. (The write path's plans do not depend on it:
		// infra/eventstore/plans_test.go.) On SQLite it also empties the samples of earlier
		// releases' analyses, which held emails (Analyze).
		if err := Analyze(ctx, db.Write, db.Dialect); err != nil {
			return Migrated{}, fmt.Errorf("sqldb: after migrating: %w", err)
		}
	}
	return done, nil
}

// RequireCurrentSchema fails unless the schema is exactly this binary's: for a command that
// works on the database beside a serving process, and so must not change its schema, and that
// rewrites whole read models (projections rebuild). A newer schema is refused even where the
// record lets this binary serve on it: a rebuild by older code would write its defaults over
// every value of the columns the newer release added and fills.
func (db *DB) RequireCurrentSchema(ctx context.Context) error {
	provider, err := db.migrations()
	if err != nil {
		return err
	}
	current, target, err := provider.GetVersions(ctx)
	if err != nil {
		return fmt.Errorf("sqldb: schema version: %w", err)
	}
	if current < target {
		return fmt.Errorf("%w: the schema is at version %d and this binary needs %d: run funnel migrate first", ErrSchemaNotCurrent, current, target)
	}
	if current > target {
		return fmt.Errorf("%w: the schema is at version %d, newer than this binary knows (its last migration is %d): "+
			"rebuild with the release that migrated it, whose read models it has", ErrSchemaNotCurrent, current, target)
	}
	return nil
}

// ErrSchemaNotCurrent is RequireCurrentSchema's refusal: the schema is older or newer than this
// binary's, which is the operator's to settle, not a failure of the database.
var ErrSchemaNotCurrent = errors.New("sqldb: not this binary's schema")

// RequireKnownSchema fails when a newer release migrated the database past this binary's last
// migration: for a command that reads the log but may run on a schema still to migrate (history).
func (db *DB) RequireKnownSchema(ctx context.Context) error {
	provider, err := db.migrations()
	if err != nil {
		return err
	}
	return db.refuseNewerSchema(ctx, provider)
}

// MigrationNames lists the migrations of this binary in the order they apply, named as Migrate
// names them ("00004_webhooks.sql").
func MigrationNames() ([]string, error) {
	entries, err := fs.ReadDir(migrations, "migrations")
	if err != nil {
		return nil, fmt.Errorf("sqldb: migrations: %w", err)
	}
	var names []string
	for _, m := range goMigrations(SQLite) {
		names = append(names, m.Source)
	}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names, nil
}

func (db *DB) migrations() (*goose.Provider, error) {
	dir, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, fmt.Errorf("sqldb: migrations: %w", err)
	}
	store, err := db.migrationsStore()
	if err != nil {
		return nil, err
	}
	opts := []goose.ProviderOption{goose.WithGoMigrations(goMigrations(db.Dialect)...), goose.WithStore(store)}
	if db.Dialect == Postgres {
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return nil, fmt.Errorf("sqldb: migration lock: %w", err)
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	provider, err := goose.NewProvider(goose.DialectCustom, db.Write, dir, opts...)
	if err != nil {
		return nil, fmt.Errorf("sqldb: migrations: %w", err)
	}
	return provider, nil
}

// migrationsStore is goose's table of applied versions for db's dialect, recording the schema's
// compatibility with each version (recordingStore).
func (db *DB) migrationsStore() (recordingStore, error) {
	dialect := database.DialectSQLite3
	if db.Dialect == Postgres {
		dialect = database.DialectPostgres
	}
	store, err := database.NewStore(dialect, goose.DefaultTablename)
	if err != nil {
		return recordingStore{}, fmt.Errorf("sqldb: migrations: %w", err)
	}
	return recordingStore{store}, nil
}
