package sqldb

import (
	"context"
	"fmt"
	"time"
)

// ScrubErased makes what an erasure deleted gone from the database's files, not only from its
// rows (decisions.md "Erasure": the SQLite file and its WAL as they are on disk). On SQLite the
// deleted content is zeroed in its pages (secure_delete, set on every connection), but the WAL
// still holds the pages as they were before: a checkpoint copies the WAL into the database and
// TRUNCATE empties the WAL file. Readers in the middle of a read keep old frames alive, so it
// tries again for a while; it reports an error if they never let go. On PostgreSQL there is
// nothing to do: a pg_dump holds only live rows (old row versions stay in the data files until
// VACUUM reclaims them, docs/operations.md).
func (db *DB) ScrubErased(ctx context.Context) error {
	if db.Dialect != SQLite {
		return nil
	}
	deadline := time.Now().Add(scrubWait)
	for {
		var busy, logFrames, checkpointed int
		if err := db.Write.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logFrames, &checkpointed); err != nil {
			return fmt.Errorf("sqldb: checkpoint the WAL: %w", err)
		}
		if busy == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sqldb: checkpoint the WAL: readers kept it busy for %s", scrubWait)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sqldb: checkpoint the WAL: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// scrubWait bounds how long ScrubErased waits for readers to let the WAL go.
const scrubWait = 5 * time.Second
