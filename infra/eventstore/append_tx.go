package eventstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// appendTx is one group-commit transaction, in the steps the appender needs: begin (take the
// positions, read the current versions of the streams), then write the rows, apply the inline
// projections and commit. PostgreSQL sends the beginning as one pipelined round trip and
// everything from the write to the commit as the next one (the inline projections' statements
// included, unless one of them has to read a row first); SQLite runs plain statements. As an
// Applier it runs the inline projections' statements, and as a Committer it tells them what
// committed.
type appendTx interface {
	sqldb.Applier
	sqldb.Committer
	// begin starts the transaction, orders it with the erasures of the persons it guards
	// (erasure_race.go), and returns the first of n positions it may use (they follow each
	// other), the version of every stream (0 for a new one) and which of the persons whose
	// values it sealed are erased.
	begin(ctx context.Context, b beginning) (begun, error)
	// write inserts the rows.
	write(ctx context.Context, rows []*row) error
	// commit commits, after every statement sent before it.
	commit(ctx context.Context) error
}

// beginning is what an append transaction's begin needs.
type beginning struct {
	streamIDs []string
	n         int  // the positions to take
	inline    bool // the append applies inline projections: it holds sqldb.InlineLock shared on PostgreSQL
	guard     guard
}

// begun is what begin found.
type begun struct {
	first    int64
	versions map[string]int64
	erased   map[string]bool // of guard.sealed; nil when none
}

// inTx runs fn in an append transaction; it rolls back unless fn's write committed.
func (s *Store) inTx(ctx context.Context, fn func(appendTx) error) error {
	if s.db.Dialect == sqldb.Postgres {
		return sqldb.InPipelinedTx(ctx, s.db.Write, func(tx *sqldb.PipelinedTx) error {
			t := &pgxAppendTx{PipelinedTx: tx}
			defer t.unlockIfOpen()
			return fn(t)
		})
	}
	tx, release, err := s.db.BeginAppendTx(ctx)
	if err != nil {
		return fmt.Errorf("eventstore: begin append: %w", err)
	}
	defer func() {
		tx.Rollback()
		release() // which prepares what this transaction ran unprepared (DB.Applier)
	}()
	return fn(&sqlAppendTx{tx: tx, kept: s.db.Applier(tx)})
}

// The versions of the streams an append writes are read on every append, where a slow plan would
// stall it. Each stream's version is one backward step on the (stream_id, version)
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

// pgxAppendTx pipelines each step: BEGIN, the shared inline lock, versions and positions in one
// round trip; insert, the inline projections' writes and COMMIT in the next. Appends of other
// transactions may commit between the versions read and the insert: the unique (stream_id,
// version) then refuses the later one's insert, and the append fails with ErrWrongVersion, as the
// expected version it was given says. Writes wait in the PipelinedTx's batch until a read or the
// commit sends them.
type pgxAppendTx struct {
	*sqldb.PipelinedTx
}

// pgTakePositions gives the transaction its id and n positions in one critical section
// (event_log_take, migration 12): transaction ids and positions grow together, which is what lets
// readers read below the oldest running transaction in position order (readLogBelowHorizon).
const pgTakePositions = `SELECT first_position FROM event_log_take($1)`

