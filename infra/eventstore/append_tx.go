package eventstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// appendTx is one group-commit transaction, in the two steps the appender needs: lock the log
// head and read the current versions of the streams, then write the rows and move the head.
// PostgreSQL sends each step as one pipelined round trip; SQLite runs plain statements.
type appendTx interface {
	// lock takes the head row lock and returns the head and the version of every stream
	// (0 for a new one), read after the lock was granted.
	lock(ctx context.Context, streamIDs []string) (head int64, versions map[string]int64, err error)
	// write inserts the rows, moves the head to newHead and commits.
	write(ctx context.Context, rows []*row, newHead int64) error
}

// inTx runs fn in an append transaction; it rolls back unless fn's write committed.
func (s *Store) inTx(ctx context.Context, fn func(appendTx) error) error {
	if s.db.Dialect == sqldb.Postgres {
		conn, err := s.db.Write.Conn(ctx)
		if err != nil {
			return fmt.Errorf("eventstore: connection: %w", err)
		}
		defer conn.Close()
		return conn.Raw(func(driverConn any) error {
			tx := &pgxAppendTx{conn: driverConn.(*stdlib.Conn).Conn()}
			defer tx.cleanUp()
			return fn(tx)
		})
	}
	tx, release, err := s.db.BeginAppendTx(ctx)
	if err != nil {
		return fmt.Errorf("eventstore: begin append: %w", err)
	}
	defer release()
	defer tx.Rollback()
	return fn(&sqlAppendTx{tx: tx})
}

// The versions of the streams an append writes are read under the head lock, where a slow plan
// would stall every append. Each stream's version is one backward step on the (stream_id, version)
// index, so the cost does not grow with the streams' length and no statistics can turn it into a
// scan of the log or of a long stream (a GROUP BY over "stream_id IN (...)" read every version of
// each stream, and without statistics PostgreSQL planned it as a sequential scan). A test checks
// both plans.
const (
	pgStreamVersions     = `SELECT id, COALESCE((SELECT version FROM events WHERE stream_id = id ORDER BY version DESC LIMIT 1), 0) FROM unnest($1::text[]) AS id`
	sqliteStreamVersions = `SELECT column1, COALESCE((SELECT version FROM events WHERE stream_id = column1 ORDER BY version DESC LIMIT 1), 0) FROM (VALUES %s)`
)

// sqliteVersionsOf is sqliteStreamVersions for n streams.
func sqliteVersionsOf(n int) string {
	return fmt.Sprintf(sqliteStreamVersions, strings.TrimSuffix(strings.Repeat("(?), ", n), ", "))
}

// pgxAppendTx pipelines each step: BEGIN, lock and versions in one round trip; insert, head and
// COMMIT in the next. The versions query runs after the lock was granted (its own statement, so
// its own snapshot under READ COMMITTED), so no append committed before it is missed.
type pgxAppendTx struct {
	conn *pgx.Conn
}

