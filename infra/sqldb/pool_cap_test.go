package sqldb_test

import (
	"context"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// pool_max_conns in a PostgreSQL URL caps both pools, and is not sent to the server as a setting
// (which would refuse the connection): the tests' databases are opened with it.
func TestPoolCapInTheURLCapsBothPools(t *testing.T) {
	ctx := context.Background()
	dbURL := sqldbtest.URL(t, sqldb.Postgres)
	if !strings.Contains(dbURL, sqldb.PoolCapParam+"=") {
		t.Fatalf("a test's database URL has no pool cap: %s", dbURL)
	}
	db, err := sqldb.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for name, pool := range map[string]interface{ PingContext(context.Context) error }{"main": db.Write, "projections": db.Projections} {
		if err := pool.PingContext(ctx); err != nil {
			t.Fatalf("%s pool: %v", name, err)
		}
	}
	if w, p := db.Write.Stats().MaxOpenConnections, db.Projections.Stats().MaxOpenConnections; w != sqldbtest.TestPoolCap || p != sqldbtest.TestPoolCap {
		t.Fatalf("pools of at most %d and %d connections, want %d each", w, p, sqldbtest.TestPoolCap)
	}
	for _, bad := range []string{"0", "x"} {
		if _, err := sqldb.Open(ctx, strings.Replace(dbURL, sqldb.PoolCapParam+"=8", sqldb.PoolCapParam+"="+bad, 1)); err == nil || !strings.Contains(err.Error(), sqldb.PoolCapParam) {
			t.Errorf("%s=%s opened: %v", sqldb.PoolCapParam, bad, err)
		}
	}
}