func (t *pgxAppendTx) begin(ctx context.Context, in beginning) (begun, error) {
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	if in.inline {
		// Before the positions: a catch-up or a swap that holds the lock exclusively finds every
		// position handed out before it settled, committed or rolled back.
		b.Queue(`SELECT pg_advisory_xact_lock_shared($1)`, sqldb.InlineLock)
	}
	// Before the versions and the positions, which must see an erasure that held a lock first.
	if len(in.guard.persons) > 0 {
		if len(in.guard.erased) > 0 {
			b.Queue(pgLockPersons, personLock, in.guard.persons, in.guard.erased)
		} else {
			b.Queue(pgLockPersonsShared, personLock, in.guard.persons)
		}
	}
	if len(in.guard.sealed) > 0 {
		query, args := ErasedAmong(sqldb.Postgres, in.guard.sealed)
		b.Queue(query, args...)
	}
	b.Queue(pgStreamVersions, in.streamIDs)
	b.Queue(pgTakePositions, in.n)
	res := t.Conn().SendBatch(ctx, b)
	defer res.Close()
	if _, err := res.Exec(); err != nil {
		return begun{}, fmt.Errorf("eventstore: begin append: %w", err)
	}
	if in.inline {
		if _, err := res.Exec(); err != nil {
			return begun{}, fmt.Errorf("eventstore: share the inline lock: %w", err)
		}
	}
	if len(in.guard.persons) > 0 {
		if _, err := res.Exec(); err != nil {
			return begun{}, fmt.Errorf("eventstore: lock the persons' erasures: %w", err)
		}
	}
	var out begun
	if len(in.guard.sealed) > 0 {
		rows, err := res.Query()
		if err != nil {
			return begun{}, fmt.Errorf("eventstore: read the persons' erasures: %w", err)
		}
		out.erased, err = erasedOf(rows)
		rows.Close()
		if err != nil {
			return begun{}, err
		}
	}
	versions, err := pairs(res, in.streamIDs)
	if err != nil {
		return begun{}, fmt.Errorf("eventstore: read stream versions: %w", err)
	}
	out.versions = versions
	if err := res.QueryRow().Scan(&out.first); err != nil {
		return begun{}, fmt.Errorf("eventstore: take positions: %w", err)
	}
	return out, res.Close()
}

// erasedOf reads the rows of ErasedAmong.
func erasedOf(rows interface {
	Next() bool
	Scan(...any) error
	Err() error
}) (map[string]bool, error) {
	var out map[string]bool
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("eventstore: read the persons' erasures: %w", err)
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("eventstore: read the persons' erasures: %w", err)
	}
	return out, nil
}

// pairs reads the next result of a batch, rows of (key, value), into a map that holds every key
// (0 where no row named it).
func pairs(res pgx.BatchResults, keys []string) (map[string]int64, error) {
	out := make(map[string]int64, len(keys))
	for _, k := range keys {
		out[k] = 0
	}
	rows, err := res.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		var v int64
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}

func (t *pgxAppendTx) write(ctx context.Context, rows []*row) error {
	if len(rows) == 0 {
		return nil
	}
	cols := make([][]any, insertColumns)
	for _, r := range rows {
		for i, v := range r.values() {
			cols[i] = append(cols[i], v)
		}
	}
	t.Queue(`INSERT INTO events (position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, contact_id, subscription_id, data, metadata, idempotency_id)
			SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::int[], $7::bigint[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[])`,
		typed[int64](cols[0]), typed[string](cols[1]), typed[string](cols[2]), typed[int64](cols[3]), typed[string](cols[4]), typed[int](cols[5]),
		typed[int64](cols[6]), typed[string](cols[7]), nullable(cols[8]), nullable(cols[9]), typed[string](cols[10]), typed[string](cols[11]), nullable(cols[12]))
	return nil
}

func (t *pgxAppendTx) commit(ctx context.Context) error { return t.Commit(ctx) }

// committed is what an append transaction on SQLite runs once it has committed
// (sqldb.Committer; on PostgreSQL the PipelinedTx keeps its own).
type committed struct{ afterCommit []func() }

func (c *committed) AfterCommit(fn func()) { c.afterCommit = append(c.afterCommit, fn) }

func (c *committed) runAfterCommit() {
	for _, fn := range c.afterCommit {
		fn()
	}
}

