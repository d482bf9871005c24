package projections

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// insertRows writes rows into table with one multi-row INSERT per 100 rows, so that a burst of
// events costs a few statements instead of one per event. Each row holds a value per column.
// suffix follows the VALUES list (an ON CONFLICT clause, or "").
func insertRows(ctx context.Context, tx *sql.Tx, table string, columns []string, rows [][]any, suffix string) error {
	const chunk = 100
	for start := 0; start < len(rows); start += chunk {
		part := rows[start:min(start+chunk, len(rows))]
		var sb strings.Builder
		fmt.Fprintf(&sb, "INSERT INTO %s (%s) VALUES ", table, strings.Join(columns, ", "))
		args := make([]any, 0, len(part)*len(columns))
		for i, row := range part {
			if len(row) != len(columns) {
				return fmt.Errorf("projections: %s: row has %d values for %d columns", table, len(row), len(columns))
			}
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString("(")
			for j := range columns {
				if j > 0 {
					sb.WriteString(", ")
				}
				fmt.Fprintf(&sb, "$%d", len(args)+j+1)
			}
			sb.WriteString(")")
			args = append(args, row...)
		}
		sb.WriteString(" " + suffix)
		if _, err := tx.ExecContext(ctx, sb.String(), args...); err != nil {
			return fmt.Errorf("projections: %s: write %d rows: %w", table, len(part), err)
		}
	}
	return nil
}

// inList returns "$from, $from+1, …" for the values, and the values as query arguments.
func inList[T any](from int, values []T) (string, []any) {
	var sb strings.Builder
	args := make([]any, len(values))
	for i, v := range values {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "$%d", from+i)
		args[i] = v
	}
	return sb.String(), args
}

// nullString stores "" as NULL, for optional references (a submission without a contact).
func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
