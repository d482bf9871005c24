package projections

import (
	"context"
	"database/sql"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// inList returns the parameters from, from+1, … for the values (sqldb.Placeholders), and the
// values as query arguments.
func inList[T any](dialect sqldb.Dialect, from int, values []T) (string, []any) {
	args := make([]any, len(values))
	for i, v := range values {
		args[i] = v
	}
	return sqldb.Placeholders(dialect, from, len(values)), args
}

// nullString stores "" as NULL, for optional references (a submission without a contact).
func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// queryAll runs a query and scans each row with scan.
func queryAll[T any](ctx context.Context, db *sql.DB, scan func(interface{ Scan(...any) error }) (T, error), query string, args ...any) ([]T, error) {
	return queryInto(ctx, db, []T{}, scan, query, args...)
}

// queryInto is queryAll appending to out: a page, whose length is known, is read into one
// allocation.
func queryInto[T any](ctx context.Context, db *sql.DB, out []T, scan func(interface{ Scan(...any) error }) (T, error), query string, args ...any) ([]T, error) {
	rows, err := sqldb.Query(ctx, db, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
