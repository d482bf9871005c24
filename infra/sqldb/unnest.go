package sqldb

import (
	"context"
	"fmt"
	"strings"
)

// InsertUnnest writes rows on PostgreSQL with one statement whatever their number:
// head + " SELECT * FROM unnest($1::T1[], $2::T2[], …) " + tail, each column passed as one array
// (text, bigint, boolean or double precision, after the Go type of its values). Against a
// multi-row VALUES list (ExecRows) that is one parse, one plan and one round trip for thousands of
// rows, with their values sent in binary: a rebuild writes a read model this way. It returns
// false, having written nothing, when a column holds a value of another type (a nil among them):
// the caller then uses ExecRows. head is "INSERT INTO t (columns)"; tail may hold ON CONFLICT.
func InsertUnnest(ctx context.Context, tx Execer, head, tail string, rows [][]any) (bool, error) {
	if len(rows) == 0 {
		return true, nil
	}
	width := len(rows[0])
	args := make([]any, width)
	types := make([]string, width)
	for j := range width {
		col, typ, ok := column(rows, j)
		if !ok {
			return false, nil
		}
		args[j], types[j] = col, typ
	}
	var sb strings.Builder
	sb.WriteString(head)
	sb.WriteString(" SELECT * FROM unnest(")
	for j, typ := range types {
		if j > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "$%d::%s[]", j+1, typ)
	}
	sb.WriteString(") ")
	sb.WriteString(tail)
	_, err := tx.ExecContext(ctx, sb.String(), args...)
	return true, err
}

// column returns column j of rows as a typed slice and the PostgreSQL type of its elements, or
// false when its values are not all of one type InsertUnnest knows.
func column(rows [][]any, j int) (any, string, bool) {
	switch rows[0][j].(type) {
	case string:
		return collect[string](rows, j, "text")
	case int64:
		return collect[int64](rows, j, "bigint")
	case bool:
		return collect[bool](rows, j, "boolean")
	case float64:
		return collect[float64](rows, j, "double precision")
	}
	return nil, "", false
}

func collect[T any](rows [][]any, j int, typ string) (any, string, bool) {
	out := make([]T, len(rows))
	for i, row := range rows {
		if len(row) != len(rows[0]) {
			return nil, "", false
		}
		v, ok := row[j].(T)
		if !ok {
			return nil, "", false
		}
		out[i] = v
	}
	return out, typ, true
}
