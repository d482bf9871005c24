package webhooks

import (
	"context"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// A moment without the database while a host whose clock runs ahead of the database's records an
// attempt: the record is written again until the claim would lapse, measured on the host's own
// clock from when it asked for the claim. Found by a review: the bound compared the claim's end,
// on the database's clock, with the host's, and a host 10 s ahead (the lease is 6 s here) lost
// the record, and the delivery the receiver took was sent again. PostgreSQL only: a SQLite
// database has one process, and RefuseConnections (the moment without the database) is
// PostgreSQL's.
func TestAnAttemptIsRecordedOnceTheDatabaseIsBackOnAHostAheadOfIt(t *testing.T) {
	db := outbox(t, sqldb.Postgres)
	disp := newTestDispatcher(db, &countingObserver{})
	// This host's clock (and so its schedule's) runs 10 s ahead of the database's; the lease is 6 s.
	disp.cfg.Now = func() time.Time { return time.Now().Add(10 * time.Second) }
	claimed, err := disp.claim(context.Background(), 4)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim = %+v, %v", claimed, err)
	}

	defer refuseConnectionsFor(t, db, 1500*time.Millisecond)()

	if _, err := disp.record(context.Background(), []outcome{{delivery: claimed[0], at: disp.cfg.Now(), status: 200}}); err != nil {
		t.Fatalf("record across a moment without the database, %v of the claim left: %v", time.Until(claimed[0].leaseEnds), err)
	}
	if got := readDelivery(t, db); got.status != "succeeded" || got.attempts != 1 || got.claimedUntil != 0 {
		t.Fatalf("delivery after the database came back = %+v, want succeeded after 1 attempt, unclaimed", got)
	}
}
