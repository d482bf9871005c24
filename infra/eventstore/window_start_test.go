package eventstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A window's scans start near its first event, not at the account's first one, and still return
// every event of the window, one appended up to the slack before older ones included: 20,000
// events a second apart, the window starting at the 15,001st.
func TestAccountEventsStartAtTheWindow(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		s, db := newStore(t, dialect)
		const n = 20000
		query := `INSERT INTO events (position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, data, metadata)
			SELECT g, 'e' || g, 'ct_' || (g % 500), g / 500 + 1, 'TagApplied', 1, g * 1000, 'acc_window', '{}', '{}'
			FROM generate_series(1, $1::bigint) AS g`
		if dialect == sqldb.SQLite {
			query = `WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < CAST($1 AS INTEGER))
				INSERT INTO events (position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, data, metadata)
				SELECT g, 'e' || g, 'ct_' || (g % 500), g / 500 + 1, 'TagApplied', 1, g * 1000, 'acc_window', '{}', '{}' FROM s`
		}
		if _, err := db.Write.Exec(query, n); err != nil {
			t.Fatalf("fill the log: %v", err)
		}
		// An event that occurred within the window though appended 1,000 events (seconds) before
		// its start: a process whose clock ran ahead.
		if _, err := db.Write.Exec(`UPDATE events SET occurred_at = $1 WHERE position = 14000`, int64(15_000_000+500)); err != nil {
			t.Fatal(err)
		}
		if dialect == sqldb.Postgres {
			if _, err := db.Write.Exec(`SELECT setval('events_position_seq', $1)`, n); err != nil {
				t.Fatal(err)
			}
			// Below the horizon, whatever transactions of other databases the server runs: the
			// rows were not appended through this store, which would know them settled.
			if _, err := db.Write.Exec(`UPDATE events SET tx_id = '1'`); err != nil {
				t.Fatal(err)
			}
		}
		since := time.UnixMilli(15_000_000)
		start, err := s.WindowStart(ctx, since)
		if err != nil {
			t.Fatal(err)
		}
		slack := eventstore.WindowSlack.Milliseconds() / 1000 // events, a second apart
		if want := 15000 - slack - 1; start != want {
			t.Errorf("window start = %d, want %d: the last event before the slack", start, want)
		}
		got, err := s.ReadAccountEvents(ctx, eventstore.AccountEventsQuery{AccountID: "acc_window", Types: []string{"TagApplied"}, Since: since, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[0].Position != 14000 || got[1].Position != 15000 || got[2].Position != 15001 {
			positions := make([]int64, len(got))
			for i, r := range got {
				positions[i] = r.Position
			}
			t.Fatalf("the window's first events are at %v, want 14000, 15000, 15001", positions)
		}
		// A window starting before the log: from the first event.
		if start, err := s.WindowStart(ctx, time.UnixMilli(0)); err != nil || start != 0 {
			t.Fatalf("window start before the log = %d, %v; want 0", start, err)
		}
	})
}
