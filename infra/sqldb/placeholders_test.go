package sqldb

import "testing"

// PostgreSQL gets numbered parameters; SQLite anonymous ones, which it binds in order without
// looking names up (numbered ones cost it quadratic time).
func TestParametersOfEachDialect(t *testing.T) {
	rows := [][]any{{"a", 1}, {"b", 2}}
	for _, c := range []struct {
		dialect     Dialect
		statement   string
		from5, list string
	}{
		{Postgres, "INSERT INTO t VALUES (CAST($1 AS TEXT), $2), (CAST($3 AS TEXT), $4) RETURNING id", "$5, $6, $7", "$1, $2"},
		{SQLite, "INSERT INTO t VALUES (CAST(? AS TEXT), ?), (CAST(? AS TEXT), ?) RETURNING id", "?, ?, ?", "?, ?"},
	} {
		got, args, err := rowsStatement(c.dialect, "INSERT INTO t VALUES ", " RETURNING id", rows, 0, []string{"TEXT"})
		if err != nil || got != c.statement || len(args) != 4 || args[2] != "b" {
			t.Errorf("%s: rowsStatement = %q, %v, %v", c.dialect, got, args, err)
		}
		if got := Placeholders(c.dialect, 5, 3); got != c.from5 {
			t.Errorf("%s: Placeholders(5, 3) = %q, want %q", c.dialect, got, c.from5)
		}
		if got := Placeholders(c.dialect, 1, 2); got != c.list {
			t.Errorf("%s: Placeholders(1, 2) = %q, want %q", c.dialect, got, c.list)
		}
	}
	if _, _, err := rowsStatement(Postgres, "", "", [][]any{{1, 2}, {3}}, 0, nil); err == nil {
		t.Error("rows of different widths were accepted")
	}
}
