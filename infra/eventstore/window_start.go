package eventstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// windowSlack is how much earlier than an event appended before it an event's occurred_at may be.
// occurred_at is the appending process's clock when it prepared the append, so the log is in
// time order up to the skew between the processes' clocks and the time an append takes: far
// below an hour.
const windowSlack = time.Hour

// windowStartProbe reads the first event at or after a position: one probe of the primary key
// (positions may have gaps).
const windowStartProbe = `SELECT position, occurred_at FROM events WHERE position >= $1 ORDER BY position LIMIT 1`

// windowStart returns a position after which every event that occurred at or after since lies:
// the last one before the first event that occurred at or after since - windowSlack. The feed and
// replays start their scans there instead of at the account's first event: an account with
// millions of events older than the feed's 30 days would otherwise read them all, filtered out
// one by one, before the first one kept (the index is by account, type and position; the time is
// not in it). It is a binary search of the log's positions, one probe of the primary key a step
// (about 25 for 30 million events), and needs no index on the time, which every append would pay
// for. The last answer is kept: a window that starts less than windowSlack after it reuses it,
// reading at most an hour of the log more, so the feed's sliding window searches once an hour.
func (s *Store) windowStart(ctx context.Context, since time.Time) (int64, error) {
	bound := since.Add(-windowSlack).UnixMilli()
	s.window.Lock()
	cached := s.window.cached
	s.window.Unlock()
	if cached.valid && cached.bound <= bound && bound-cached.bound < windowSlack.Milliseconds() {
		return cached.start, nil
	}
	var head int64
	if err := s.db.Read.QueryRowContext(ctx, `SELECT COALESCE(MAX(position), 0) FROM events`).Scan(&head); err != nil {
		return 0, fmt.Errorf("eventstore: window start: %w", err)
	}
	// Every event before lo occurred before bound; the first at or after hi did not, or there is
	// none.
	lo, hi := int64(1), head+1
	for lo < hi {
		mid := lo + (hi-lo)/2
		var pos, occurred int64
		err := s.db.Read.QueryRowContext(ctx, windowStartProbe, mid).Scan(&pos, &occurred)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			hi = mid
		case err != nil:
			return 0, fmt.Errorf("eventstore: window start: %w", err)
		case occurred < bound:
			lo = pos + 1
		default:
			hi = mid
		}
	}
	start := lo - 1
	s.window.Lock()
	s.window.cached = windowCache{valid: true, bound: bound, start: start}
	s.window.Unlock()
	return start, nil
}

// windowCache is the last answer of windowStart.
type windowCache struct {
	valid        bool
	bound, start int64
}
