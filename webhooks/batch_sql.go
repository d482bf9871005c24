package webhooks

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// batchChunk bounds the rows of one multi-row statement.
const batchChunk = 100

// execRows runs a statement once per chunk of rows. head is the statement up to its VALUES
// list, tail what follows it; each row is one tuple of len(types) parameters, cast to types
// (CAST keeps the VALUES of a CTE typed on PostgreSQL and is plain SQL to SQLite).
func execRows(ctx context.Context, tx *sql.Tx, head, tail string, types []string, rows [][]any) error {
	for start := 0; start < len(rows); start += batchChunk {
		part := rows[start:min(start+batchChunk, len(rows))]
		var sb strings.Builder
		sb.WriteString(head)
		args := make([]any, 0, len(part)*len(types))
		for i, row := range part {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString("(")
			for j, typ := range types {
				if j > 0 {
					sb.WriteString(", ")
				}
				fmt.Fprintf(&sb, "CAST($%d AS %s)", len(args)+1, typ)
				args = append(args, row[j])
			}
			sb.WriteString(")")
		}
		sb.WriteString(tail)
		if _, err := tx.ExecContext(ctx, sb.String(), args...); err != nil {
			return err
		}
	}
	return nil
}
