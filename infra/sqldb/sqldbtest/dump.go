package sqldbtest

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
)

// Dump returns every row of a table ordered by orderBy, one line per row with every column as
// column=value, for comparing two databases of the same storage mode.
func Dump(t testing.TB, db *sql.DB, table, orderBy string) []string {
	t.Helper()
	rows, err := db.Query(`SELECT * FROM ` + table + ` ORDER BY ` + orderBy)
	if err != nil {
		t.Fatalf("dump %s: %v", table, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatalf("dump %s: %v", table, err)
	}
	var out []string
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("dump %s: %v", table, err)
		}
		var sb strings.Builder
		for i, v := range vals {
			if i > 0 {
				sb.WriteString(" ")
			}
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			fmt.Fprintf(&sb, "%s=%v", cols[i], v)
		}
		out = append(out, sb.String())
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("dump %s: %v", table, err)
	}
	return out
}

// DiffRows lists up to limit rows of each dump that the other one lacks.
func DiffRows(a, b []string, limit int) string {
	var sb strings.Builder
	for _, d := range []struct {
		sign     string
		from, in []string
	}{{"-", a, b}, {"+", b, a}} {
		other := make(map[string]bool, len(d.in))
		for _, r := range d.in {
			other[r] = true
		}
		n := 0
		for _, r := range d.from {
			if !other[r] && n < limit {
				fmt.Fprintf(&sb, "  %s %s\n", d.sign, r)
				n++
			}
		}
	}
	return sb.String()
}
