package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// PipelinedTx is a PostgreSQL transaction whose writes wait in a batch until a read or the commit
// sends them, all in one round trip: BEGIN, the writes and COMMIT travel together, where
// database/sql waits for each statement's answer before sending the next. On this kind of
// machine every round trip costs a context switch on each side, more than a small write itself.
// The caller queues BEGIN itself, with whatever must run first (Queue). As an Applier it runs a
// projection's statements; as a Committer it tells what committed.
type PipelinedTx struct {
	conn        *pgx.Conn
	pending     *pgx.Batch
	afterCommit []func()
	// err is the first statement that failed: the transaction is aborted, and every later send
	// and the commit return it, even if the caller went on after a read's error.
	err error
}

// InPipelinedTx runs fn with a PipelinedTx on a connection of pool, which must be a PostgreSQL
// pool of the pgx driver. A transaction fn leaves open (an error, a commit never sent) is rolled
// back before the connection goes back to the pool.
func InPipelinedTx(ctx context.Context, pool *sql.DB, fn func(*PipelinedTx) error) error {
	conn, err := pool.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqldb: connection: %w", err)
	}
	defer conn.Close()
	return conn.Raw(func(driverConn any) error {
		tx := &PipelinedTx{conn: driverConn.(*stdlib.Conn).Conn()}
		defer tx.rollBackIfOpen()
		return fn(tx)
	})
}

// WriteTx runs fn in a transaction on pool, committed if fn returns nil and rolled back
// otherwise. On PostgreSQL it is a PipelinedTx: fn's writes travel with the COMMIT, and each read
// it makes is a round trip. Elsewhere it is a database/sql transaction of pool.
func WriteTx(ctx context.Context, dialect Dialect, pool *sql.DB, fn func(tx Applier) error) error {
	if dialect == Postgres {
		return InPipelinedTx(ctx, pool, func(tx *PipelinedTx) error {
			tx.Queue(`BEGIN`)
			if err := fn(tx); err != nil {
				return err
			}
			return tx.Commit(ctx)
		})
	}
	tx, err := pool.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqldb: begin: %w", err)
	}
	kept := &keptStatements{pool: pool}
	err = func() error {
		defer tx.Rollback()
		if err := fn(txApplier{Tx: tx, kept: kept}); err != nil {
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("sqldb: commit: %w", err)
		}
		return nil
	}()
	kept.prepareMissing(ctx)
	return err
}

// Conn is the transaction's connection, for a step that must read its answers at once (the event
// store's beginning of an append).
func (t *PipelinedTx) Conn() *pgx.Conn { return t.conn }

// Queue adds a statement to the batch the next read or the commit sends.
func (t *PipelinedTx) Queue(query string, args ...any) {
	if t.pending == nil {
		t.pending = &pgx.Batch{}
	}
	t.pending.Queue(query, args...)
}

// Send sends the statements queued, if any, in one round trip, and returns the first error
// among them.
func (t *PipelinedTx) Send(ctx context.Context) error {
	if t.err != nil {
		return t.err
	}
	if t.pending == nil {
		return nil
	}
	b := t.pending
	t.pending = nil
	if err := t.conn.SendBatch(ctx, b).Close(); err != nil {
		return t.fail(fmt.Errorf("sqldb: send statements: %w", err))
	}
	return nil
}

func (t *PipelinedTx) fail(err error) error {
	t.err = err
	return err
}

// sendWith sends what is queued with query after it, in one round trip, and returns the batch's
// results at query's: those of the statements before it are read, and the first error among
// them returned (the batch closed).
func (t *PipelinedTx) sendWith(ctx context.Context, query string, args []any) (pgx.BatchResults, error) {
	if t.err != nil {
		return nil, t.err
	}
	b := t.pending
	t.pending = nil
	if b == nil {
		b = &pgx.Batch{}
	}
	before := b.Len()
	b.Queue(query, args...)
	res := t.conn.SendBatch(ctx, b)
	for range before {
		if _, err := res.Exec(); err != nil {
			res.Close()
			return nil, t.fail(fmt.Errorf("sqldb: send statements: %w", err))
		}
	}
	return res, nil
}

// ExecContext queues a statement: it is sent with the next read or the commit.
func (t *PipelinedTx) ExecContext(_ context.Context, query string, args ...any) (sql.Result, error) {
	t.Queue(query, args...)
	return driver.ResultNoRows, nil
}