func (t *pgxAppendTx) lock(ctx context.Context, streamIDs []string) (int64, map[string]int64, error) {
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SELECT position FROM event_log_head WHERE id = 1 FOR UPDATE`)
	b.Queue(pgStreamVersions, streamIDs)
	res := t.conn.SendBatch(ctx, b)
	defer res.Close()
	if _, err := res.Exec(); err != nil {
		return 0, nil, fmt.Errorf("eventstore: begin append: %w", err)
	}
	var head int64
	if err := res.QueryRow().Scan(&head); err != nil {
		return 0, nil, fmt.Errorf("eventstore: lock head: %w", err)
	}
	rows, err := res.Query()
	if err != nil {
		return 0, nil, fmt.Errorf("eventstore: read stream versions: %w", err)
	}
	versions := make(map[string]int64, len(streamIDs))
	for _, id := range streamIDs {
		versions[id] = 0
	}
	for rows.Next() {
		var id string
		var v int64
		if err := rows.Scan(&id, &v); err != nil {
			rows.Close()
			return 0, nil, fmt.Errorf("eventstore: scan stream version: %w", err)
		}
		versions[id] = v
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, nil, fmt.Errorf("eventstore: read stream versions: %w", err)
	}
	return head, versions, res.Close()
}

func (t *pgxAppendTx) write(ctx context.Context, rows []*row, newHead int64) error {
	b := &pgx.Batch{}
	if len(rows) > 0 {
		cols := make([][]any, insertColumns)
		for _, r := range rows {
			for i, v := range r.values() {
				cols[i] = append(cols[i], v)
			}
		}
		b.Queue(`INSERT INTO events (position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, contact_id, subscription_id, data, metadata, idempotency_id)
			SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::int[], $7::bigint[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[])`,
			typed[int64](cols[0]), typed[string](cols[1]), typed[string](cols[2]), typed[int64](cols[3]), typed[string](cols[4]), typed[int](cols[5]),
			typed[int64](cols[6]), typed[string](cols[7]), nullable(cols[8]), nullable(cols[9]), typed[string](cols[10]), typed[string](cols[11]), nullable(cols[12]))
		b.Queue(`UPDATE event_log_head SET position = $1 WHERE id = 1`, newHead)
	}
	b.Queue(`COMMIT`)
	if err := t.conn.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("eventstore: write events: %w", err)
	}
	return nil
}

// cleanUp rolls back a transaction left open by an error, so the connection goes back clean.
func (t *pgxAppendTx) cleanUp() {
	if t.conn.PgConn().TxStatus() != 'I' {
		_, _ = t.conn.Exec(context.Background(), `ROLLBACK`)
	}
}

func typed[T any](vals []any) []T {
	out := make([]T, len(vals))
	for i, v := range vals {
		out[i] = v.(T)
	}
	return out
}

func nullable(vals []any) []*string {
	out := make([]*string, len(vals))
	for i, v := range vals {
		if ns := v.(sql.NullString); ns.Valid {
			s := ns.String
			out[i] = &s
		}
	}
	return out
}

// sqlAppendTx is the append transaction over database/sql (SQLite: an immediate transaction on
// the single write connection).
type sqlAppendTx struct {
	tx *sql.Tx
}

func (t *sqlAppendTx) lock(ctx context.Context, streamIDs []string) (int64, map[string]int64, error) {
	var head int64
	if err := t.tx.QueryRowContext(ctx, `SELECT position FROM event_log_head WHERE id = 1`).Scan(&head); err != nil {
		return 0, nil, fmt.Errorf("eventstore: read head: %w", err)
	}
	versions := make(map[string]int64, len(streamIDs))
	for _, id := range streamIDs {
		versions[id] = 0
	}
	const chunk = 500
	for start := 0; start < len(streamIDs); start += chunk {
		part := streamIDs[start:min(start+chunk, len(streamIDs))]
		args := make([]any, len(part))
		for i, id := range part {
			args[i] = id
		}
		rows, err := t.tx.QueryContext(ctx, sqliteVersionsOf(len(part)), args...)
		if err != nil {
			return 0, nil, fmt.Errorf("eventstore: read stream versions: %w", err)
		}
		for rows.Next() {
			var id string
			var v int64
			if err := rows.Scan(&id, &v); err != nil {
				rows.Close()
				return 0, nil, fmt.Errorf("eventstore: scan stream version: %w", err)
			}
			versions[id] = v
		}
		if err := rows.Close(); err != nil {
			return 0, nil, fmt.Errorf("eventstore: read stream versions: %w", err)
		}
	}
	return head, versions, nil
}

func (t *sqlAppendTx) write(ctx context.Context, rows []*row, newHead int64) error {
	values := make([][]any, len(rows))
	for i, r := range rows {
		values[i] = r.values()
	}
	if err := sqldb.ExecRows(ctx, t.tx, sqldb.SQLite, `INSERT INTO events (position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, contact_id, subscription_id, data, metadata, idempotency_id) VALUES `, "", values); err != nil {
		return fmt.Errorf("eventstore: insert events: %w", err)
	}
	if len(rows) > 0 {
		if _, err := t.tx.ExecContext(ctx, `UPDATE event_log_head SET position = $1 WHERE id = 1`, newHead); err != nil {
			return fmt.Errorf("eventstore: move head: %w", err)
		}
	}
	if err := t.tx.Commit(); err != nil {
		return fmt.Errorf("eventstore: commit append: %w", err)
	}
	return nil
}

const insertColumns = 13

// values are a row's columns in the order of the INSERTs above.
func (r *row) values() []any {
	return []any{r.position, r.eventID, r.streamID, r.version, r.eventType, r.schemaVersion,
		r.occurredAt, r.accountID, r.contactID, r.subscriptionID, r.data, r.metadata, r.idempotencyID}
}
