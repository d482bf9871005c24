package eventstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// AccountEventsQuery asks for a window of one account's events of some types.
type AccountEventsQuery struct {
	AccountID string
	Types     []string // domain event types; none: nothing
	After     int64    // log position: only events after it
	// Since and Until bound the events' times: Since <= occurred_at < Until (Until zero: no end).
	Since, Until time.Time
	Limit        int
}

// ReadAccountEvents returns up to Limit events of an account, of the given types, after a log
// position and within a time window, oldest first: the event feed and webhook replays page
// through it. Like ReadLog it returns an event only once no transaction may still commit one
// before it (on PostgreSQL, below the horizon or up to what this process's reads of the log have
// passed), so reading on from the last one returned skips nothing while writes go on.
//
// Each type is read by its own range scan of the (account_id, type, position) index
// (accountTypeScan), at most Limit rows each, and the scans are merged: a page costs Limit rows per type, however many
// events of other types or accounts the log holds (an IN list would sort them all). With Since
// set, the scans start at the window (windowStart), not at the account's first event.
func (s *Store) ReadAccountEvents(ctx context.Context, q AccountEventsQuery) ([]domain.Recorded, error) {
	if len(q.Types) == 0 || q.Limit <= 0 {
		return nil, nil
	}
	until := int64(1<<63 - 1)
	if !q.Until.IsZero() {
		until = q.Until.UnixMilli()
	}
	after := q.After
	if !q.Since.IsZero() {
		start, err := s.windowStart(ctx, q.Since)
		if err != nil {
			return nil, err
		}
		after = max(after, start)
	}
	args := []any{q.AccountID, after, q.Since.UnixMilli(), until}
	horizon := ""
	if s.db.Dialect == sqldb.Postgres {
		// Below the horizon, or up to what this process has read of the log already: each event
		// returned has every position before it settled.
		args = append(args, s.settled.Load())
		horizon = belowHorizonOr(len(args))
	}
	limit := sqldb.TextLimit(q.Limit) // few texts whatever the page's size; the rows past q.Limit are dropped
	scans := make([]string, len(q.Types))
	for i, t := range q.Types {
		args = append(args, t)
		scans[i] = fmt.Sprintf(`SELECT * FROM (%s) t%d`, accountTypeScan(len(args), horizon, limit), i)
	}
	query := `SELECT position, event_id, stream_id, version, type, schema_version, occurred_at, data, metadata FROM (` +
		strings.Join(scans, " UNION ALL ") + fmt.Sprintf(`) merged ORDER BY position LIMIT %d`, limit)
	rows, err := s.db.Read.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("eventstore: read account events: %w", err)
	}
	// The feed and replays show events as webhooks delivered them: personal values opened (an
	// erased person's read as null).
	events, err := s.scanOpened(ctx, rows)
	return events[:min(len(events), q.Limit)], err
}

// accountTypeScan reads the events of one type ($typeArg) of an account ($1) after a position
// ($2) within a time window ($3, $4), in log order, up to limit: a range of
// events_by_account_type from (account, type, position) on. The type is bounded by a row
// comparison and ordered on, not given by equality: with type = $n, ORDER BY position alone is
// what the primary key offers too, and PostgreSQL, whose statistics say a frequent type is spread
// evenly over the log, walked the primary key from the position on, filtering, past every event
// of other types until the type's first one: a page near the start of a log whose type begins
// late read 100,000 rows (docs/performance.md, the event feed over 1M events).
func accountTypeScan(typeArg int, horizon string, limit int) string {
	return fmt.Sprintf(`%s WHERE account_id = $1 AND (type, position) > ($%d, $2) AND type <= $%d AND occurred_at >= $3 AND occurred_at < $4%s
			ORDER BY type, position LIMIT %d`, selectEvents, typeArg, typeArg, horizon, limit)
}

// belowHorizonOr is the condition of an event PostgreSQL's readers may return: its transaction
// is below the horizon, or its position is at most $settledArg (what this process read already).
func belowHorizonOr(settledArg int) string {
	return fmt.Sprintf(" AND (tx_id < %s OR position <= $%d)", sqldb.PGHorizon, settledArg)
}
