package sqldb

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// AnalyzeChanged refreshes the planner statistics of every table of funnel's schema on
// PostgreSQL that changed by more than autovacuum would let pass (50 rows plus a tenth of the
// table since its last ANALYZE), and returns the tables it analyzed. It does nothing on SQLite,
// whose planner does not need statistics to prefer an index.
//
// Why the service does autovacuum's analyzing itself: PostgreSQL may run with autovacuum off (it
// does on the machines this project is built on), and then nothing ever analyzes a table. The
// write path's plans do not depend on statistics (infra/eventstore/plans_test.go), but the read
// models' do: a contacts table analyzed while it was nearly empty has the planner sort every
// contact of an account for a page of 50 instead of walking the (account_id, seq) index. Several
// processes may call it at once: a table another one is analyzing is skipped.
func (db *DB) AnalyzeChanged(ctx context.Context) ([]string, error) {
	if db.Dialect != Postgres {
		return nil, nil
	}
	rows, err := db.Read.QueryContext(ctx, `
		SELECT relname FROM pg_stat_user_tables
		WHERE schemaname = current_schema() AND n_mod_since_analyze > 50 + 0.1 * n_live_tup
		ORDER BY relname`)
	if err != nil {
		return nil, fmt.Errorf("sqldb: tables changed since analyzed: %w", err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqldb: tables changed since analyzed: %w", err)
		}
		tables = append(tables, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqldb: tables changed since analyzed: %w", err)
	}
	for _, table := range tables {
		// A name read from the catalogue, quoted as an identifier: nothing a user typed.
		if _, err := db.Write.ExecContext(ctx, `ANALYZE (SKIP_LOCKED) `+pgx.Identifier{table}.Sanitize()); err != nil {
			return nil, fmt.Errorf("sqldb: analyze %s: %w", table, err)
		}
	}
	return tables, nil
}
