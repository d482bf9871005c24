package eventstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A dump restored on another server keeps its events' transaction ids, which may lie far above
// that server's own (on PostgreSQL; simulated here by moving them up). The store settles them at
// its start, so a reader reads the restored events and those appended since, all in position
// order, none passed over.
func TestRestoredLogIsReadWholeWithTheAppendsAfterIt(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, dialect)
		before := eventstore.New(db)
		for i := range 3 {
			stream := fmt.Sprintf("ct_r%d", i)
			if _, err := before.Append(ctx, meta, domain.StreamAppend{StreamID: stream, Events: tagged(stream, 2)}); err != nil {
				t.Fatal(err)
			}
		}
		before.Close()
		if dialect == sqldb.Postgres {
			// The ids of a server that had run a million transactions more than this one.
			if _, err := db.Write.Exec(`UPDATE events SET tx_id = (pg_current_xact_id()::text::bigint + 1000000)::text::xid8`); err != nil {
				t.Fatal(err)
			}
		}
		after := eventstore.New(db)
		defer after.Close()
		if _, err := after.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_new", Events: tagged("ct_new", 1)}); err != nil {
			t.Fatal(err)
		}
		after.Head(ctx) // waits for the horizon to pass the append
		log, err := after.ReadLog(ctx, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != 7 || log[0].StreamID != "ct_r0" || log[6].StreamID != "ct_new" {
			t.Fatalf("after the restore the log reads %s", describe(log))
		}
	})
}
