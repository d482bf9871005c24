package sqldb

import (
	"context"
	"database/sql"
	"sync"
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

// Applier is tx, a transaction of db's BeginDerivedTx or BeginAppendTx (and of no other pool), as
// an Applier: on SQLite its statements, and those of ExecRows and QueryRowsStrings through it,
// are the ones the write pool keeps, and those it has not yet are prepared when the transaction
// is released.
func (db *DB) Applier(tx *sql.Tx) Applier { return txApplier{Tx: tx, kept: db.kept} }

// txApplier is a database/sql transaction as an Applier. kept, in a transaction on SQLite's write
// pool (WriteTx, DB.Applier), lends ExecRows and QueryRowsStrings the statements prepared for it.
type txApplier struct {
	*sql.Tx
	kept *keptStatements
}

// keptStatements are the statements a SQLite pool keeps (Prepare) for the transactions on it, and
// the queries they ran without one: prepared once a transaction ended, when the pool's one
// write connection is free again (a pool cannot prepare while its only connection runs a
// transaction).
type keptStatements struct {
	pool    *sql.DB
	mu      sync.Mutex
	missing []string
}

// maxKeptQuery is the longest statement a transaction has kept (an append's of a group of up to
// some 40 events): a prepared statement holds its compiled program outside the Go heap for the
// life of the process, and a long one (a chunk of a hundred rows) would hold megabytes for a
// parse that its rows amortize anyway.
const maxKeptQuery = 2048

// in returns query's kept statement in tx, or nil (then noting query, to keep it once tx ended).
// A nil k keeps nothing: on PostgreSQL pgx keeps statements itself.
func (k *keptStatements) in(ctx context.Context, tx *sql.Tx, query string) *sql.Stmt {
	if k == nil || len(query) > maxKeptQuery {
		return nil
	}
	if stmt := InTx(ctx, tx, k.pool, query); stmt != nil {
		return stmt
	}
	k.miss(query)
	return nil
}

// miss notes a query run without a kept statement.
func (k *keptStatements) miss(query string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.missing = append(k.missing, query)
}

// prepareMissing prepares, on the pool, the queries run without a kept statement so far. Call
// it when no transaction holds the pool's connection.
func (k *keptStatements) prepareMissing(ctx context.Context) {
	k.mu.Lock()
	missing := k.missing
	k.missing = nil
	k.mu.Unlock()
	Prepare(ctx, k.pool, missing...)
}

func (t txApplier) QueryRow(ctx context.Context, query string, args ...any) Row {
	if stmt := t.kept.in(ctx, t.Tx, query); stmt != nil {
		return stmt.QueryRowContext(ctx, args...)
	}
	return t.QueryRowContext(ctx, query, args...)
}

func (t txApplier) Query(ctx context.Context, query string, args ...any) (Rows, error) {
	var rows *sql.Rows
	var err error
	if stmt := t.kept.in(ctx, t.Tx, query); stmt != nil {
		rows, err = stmt.QueryContext(ctx, args...)
	} else {
		rows, err = t.QueryContext(ctx, query, args...)
	}
	if err != nil {
		return nil, err // not a nil *sql.Rows in a non-nil Rows
	}
	return rows, nil
}

func (t txApplier) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if stmt := t.kept.in(ctx, t.Tx, query); stmt != nil {
		return stmt.ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, query, args...)
}
