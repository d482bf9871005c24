package sqldb

import (
	"context"
	"database/sql"
)

// Applier is where a projection applies a batch of events: a database/sql transaction
// (ApplierOf); the event store's append transaction, which applies the inline projections in
// the transaction that appends their events and sends their writes in the same round trip as its
// commit (infra/eventstore/inline.go); or, on PostgreSQL, the relay's PipelinedTx. A write's
// result is not reported: an Applier may send it later, and projections write by key, without
// needing counts.
type Applier interface {
	Execer
	// QueryRow runs a query that returns at most one row, after every write sent before it. A
	// missing row is sql.ErrNoRows at Scan, as with database/sql.
	QueryRow(ctx context.Context, query string, args ...any) Row
	// Query runs a query of any number of rows, after every write sent before it.
	Query(ctx context.Context, query string, args ...any) (Rows, error)
}

// Committer is an Applier whose transaction can tell what committed: fn runs once the
// transaction has committed, before anyone waiting for it is told; never if it rolls back.
type Committer interface {
	AfterCommit(fn func())
}

// Execer runs statements (a *sql.Tx, an Applier).
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Row is one row of a result, to scan.
type Row interface {
	Scan(dest ...any) error
}

// Rows are the rows of a result, read in turn as with *sql.Rows.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// ApplierOf is tx as an Applier.
func ApplierOf(tx *sql.Tx) Applier { return txApplier{Tx: tx} }

// txApplier is a database/sql transaction as an Applier. kept, in a transaction WriteTx runs on
// SQLite, lends ExecRows and QueryRowsStrings the statements prepared for the pool.
type txApplier struct {
	*sql.Tx
	kept *keptStatements
}

// keptStatements are the statements a SQLite pool keeps (Prepare) for a transaction on it, and
// the queries the transaction ran without one: prepared once it ended, when the pool's one write
// connection is free again (a pool cannot prepare while its only connection runs a transaction).
type keptStatements struct {
	pool    *sql.DB
	missing []string
}

func (t txApplier) QueryRow(ctx context.Context, query string, args ...any) Row {
	return t.QueryRowContext(ctx, query, args...)
}

func (t txApplier) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	rows, err := t.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err // not a nil *sql.Rows in a non-nil Rows
	}
	return rows, nil
}
