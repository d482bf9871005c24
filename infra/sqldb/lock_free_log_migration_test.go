package sqldb_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A database written with the head lock (the schema before migration 12) goes on after it: the
// contacts and leads read models, applied inline before and after, hold every contact exactly
// once, the new events take positions after the old ones, and the inline checkpoints are flagged.
func TestLockFreeLogMigrationGoesOnFromTheHeadLockLog(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		url := sqldbtest.URL(t, dialect)
		svc := servicetest.StartOn(t, url, func(*service.Config) {})
		acc := svc.NewAccount(t)
		for i := range 3 {
			svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": fmt.Sprintf("before%d@example.com", i), "tagNames": []string{"a", "b"}}).Expect(t, http.StatusOK)
		}
		svc.Stop()

		// Back to the schema with the head row, as today's main wrote it, and forward again.
		db, err := sqldb.OpenExisting(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.MigrateDownTo(ctx, 11); err != nil {
			t.Fatal(err)
		}
		var head, last int64
		if err := db.Read.QueryRow(`SELECT position FROM event_log_head WHERE id = 1`).Scan(&head); err != nil {
			t.Fatal(err)
		}
		done, err := db.Migrate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(done.Applied) == 0 || done.Applied[0] != "00012_lock_free_log.go" { // later migrations follow it
			t.Fatalf("applied %v", done.Applied)
		}
		db.Close()

		restarted := servicetest.StartOn(t, url, func(*service.Config) {})
		for i := range 3 {
			restarted.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": fmt.Sprintf("after%d@example.com", i), "tagNames": []string{"a"}}).Expect(t, http.StatusOK)
		}
		// An upsert of a contact from before the migration changes it, and makes no second one.
		restarted.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "before0@example.com", "tagNames": []string{"c"}}).Expect(t, http.StatusOK)
		contacts := restarted.API.Get(t, "/api/v1/contacts", acc.Key).Expect(t, http.StatusOK).List(t, "contacts")
		if len(contacts) != 6 {
			t.Fatalf("%d contacts after the migration, want 6: %v", len(contacts), contacts)
		}
		db = restarted.App.DB()
		if err := db.Read.QueryRow(`SELECT MIN(position) FROM events WHERE position > $1`, head).Scan(&last); err != nil || last <= head {
			t.Fatalf("the first event after the migration is at %d (%v), the head before it was %d", last, err, head)
		}
		var flagged int
		if err := db.Read.QueryRow(`SELECT COUNT(*) FROM projection_checkpoints WHERE inline = 1 AND name IN ('contacts', 'leads')`).Scan(&flagged); err != nil || flagged != 2 {
			t.Fatalf("%d inline checkpoints flagged (%v), want contacts and leads", flagged, err)
		}
	})
}
