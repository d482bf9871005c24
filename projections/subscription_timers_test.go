package projections_test

import (
	"context"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
	"github.com/funnelhq/funnel/projections"
)

// A timer is set by a cancellation at period end only, follows the period end, comes soonest
// first, and goes when the subscription is cancelled or completed.
func TestSubscriptionTimersFollowTheLog(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, dialect)
		timers := projections.NewSubscriptionTimers(db.Read)
		at := time.Date(2025, 1, 31, 9, 0, 0, 0, time.UTC)
		scheduled := func(id string, atPeriodEnd bool, end time.Time) domain.SubscriptionCancelScheduled {
			return domain.SubscriptionCancelScheduled{AccountID: "acc_1", Subscription: domain.ScheduledSubscription{
				ID: id, CancelAtPeriodEnd: atPeriodEnd, CurrentPeriodEnd: end}}
		}
		cancelled := func(id string) domain.SubscriptionCancelled {
			return domain.SubscriptionCancelled{AccountID: "acc_1", Subscription: domain.CancelledSubscription{ID: id}}
		}
		apply := func(events ...domain.Event) {
			t.Helper()
			batch := make([]domain.Recorded, len(events))
			for i, e := range events {
				batch[i] = recorded(t, int64(i+1), at, e)
			}
			applyBatch(t, db, timers, batch)
		}
		soonest := func() []projections.SubscriptionTimer {
			t.Helper()
			got, err := timers.Soonest(ctx, 10)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}

		march, april := time.Date(2025, 3, 31, 9, 0, 0, 0, time.UTC), time.Date(2025, 4, 30, 9, 0, 0, 0, time.UTC)
		// A fraction of a millisecond is rounded up: a timer is never read as due before its time.
		late := time.Date(2025, 2, 28, 9, 0, 0, 1500, time.UTC)
		apply(scheduled("sub_late", true, late), scheduled("sub_april", true, april), scheduled("sub_now", false, march), cancelled("sub_now"),
			scheduled("sub_split", true, march), domain.SubscriptionCompleted{SubscriptionID: "sub_split"})
		got := soonest()
		if len(got) != 2 || got[0].SubscriptionID != "sub_late" || got[1].SubscriptionID != "sub_april" ||
			got[0].AccountID != "acc_1" || !got[0].DueAt.Equal(late.Truncate(time.Millisecond).Add(time.Millisecond)) || !got[1].DueAt.Equal(april) {
			t.Fatalf("pending timers %+v, want sub_late (rounded up) then sub_april", got)
		}

		apply(domain.SubscriptionRenewed{SubscriptionID: "sub_late", CurrentPeriodEnd: time.Date(2025, 5, 31, 9, 0, 0, 0, time.UTC)},
			domain.SubscriptionRenewed{SubscriptionID: "sub_without_timer", CurrentPeriodEnd: march})
		if got := soonest(); len(got) != 2 || got[0].SubscriptionID != "sub_april" || got[1].SubscriptionID != "sub_late" {
			t.Fatalf("after a renewal moved sub_late to May: %+v", got)
		}
		apply(cancelled("sub_april"), cancelled("sub_late"))
		if got := soonest(); len(got) != 0 {
			t.Fatalf("timers left after both ended: %+v", got)
		}
	})
}
