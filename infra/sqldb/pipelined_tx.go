package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

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
	defer tx.Rollback()
	if err := fn(ApplierOf(tx)); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqldb: commit: %w", err)
	}
	return nil
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
	if t.pending == nil {
		return nil
	}
	b := t.pending
	t.pending = nil
	if err := t.conn.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("sqldb: send statements: %w", err)
	}
	return nil
}

// ExecContext queues a statement: it is sent with the next read or the commit.
func (t *PipelinedTx) ExecContext(_ context.Context, query string, args ...any) (sql.Result, error) {
	t.Queue(query, args...)
	return driver.ResultNoRows, nil
}

// QueryRow sends what is queued, then runs the query: one more round trip.
func (t *PipelinedTx) QueryRow(ctx context.Context, query string, args ...any) Row {
	if err := t.Send(ctx); err != nil {
		return errRow{err}
	}
	return pgxRow{t.conn.QueryRow(ctx, query, args...)}
}

// Query sends what is queued, then runs the query: one more round trip.
func (t *PipelinedTx) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	if err := t.Send(ctx); err != nil {
		return nil, err
	}
	rows, err := t.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgxRows{rows}, nil
}

// Commit sends what is queued and COMMIT, then runs what AfterCommit registered. An error the
// database answered means the transaction did not commit; any other (the connection broke, ctx
// ended) is ErrCommitUnknown: it may have.
func (t *PipelinedTx) Commit(ctx context.Context) error {
	t.Queue(`COMMIT`)
	if err := t.Send(ctx); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrCommitUnknown, err)
	}
	for _, fn := range t.afterCommit {
		fn()
	}
	return nil
}

// ErrCommitUnknown marks a transaction whose COMMIT was sent without an answer from the database
// (the connection broke, the context ended): it may have committed or not.
var ErrCommitUnknown = errors.New("sqldb: commit sent, outcome unknown")

// AfterCommit registers fn to run once the transaction has committed (Committer).
func (t *PipelinedTx) AfterCommit(fn func()) { t.afterCommit = append(t.afterCommit, fn) }

// rollBackIfOpen rolls back a transaction left open, so the connection goes back clean.
func (t *PipelinedTx) rollBackIfOpen() {
	if t.conn.PgConn().TxStatus() != 'I' {
		_, _ = t.conn.Exec(context.Background(), `ROLLBACK`)
	}
}

// pgxRow reports a missing row as database/sql does.
type pgxRow struct{ row pgx.Row }

func (r pgxRow) Scan(dest ...any) error {
	if err := r.row.Scan(dest...); errors.Is(err, pgx.ErrNoRows) {
		return sql.ErrNoRows
	} else {
		return err
	}
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// pgxRows are pgx's rows as Rows.
type pgxRows struct{ pgx.Rows }

func (r pgxRows) Close() error {
	r.Rows.Close()
	return r.Rows.Err()
}
