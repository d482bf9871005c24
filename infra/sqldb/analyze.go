package sqldb

import (
	"context"
	"database/sql"
	"fmt"
)

// Analyzer is where Analyze runs: the write pool, or one connection taken from it.
type Analyzer interface {
	Execer
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
}

// Analyze refreshes the planner statistics of the whole schema on conn, as Migrate does after it
// applied migrations.
//
// On SQLite it keeps sqlite_stat1 (row counts and how selective each index is: numbers and names)
// but no sqlite_stat4. ANALYZE fills that table with sample keys of every index, copied from the
// rows: emails, from contacts' unique key and customers_by_email. An erasure deletes the person's
// rows, never a copy of their key in the statistics, and the service analyzes SQLite at no other
// time, so a sample would stay in the file for good (decisions.md, "Erasure": the file holds none
// of an erased person's values). The samples are deleted in ANALYZE's own transaction, with
// secure_delete on (db.go), so no committed page ever holds them, and the planner reloads the
// statistics without them (ANALYZE sqlite_schema). What it loses are the samples' estimates for a
// range or a skewed value; the read models' and the write path's plans do not depend on them
// (infra/eventstore/plans_test.go, webhooks/claim_plans_test.go analyze this way too).
func Analyze(ctx context.Context, conn Analyzer, dialect Dialect) (err error) {
	if dialect == Postgres {
		if _, err := conn.ExecContext(ctx, `ANALYZE`); err != nil {
			return fmt.Errorf("sqldb: analyze: %w", err)
		}
		return nil
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqldb: analyze: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if _, err := tx.ExecContext(ctx, `ANALYZE`); err != nil {
		return fmt.Errorf("sqldb: analyze: %w", err)
	}
	var samples int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table' AND name = 'sqlite_stat4'`).Scan(&samples); err != nil {
		return fmt.Errorf("sqldb: analyze: %w", err)
	}
	if samples > 0 {
		for _, stmt := range []string{`DELETE FROM sqlite_stat4`, `ANALYZE sqlite_schema`} {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("sqldb: analyze: %s: %w", stmt, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqldb: analyze: %w", err)
	}
	return nil
}
