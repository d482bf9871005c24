package eventstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// The first event of an append stamped with an idempotency id carries it in its own column,
// under a unique index (migration 00010): the database refuses a second append of one id, so
// two attempts of one request never both perform it, whatever their timing or process.

// idempotencyIndex is the unique index of events.idempotency_id.
var idempotencyIndex = uniqueKey{"events_by_idempotency_id", "events.idempotency_id"}

// isIdempotencyIDTaken tells whether an append failed on that unique index.
func isIdempotencyIDTaken(err error) bool { return idempotencyIndex.failedOn(err) }

// HasIdempotencyID tells whether the log holds the append stamped with an idempotency id: whether
// the request of that claim was performed.
func (s *Store) HasIdempotencyID(ctx context.Context, id string) (bool, error) {
	var one int
	err := s.db.Read.QueryRowContext(ctx, `SELECT 1 FROM events WHERE idempotency_id = $1`, id).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("eventstore: look up idempotency id: %w", err)
	}
	return true, nil
}
