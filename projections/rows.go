package projections

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// insertRows writes rows into table with one multi-row INSERT per 100 rows, so that a burst of
// events costs a few statements instead of one per event. Each row holds a value per column.
// suffix follows the VALUES list (an ON CONFLICT clause, or "").
func insertRows(ctx context.Context, tx *sql.Tx, dialect sqldb.Dialect, table string, columns []string, rows [][]any, suffix string) error {
	head := fmt.Sprintf("INSERT INTO %s (%s) VALUES ", table, strings.Join(columns, ", "))
	if err := sqldb.ExecRows(ctx, tx, dialect, head, " "+suffix, rows); err != nil {
		return fmt.Errorf("projections: %s: write %d rows: %w", table, len(rows), err)
	}
	return nil
}

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
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
