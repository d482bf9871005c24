package sqldb

import (
	"context"
	"database/sql"
	"sync"
)

// The SQLite driver parses a query's text anew every time it runs (a fifth of a cheap read's CPU),
// where pgx keeps the statements it prepared on each connection itself. Query and QueryRow run
// a query as a statement prepared once per pool and connection on SQLite, and as it is on
// PostgreSQL. A statement is the query's text: the caller keeps the texts it sends few (values
// go in parameters); past maxStatements a query runs unprepared.

// maxStatements bounds the statements kept for each pool: the read pool's many texts (a page's
// limit is part of its text) cannot take the write pool's room.
const maxStatements = 512

type statementKey struct {
	pool  *sql.DB
	query string
}

var statements = struct {
	mu     sync.Mutex
	byID   map[statementKey]*sql.Stmt
	ofPool map[*sql.DB]int // how many byID keeps for each open pool; a pool absent keeps none
}{byID: map[statementKey]*sql.Stmt{}, ofPool: map[*sql.DB]int{}}

// keepStatementsOf lets a SQLite pool that Open made keep its statements, until it closes
// (forgetStatements). A pool opened elsewhere runs its queries unprepared.
func keepStatementsOf(pool *sql.DB) {
	statements.mu.Lock()
	defer statements.mu.Unlock()
	statements.ofPool[pool] = 0
}

// Query runs query on pool, prepared once on SQLite.
func Query(ctx context.Context, pool *sql.DB, query string, args ...any) (*sql.Rows, error) {
	if stmt := prepared(ctx, pool, query); stmt != nil {
		return stmt.QueryContext(ctx, args...)
	}
	return pool.QueryContext(ctx, query, args...)
}

// QueryRow runs a query of one row on pool, prepared once on SQLite.
func QueryRow(ctx context.Context, pool *sql.DB, query string, args ...any) *sql.Row {
	if stmt := prepared(ctx, pool, query); stmt != nil {
		return stmt.QueryRowContext(ctx, args...)
	}
	return pool.QueryRowContext(ctx, query, args...)
}

// InTx returns query's statement for tx, a transaction of pool, if Prepare kept one for pool (a
// SQLite pool only); nil otherwise, and the caller runs the query on tx as it is. It never
// prepares: a pool of one connection (SQLite's writes) has none free while tx runs.
func InTx(ctx context.Context, tx *sql.Tx, pool *sql.DB, query string) *sql.Stmt {
	statements.mu.Lock()
	stmt := statements.byID[statementKey{pool, query}]
	statements.mu.Unlock()
	if stmt == nil {
		return nil
	}
	return tx.StmtContext(ctx, stmt)
}

// Prepare prepares each query on a SQLite pool and keeps its statement, for InTx; on PostgreSQL
// it does nothing.
func Prepare(ctx context.Context, pool *sql.DB, queries ...string) {
	for _, q := range queries {
		prepared(ctx, pool, q)
	}
}

// prepared returns query's statement on a SQLite pool, preparing it the first time, or nil: on
// PostgreSQL, when the statements are too many, or when it cannot be prepared (the query then
// runs unprepared and reports its error itself).
func prepared(ctx context.Context, pool *sql.DB, query string) *sql.Stmt {
	if DialectOf(pool) != SQLite {
		return nil
	}
	key := statementKey{pool, query}
	statements.mu.Lock()
	stmt, ok := statements.byID[key]
	kept, open := statements.ofPool[pool]
	statements.mu.Unlock()
	if ok || !open || kept >= maxStatements {
		return stmt
	}
	stmt, err := pool.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	return keep(key, stmt)
}

// keep keeps stmt, just prepared, as key's statement and returns the statement to use: stmt,
// another request's prepared meanwhile, or nil when the pool has no room left or closed since
// (Close forgot its statements while this one was being prepared: kept now, it would outlive
// the pool).
func keep(key statementKey, stmt *sql.Stmt) *sql.Stmt {
	statements.mu.Lock()
	defer statements.mu.Unlock()
	if kept, ok := statements.byID[key]; ok {
		_ = stmt.Close()
		return kept
	}
	if kept, open := statements.ofPool[key.pool]; !open || kept >= maxStatements {
		_ = stmt.Close()
		return nil
	}
	statements.byID[key] = stmt
	statements.ofPool[key.pool]++
	return stmt
}

// forgetStatements closes the statements kept for pool, when it closes, and keeps none for it
// from then on.
func forgetStatements(pool *sql.DB) {
	statements.mu.Lock()
	defer statements.mu.Unlock()
	for key, stmt := range statements.byID {
		if key.pool == pool {
			_ = stmt.Close()
			delete(statements.byID, key)
		}
	}
	delete(statements.ofPool, pool)
}
