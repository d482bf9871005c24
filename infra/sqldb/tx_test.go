package sqldb_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// Read-model commits may skip the fsync; the log's never do, whatever ran before on the one
// write connection of SQLite.
type txQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	Rollback() error
}

func TestOnlyProjectionCommitsSkipTheDisk(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	ctx := context.Background()
	check := func(what string, want int, begin func(context.Context) (txQuerier, func(), error)) {
		tx, release, err := begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got int
		if err := tx.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&got); err != nil {
			t.Fatal(err)
		}
		tx.Rollback()
		release()
		if got != want {
			t.Fatalf("%s runs with synchronous=%d, want %d", what, got, want)
		}
	}
	const normal, full = 1, 2
	check("a projection", normal, func(ctx context.Context) (txQuerier, func(), error) { return db.BeginDerivedTx(ctx) })
	check("an append right after it", full, func(ctx context.Context) (txQuerier, func(), error) { return db.BeginAppendTx(ctx) })
	var got int
	if err := db.Write.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&got); err != nil || got != full {
		t.Fatalf("after a projection the write connection runs with synchronous=%d, %v", got, err)
	}
}
