package pipeline

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// replaceRows makes a live table hold exactly the rows of its rebuilt copy, inside the swap's
// transaction. A rebuilt read model mostly equals the live one, so it deletes the live rows the
// copy lacks and upserts the copy's rows, changing only those that differ: where every row was
// deleted and inserted again (every index entry and, on PostgreSQL, the WAL of the whole table,
// and the appends that wait for the swap, waiting as long), an unchanged table now costs a read
// of both. Should that fail (a unique index besides the key can conflict midway when rows trade
// values), a savepoint undoes it and every row is replaced, as before.
func replaceRows(ctx context.Context, tx *sql.Tx, dialect sqldb.Dialect, live, table string) (written int64, err error) {
	columns, key, err := columnsOf(ctx, tx, dialect, live, table)
	if err != nil {
		return 0, fmt.Errorf("columns of %s: %w", table, err)
	}
	if len(key) > 0 && len(key) < len(columns) {
		if _, err := tx.ExecContext(ctx, `SAVEPOINT replace_rows`); err != nil {
			return 0, err
		}
		if written, err := writeDifferences(ctx, tx, dialect, live, table, columns, key); err == nil {
			_, err := tx.ExecContext(ctx, `RELEASE SAVEPOINT replace_rows`)
			return written, err
		}
		if _, err := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT replace_rows`); err != nil {
			return 0, err
		}
	}
	deleted, err := tx.ExecContext(ctx, fmt.Sprintf(`DELETE FROM %s.%s`, live, table))
	if err != nil {
		return 0, fmt.Errorf("clear %s: %w", table, err)
	}
	inserted, err := tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s.%s SELECT * FROM %s`, live, table, table))
	if err != nil {
		return 0, fmt.Errorf("fill %s: %w", table, err)
	}
	return affected(deleted) + affected(inserted), nil
}

// writeDifferences deletes the live rows whose key the copy lacks and upserts the copy's rows,
// updating a live row only where a column differs (NULLs compared as values). It returns the
// rows it deleted, inserted or updated.
func writeDifferences(ctx context.Context, tx *sql.Tx, dialect sqldb.Dialect, live, table string, columns, key []string) (int64, error) {
	same := make([]string, len(key))
	for i, k := range key {
		same[i] = fmt.Sprintf("c.%s = l.%s", k, k)
	}
	deleted, err := tx.ExecContext(ctx, fmt.Sprintf(`DELETE FROM %s.%s AS l WHERE NOT EXISTS (SELECT 1 FROM %s AS c WHERE %s)`,
		live, table, table, strings.Join(same, " AND ")))
	if err != nil {
		return 0, fmt.Errorf("delete rows of %s gone from the rebuild: %w", table, err)
	}
	differs := "IS DISTINCT FROM"
	if dialect == sqldb.SQLite {
		differs = "IS NOT"
	}
	var set, changed []string
	for _, c := range columns {
		if !slices.Contains(key, c) {
			set = append(set, fmt.Sprintf("%s = excluded.%s", c, c))
			changed = append(changed, fmt.Sprintf("l.%s %s excluded.%s", c, differs, c))
		}
	}
	list := strings.Join(columns, ", ")
	// WHERE true: SQLite needs it to read ON CONFLICT after a SELECT.
	upserted, err := tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s.%s AS l (%s) SELECT %s FROM %s WHERE true ON CONFLICT (%s) DO UPDATE SET %s WHERE %s`,
		live, table, list, list, table, strings.Join(key, ", "), strings.Join(set, ", "), strings.Join(changed, " OR ")))
	if err != nil {
		return 0, fmt.Errorf("write rows of %s that differ: %w", table, err)
	}
	return affected(deleted) + affected(upserted), nil
}

// affected is a statement's count of rows, 0 where the driver cannot tell.
func affected(res sql.Result) int64 {
	n, err := res.RowsAffected()
	if err != nil {
		return 0
	}
	return n
}

// columnsOf returns the columns of the live table, in order, and those of its primary key.
func columnsOf(ctx context.Context, tx *sql.Tx, dialect sqldb.Dialect, live, table string) (columns, key []string, err error) {
	query := `SELECT a.attname, COALESCE(a.attnum = ANY(i.indkey), false)
		FROM pg_attribute a LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
		WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`
	args := []any{live + "." + table}
	if dialect == sqldb.SQLite {
		query, args = `SELECT name, pk > 0 FROM pragma_table_info($1, 'main') ORDER BY cid`, []any{table}
	}
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var inKey bool
		if err := rows.Scan(&name, &inKey); err != nil {
			return nil, nil, err
		}
		columns = append(columns, name)
		if inKey {
			key = append(key, name)
		}
	}
	return columns, key, rows.Err()
}