// unlockIfOpen rolls back an append that left its transaction open (an error) and releases the
// session's advisory locks: event_log_take releases its own whatever happens; this is the belt to
// its braces, as a lock left held would stop every append. Bounded, as PipelinedTx's own
// rollback is.
func (t *pgxAppendTx) unlockIfOpen() {
	if t.Conn().PgConn().TxStatus() != 'I' {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = t.Conn().Exec(ctx, `ROLLBACK`)
		_, _ = t.Conn().Exec(ctx, `SELECT pg_advisory_unlock_all()`)
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
// the single write connection). Its statements are the ones the write pool keeps prepared
// (DB.Applier; up to 2 KB, so those of groups of up to some 40 events): the appender runs alone,
// and parsing their text anew took about a third of its time. A statement met for the first time
// runs unprepared and is prepared after the transaction, when the connection is free. Its
// multi-row INSERTs stay one statement per group (ExecRows, through kept, which cannot prepare).
type sqlAppendTx struct {
	tx   *sql.Tx
	kept sqldb.Applier
	committed
}

func (t *sqlAppendTx) Query(ctx context.Context, query string, args ...any) (sqldb.Rows, error) {
	return t.kept.Query(ctx, query, args...)
}

func (t *sqlAppendTx) begin(ctx context.Context, in beginning) (begun, error) {
	// The one writer: the positions after the last are this transaction's, and no erasure
	// commits before it does.
	var out begun
	if err := t.QueryRow(ctx, `SELECT COALESCE(MAX(position), 0) + 1 FROM events`).Scan(&out.first); err != nil {
		return begun{}, fmt.Errorf("eventstore: read the last position: %w", err)
	}
	if len(in.guard.sealed) > 0 {
		query, args := ErasedAmong(sqldb.SQLite, in.guard.sealed)
		rows, err := t.Query(ctx, query, args...)
		if err != nil {
			return begun{}, fmt.Errorf("eventstore: read the persons' erasures: %w", err)
		}
		out.erased, err = erasedOf(rows)
		if closeErr := rows.Close(); err == nil && closeErr != nil {
			err = fmt.Errorf("eventstore: read the persons' erasures: %w", closeErr)
		}
		if err != nil {
			return begun{}, err
		}
	}
	versions, err := t.pairsOf(ctx, in.streamIDs, sqliteVersionsOf)
	if err != nil {
		return begun{}, fmt.Errorf("eventstore: read stream versions: %w", err)
	}
	out.versions = versions
	return out, nil
}

// pairsOf runs the query of n keys that queryOf returns, in chunks, and reads its rows of (key,
// value) into a map that holds every key (0 where no row named it).
func (t *sqlAppendTx) pairsOf(ctx context.Context, keys []string, queryOf func(n int) string) (map[string]int64, error) {
	out := make(map[string]int64, len(keys))
	for _, k := range keys {
		out[k] = 0
	}
	const chunk = 500
	for start := 0; start < len(keys); start += chunk {
		part := keys[start:min(start+chunk, len(keys))]
		args := make([]any, len(part))
		for i, k := range part {
			args[i] = k
		}
		rows, err := t.Query(ctx, queryOf(len(part)), args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var k string
			var v int64
			if err := rows.Scan(&k, &v); err != nil {
				rows.Close()
				return nil, err
			}
			out[k] = v
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (t *sqlAppendTx) write(ctx context.Context, rows []*row) error {
	if len(rows) == 0 {
		return nil
	}
	values := make([][]any, len(rows))
	for i, r := range rows {
		values[i] = r.values()
	}
	if err := sqldb.ExecRows(ctx, t, sqldb.SQLite, `INSERT INTO events (position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, contact_id, subscription_id, data, metadata, idempotency_id) VALUES `, "", values); err != nil {
		return fmt.Errorf("eventstore: insert events: %w", err)
	}
	return nil
}

func (t *sqlAppendTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return t.kept.ExecContext(ctx, query, args...)
}

func (t *sqlAppendTx) QueryRow(ctx context.Context, query string, args ...any) sqldb.Row {
	return t.kept.QueryRow(ctx, query, args...)
}

func (t *sqlAppendTx) commit(context.Context) error {
	if err := t.tx.Commit(); err != nil {
		return fmt.Errorf("eventstore: commit append: %w", err)
	}
	t.runAfterCommit()
	return nil
}

const insertColumns = 13

// values are a row's columns in the order of the INSERTs above.
func (r *row) values() []any {
	return []any{r.position, r.eventID, r.streamID, r.version, r.eventType, r.schemaVersion,
		r.occurredAt, r.accountID, r.contactID, r.subscriptionID, r.data, r.metadata, r.idempotencyID}
}