// QueryRow sends what is queued and the query in one round trip, and returns the query's row.
func (t *PipelinedTx) QueryRow(ctx context.Context, query string, args ...any) Row {
	res, err := t.sendWith(ctx, query, args)
	if err != nil {
		return errRow{err}
	}
	return pipelinedRow{tx: t, res: res, row: res.QueryRow()}
}

// Query sends what is queued and the query in one round trip, and returns the query's rows. They
// must be closed before the transaction's next statement is sent.
func (t *PipelinedTx) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	res, err := t.sendWith(ctx, query, args)
	if err != nil {
		return nil, err
	}
	rows, err := res.Query()
	if err != nil {
		res.Close()
		return nil, t.fail(err)
	}
	return &pipelinedRows{Rows: rows, tx: t, res: res}, nil
}

// errRolledBack: COMMIT answered ROLLBACK, as PostgreSQL does in a transaction a statement
// aborted whose error the caller did not stop at.
var errRolledBack = errors.New("sqldb: the transaction was rolled back: one of its statements failed")

// Commit sends what is queued and COMMIT, then runs what AfterCommit registered. COMMIT's answer
// received means the transaction committed, whatever breaks after it (PostgreSQL terminating the
// session sends its FATAL after the answer). Otherwise an error the database answered, or one
// raised before anything was sent, means it did not commit, but for one that ended the session
// (FATAL, PANIC: it may have come once the commit was done, in place of its answer); that one and
// any other (the connection broke, ctx ended while the batch was on its way) is
// ErrCommitUnknown: it may have.
func (t *PipelinedTx) Commit(ctx context.Context) error {
	if t.err != nil {
		return t.err
	}
	if t.pending == nil {
		t.pending = &pgx.Batch{}
	}
	committed := false
	t.pending.Queue(`COMMIT`).Exec(func(tag pgconn.CommandTag) error {
		if tag.String() != "COMMIT" {
			return errRolledBack
		}
		committed = true
		return nil
	})
	if err := t.Send(ctx); err != nil && !committed {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && !endedSession(pgErr) || errors.Is(err, errRolledBack) || pgconn.SafeToRetry(err) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrCommitUnknown, err)
	}
	for _, fn := range t.afterCommit {
		fn()
	}
	return nil
}

// endedSession tells whether PostgreSQL ended the session with err.
func endedSession(err *pgconn.PgError) bool {
	return err.Severity == "FATAL" || err.Severity == "PANIC"
}

// ErrCommitUnknown marks a transaction whose COMMIT was sent without an answer from the database
// (the connection broke, the context ended): it may have committed or not.
var ErrCommitUnknown = errors.New("sqldb: commit sent, outcome unknown")

// AfterCommit registers fn to run once the transaction has committed (Committer).
func (t *PipelinedTx) AfterCommit(fn func()) { t.afterCommit = append(t.afterCommit, fn) }

// rollBackIfOpen rolls back a transaction left open, so the connection goes back clean; bounded,
// lest a connection that stopped answering hold its goroutine (database/sql then discards a
// connection whose transaction is still open when it is next taken).
func (t *PipelinedTx) rollBackIfOpen() {
	if t.conn.PgConn().TxStatus() != 'I' {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = t.conn.Exec(ctx, `ROLLBACK`)
	}
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// pipelinedRow is the row of a query sent at the end of a batch: its Scan closes the batch.
type pipelinedRow struct {
	tx  *PipelinedTx
	res pgx.BatchResults
	row pgx.Row
}

func (r pipelinedRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	closeErr := r.res.Close()
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return sql.ErrNoRows
	case errors.As(err, &pgErr):
		return r.tx.fail(err) // the database refused the query: the transaction is aborted
	case err != nil:
		return err
	case closeErr != nil:
		return r.tx.fail(closeErr)
	}
	return nil
}

// pipelinedRows are the rows of a query sent at the end of a batch: closing them closes the
// batch. As with database/sql, rows read to the end are closed by Next, so the transaction's next
// statement may follow at once.
type pipelinedRows struct {
	pgx.Rows
	tx     *PipelinedTx
	res    pgx.BatchResults
	err    error
	closed bool
}

func (r *pipelinedRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *pipelinedRows) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.Rows.Err()
}

func (r *pipelinedRows) Close() error {
	if r.closed {
		return r.err
	}
	r.closed = true
	r.Rows.Close()
	r.err = r.Rows.Err()
	if closeErr := r.res.Close(); r.err == nil {
		r.err = closeErr
	}
	if r.err != nil {
		r.tx.fail(r.err)
	}
	return r.err
}
