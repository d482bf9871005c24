package sqldbtest

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
)

// Plan runs an EXPLAIN statement on conn and returns the text of its rows' column col, a line a
// row: column 0 of PostgreSQL's EXPLAIN, column 3 of SQLite's EXPLAIN QUERY PLAN.
func Plan(t testing.TB, conn *sql.Conn, statement string, col int, args ...any) string {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), statement, args...)
	if err != nil {
		t.Fatalf("%s: %v", statement, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		v := vals[col]
		if b, ok := v.([]byte); ok {
			v = string(b)
		}
		lines = append(lines, fmt.Sprint(v))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}
