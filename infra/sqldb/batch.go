package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

// batchRows bounds the rows of one multi-row statement (well under the parameter limits of both
// databases).
const batchRows = 100

// Placeholders returns the parameters from, from+1, … of a list of n (an IN list): "$from, …" on
// PostgreSQL, "?, ?, …" on SQLite (see rowsStatement), where the statement's earlier parameters
// must be exactly $1 to $from-1, in order.
func Placeholders(dialect Dialect, from, n int) string {
	var sb strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(placeholder(dialect, from+i))
	}
	return sb.String()
}

// placeholder is parameter number n of a statement.
func placeholder(dialect Dialect, n int) string {
	if dialect == Postgres {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}

// ExecRows runs head + a VALUES list + tail once per chunk of rows, so that a batch of rows costs
// a few statements instead of one per row. Each row holds one value per column; head and tail
// hold no parameters. casts, when given, types each column as CAST($n AS type): the VALUES of a
// CTE need it on PostgreSQL, and SQLite reads it as plain SQL.
//
// On SQLite (when tx can prepare: a *sql.Tx can), the statement of a full chunk is prepared once
// when there are several, and the rows short of a chunk run as the one-row statement, once each
// (execEach): SQLite parses a statement on every exec of its text, and parsing a hundred rows'
// VALUES cost as much as writing them (a rebuild writes thousands of rows a transaction). pgx
// caches the statements of PostgreSQL by their text already.
func ExecRows(ctx context.Context, tx Execer, dialect Dialect, head, tail string, rows [][]any, casts ...string) error {
	var full *sql.Stmt // the statement of a full chunk, prepared
	defer func() {
		if full != nil {
			full.Close()
		}
	}()
	for start := 0; start < len(rows); start += batchRows {
		if p, ok := inTx(tx); ok && dialect == SQLite && len(rows)-start < batchRows {
			return execEach(ctx, p, head, tail, rows[start:], casts) // the rows short of a chunk
		}
		query, args, err := rowsStatement(dialect, head, tail, rows, start, casts)
		if err != nil {
			return err
		}
		if p, ok := tx.(preparer); ok && dialect == SQLite && len(rows)-start >= 2*batchRows && full == nil {
			if full, err = p.PrepareContext(ctx, query); err != nil {
				return err
			}
		}
		if full != nil && len(rows)-start >= batchRows {
			_, err = full.ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, query, args...)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// execEach runs the one-row statement of head and tail for each row, prepared once: on SQLite,
// where a statement's text is parsed every time it runs, parsing a VALUES list of a few rows
// cost more than running a prepared row several times (a webhook dispatcher's record of its
// sends, the outbox's deliveries of a batch, a read model's rows). Only inside a transaction
// (inTx): there the rows commit together, and SQLite, whose one writer runs them in order, gives
// each row what the statement of several would (the callers' rows name distinct keys).
func execEach(ctx context.Context, p preparer, head, tail string, rows [][]any, casts []string) error {
	query, _, err := rowsStatement(SQLite, head, tail, rows[:1], 0, casts)
	if err != nil {
		return err
	}
	stmt, err := statementFor(ctx, p, query)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for i, row := range rows {
		if len(row) != len(rows[0]) {
			return fmt.Errorf("sqldb: row %d has %d values, the first has %d", i, len(row), len(rows[0]))
		}
		if _, err := stmt.ExecContext(ctx, row...); err != nil {
			return err
		}
	}
	return nil
}

// statementFor returns query's statement in the transaction p: the one its pool keeps, when p is
// a transaction of WriteTx, else one prepared for p alone. Either is closed after use (a kept
// statement stays with its pool).
func statementFor(ctx context.Context, p preparer, query string) (*sql.Stmt, error) {
	if t, ok := p.(txApplier); ok {
		if stmt := t.kept.in(ctx, t.Tx, query); stmt != nil {
			return stmt, nil
		}
	}
	return p.PrepareContext(ctx, query)
}

// queryEach is execEach for QueryRowsStrings.
func queryEach(ctx context.Context, p preparer, head, tail string, rows [][]any, casts []string) ([]string, error) {
	query, _, err := rowsStatement(SQLite, head, tail, rows[:1], 0, casts)
	if err != nil {
		return nil, err
	}
	stmt, err := statementFor(ctx, p, query)
	if err != nil {
		return nil, err
	}
	defer stmt.Close()
	var out []string
	for i, row := range rows {
		if len(row) != len(rows[0]) {
			return nil, fmt.Errorf("sqldb: row %d has %d values, the first has %d", i, len(row), len(rows[0]))
		}
		result, err := stmt.QueryContext(ctx, row...)
		if err != nil {
			return nil, err
		}
		if out, err = appendStrings(out, result); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// appendStrings appends the one text column of every row of result to out, and closes result.
func appendStrings(out []string, result Rows) ([]string, error) {
	for result.Next() {
		var v string
		if err := result.Scan(&v); err != nil {
			result.Close()
			return nil, err
		}
		out = append(out, v)
	}
	err := result.Err()
	if closeErr := result.Close(); err == nil {
		err = closeErr
	}
	return out, err
}

// preparer is a transaction that prepares statements (a *sql.Tx).
type preparer interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// inTx returns x as a preparer when it is a database/sql transaction; a pool or a connection
// prepares too, but there each row would be a statement, and a commit, of its own.
func inTx(x any) (preparer, bool) {
	switch x := x.(type) {
	case *sql.Tx:
		return x, true
	case txApplier:
		return x, true
	}
	return nil, false
}

// QueryRowsStrings is ExecRows for a statement whose tail returns one text column (RETURNING
// id): it collects what every chunk returned.
func QueryRowsStrings(ctx context.Context, tx Applier, dialect Dialect, head, tail string, rows [][]any, casts ...string) ([]string, error) {
	var out []string
	for start := 0; start < len(rows); start += batchRows {
		if p, ok := inTx(tx); ok && dialect == SQLite && len(rows)-start < batchRows {
			rest, err := queryEach(ctx, p, head, tail, rows[start:], casts) // the rows short of a chunk
			return append(out, rest...), err
		}
		query, args, err := rowsStatement(dialect, head, tail, rows, start, casts)
		if err != nil {
			return nil, err
		}
		result, err := tx.Query(ctx, query, args...)
		if err != nil {
			return nil, err
		}
		if out, err = appendStrings(out, result); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// rowsStatement builds the statement of the chunk of rows that begins at start. PostgreSQL gets
// numbered parameters ($1, $2, …). SQLite gets anonymous ones (?), bound in order: it takes $N for
// a name, and looks every name up in a list it scans, which made a statement of a thousand
// parameters quadratic to parse and to bind (half the CPU of a webhook burst).
func rowsStatement(dialect Dialect, head, tail string, rows [][]any, start int, casts []string) (string, []any, error) {
	part := rows[start:min(start+batchRows, len(rows))]
	var sb strings.Builder
	sb.WriteString(head)
	args := make([]any, 0, len(part)*len(part[0]))
	for i, row := range part {
		if len(row) != len(part[0]) {
			return "", nil, fmt.Errorf("sqldb: row %d has %d values, the first has %d", start+i, len(row), len(part[0]))
		}
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("(")
		for j := range row {
			if j > 0 {
				sb.WriteString(", ")
			}
			param := placeholder(dialect, len(args)+j+1)
			if j < len(casts) {
				fmt.Fprintf(&sb, "CAST(%s AS %s)", param, casts[j])
			} else {
				sb.WriteString(param)
			}
		}
		sb.WriteString(")")
		args = append(args, row...)
	}
	sb.WriteString(tail)
	return sb.String(), args, nil
}
