package webhooks

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// An attempt whose record the database refuses (here a text PostgreSQL cannot store) must not
// lose the records of the attempts made beside it: they were recorded in one transaction, which
// failed whole, so their claims lapsed and deliveries that receivers had taken were sent again.
// Nor does it hold them up: what the database refuses for what it holds is not tried again (the
// record's backoff is for a database that is away). SQLite takes the text; each store records the
// other attempt either way, at once.
func TestAnAttemptTheDatabaseRefusesLosesNoOtherRecord(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		db := outbox(t, d)
		now := time.Now().UnixMilli()
		if _, err := db.Write.Exec(`INSERT INTO webhook_deliveries (id, account_id, subscription_id, event_id, event_type, event_position, ordering_key, body, status, attempts, max_attempts, next_attempt_at, claimed_until, last_status_code, last_error, created_at, updated_at)
			VALUES ('dlv_2', 'acc_1', 'wh_1', 'evt_2', 'form.submitted', 3, '', '{}', 'pending', 0, 10, $1, 0, 0, '', $1, $1)`, now); err != nil {
			t.Fatal(err)
		}
		disp := newTestDispatcher(db, &countingObserver{})
		claimed, err := disp.claim(context.Background(), 4)
		if err != nil || len(claimed) != 2 {
			t.Fatalf("claim = %+v, %v", claimed, err)
		}
		var outcomes []outcome
		for _, c := range claimed {
			o := outcome{delivery: c, at: time.Now(), status: 200}
			if c.id == "dlv_1" {
				o.status, o.err = 502, "HTTP 502 \xc3" // not UTF-8
			}
			outcomes = append(outcomes, o)
		}
		began := time.Now()
		_, err = disp.record(context.Background(), outcomes)
		if (err != nil) != (d == sqldb.Postgres) {
			t.Fatalf("record = %v", err)
		}
		if took := time.Since(began); took > 2*time.Second {
			t.Fatalf("the record took %v: a row the database refuses was tried again", took)
		}
		var status string
		var attempts, logged int
		if err := db.Read.QueryRow(`SELECT status, attempts, (SELECT count(*) FROM webhook_attempts WHERE delivery_id = 'dlv_2') FROM webhook_deliveries WHERE id = 'dlv_2'`).Scan(&status, &attempts, &logged); err != nil {
			t.Fatal(err)
		}
		if status != "succeeded" || attempts != 1 || logged != 1 {
			t.Fatalf("the other delivery: %s, %d attempts, %d in the log; want succeeded, 1, 1", status, attempts, logged)
		}
	})
}

// A moment without the database while a receiver answers does not lose the attempt's record:
// it is written once the database is back, while the claim holds, so the delivery is not sent
// again to a receiver that took it (operator-api.md: "each attempt once").
func TestAnAttemptIsRecordedOnceTheDatabaseIsBack(t *testing.T) {
	db := outbox(t, sqldb.Postgres)
	disp := newTestDispatcher(db, &countingObserver{})
	claimed, err := disp.claim(context.Background(), 4)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim = %+v, %v", claimed, err)
	}

	defer refuseConnectionsFor(t, db, 1500*time.Millisecond)()

	if _, err := disp.record(context.Background(), []outcome{{delivery: claimed[0], at: time.Now(), status: 200}}); err != nil {
		t.Fatalf("record across a moment without the database: %v", err)
	}
	if got := readDelivery(t, db); got.status != "succeeded" || got.attempts != 1 || got.claimedUntil != 0 {
		t.Fatalf("delivery after the database came back = %+v, want succeeded after 1 attempt, unclaimed", got)
	}
}

// refuseConnectionsFor makes db's PostgreSQL database refuse connections for d (a moment without
// the database), and returns what stops the timer that lets them in again.
func refuseConnectionsFor(t *testing.T, db *sqldb.DB, d time.Duration) (stop func()) {
	t.Helper()
	var name string
	if err := db.Read.QueryRow(`SELECT current_database()`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(sqldbtest.BaseURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	back := time.AfterFunc(d, sqldbtest.RefuseConnections(t, u.String()))
	return func() { back.Stop() }
}
