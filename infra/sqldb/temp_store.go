package sqldb

import (
	"context"
	"fmt"
	"time"
)

// TempStoreOnDisk puts SQLite's temporary storage back on disk for work whose temporary tables or
// statement journals grow with the data, and returns restore, which puts it back in memory, where
// the write connection keeps it (openSQLite: the appender's statement journals). on is db.Write
// itself, whose one connection then runs the work (Migrate, through goose), or a *sql.Conn taken
// from it (Rebuild); never a transaction, inside which SQLite refuses the change. Changing the
// setting deletes the connection's temporary tables: switch before creating any, restore only
// after dropping them. restore runs on a context of its own, so that it works after ctx's
// cancel; call it whether the work failed or not. A connection that is opened again meanwhile
// (after a driver error) gets memory from the DSN. On PostgreSQL it does nothing.
func (db *DB) TempStoreOnDisk(ctx context.Context, on Execer) (restore func() error, err error) {
	if db.Dialect != SQLite {
		return func() error { return nil }, nil
	}
	if _, err := on.ExecContext(ctx, `PRAGMA temp_store = FILE`); err != nil {
		return nil, fmt.Errorf("sqldb: temporary storage on disk: %w", err)
	}
	return func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := on.ExecContext(ctx, `PRAGMA temp_store = MEMORY`); err != nil {
			return fmt.Errorf("sqldb: temporary storage back in memory: %w", err)
		}
		return nil
	}, nil
}
