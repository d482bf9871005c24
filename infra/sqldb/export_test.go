package sqldb

import (
	"context"
	"fmt"
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
