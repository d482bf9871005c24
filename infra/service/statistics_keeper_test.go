package service_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A new deployment's tables were analyzed empty, and PostgreSQL keeps the generic plans it makes
// of them until their next ANALYZE: the statistics keeper's first looks come within seconds of
// the start, not after a minute (the keeper's later looks). SQLite keeps no statistics.
func TestStatisticsOfAFreshDatabaseAreTakenWithinSeconds(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		if d == sqldb.SQLite {
			return // nothing to analyze: the keeper does not run (sqldb.AnalyzeChanged)
		}
		ctx := context.Background()
		started := time.Now()
		svc := servicetest.Start(t, d, func(*service.Config) {})
		acc := svc.NewAccount(t)
		inserting := time.Now() // the migrations analyzed the empty tables already
		// More than the 50 rows plus a tenth that make a table "changed".
		for i := range 120 {
			svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": fmt.Sprintf("s%d@example.com", i)}).Expect(t, http.StatusOK)
		}
		for {
			var analyzed sql.NullTime
			err := svc.App.DB().Read.QueryRowContext(ctx,
				`SELECT last_analyze FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = 'contacts'`).Scan(&analyzed)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				t.Fatal(err)
			}
			if analyzed.Valid && analyzed.Time.After(inserting) {
				t.Logf("analyzed %s after the start", analyzed.Time.Sub(started).Round(100*time.Millisecond))
				return
			}
			if time.Since(started) > 25*time.Second {
				t.Fatalf("contacts not analyzed %s after the start, 120 contacts in", time.Since(started).Round(time.Second))
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}
