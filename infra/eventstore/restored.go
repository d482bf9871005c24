package eventstore

import (
	"context"
	"fmt"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// settleRestored puts the events of a restored dump below every reader's horizon. A dump keeps
// each event's tx_id, the transaction id of the server it was written on; restored on another
// server, whose transaction ids may be far lower, those events would stay above pg_snapshot_xmin
// until its ids caught up, and readers would read the events appended after the restore first,
// past the restored ones. Every restored event is committed, so its tx_id may as well be 0, as
// migration 12 set for the events before it. Transaction ids grow with positions, so the last
// event tells whether there is anything to do; then one UPDATE, once, under sqldb.InlineLock held
// exclusively, so that no append runs beside it. tx_id is bookkeeping of the log, not a recorded
// fact: position, stream, version, type, time and data stay as they were.
func (s *Store) settleRestored(ctx context.Context) error {
	if s.db.Dialect != sqldb.Postgres {
		return nil
	}
	var restored bool
	if err := s.db.Read.QueryRowContext(ctx, `SELECT COALESCE((SELECT tx_id FROM events ORDER BY position DESC LIMIT 1) >= pg_snapshot_xmax(pg_current_snapshot()), false)`).Scan(&restored); err != nil {
		return fmt.Errorf("eventstore: look for restored events: %w", err)
	}
	if !restored {
		return nil
	}
	tx, err := s.db.Write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("eventstore: settle restored events: %w", err)
	}
	defer tx.Rollback()
	for _, stmt := range []string{
		`SELECT pg_advisory_xact_lock(` + fmt.Sprint(sqldb.InlineLock) + `)`,
		`SET LOCAL enable_seqscan = on`, // tx_id has no index: this runs once after a restore
		`UPDATE events SET tx_id = '0' WHERE tx_id >= pg_current_xact_id()`,
	} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("eventstore: settle restored events: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("eventstore: settle restored events: %w", err)
	}
	return nil
}
