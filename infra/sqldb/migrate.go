package sqldb

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// The schema is plain SQL that both PostgreSQL and SQLite accept (BIGINT, TEXT, INTEGER, unique
// and partial indexes), so there is one history of migrations for both storage modes.
//
//go:embed migrations/*.sql
var migrations embed.FS

// Migrate applies every pending migration. Several processes may start at once on one PostgreSQL
// database: a session lock lets one migrate while the others wait.
func (db *DB) Migrate(ctx context.Context) error {
	dir, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return fmt.Errorf("sqldb: migrations: %w", err)
	}
	dialect := goose.DialectSQLite3
	var opts []goose.ProviderOption
	if db.Dialect == Postgres {
		dialect = goose.DialectPostgres
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return fmt.Errorf("sqldb: migration lock: %w", err)
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	provider, err := goose.NewProvider(dialect, db.Write, dir, opts...)
	if err != nil {
		return fmt.Errorf("sqldb: migrations: %w", err)
	}
	if _, err := provider.Up(ctx); err != nil {
		return fmt.Errorf("sqldb: migrate: %w", err)
	}
	return nil
}
