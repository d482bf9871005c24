package commands_test

import (
	"context"
	"testing"
	"time"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// The timer's command ends a subscription cancelled at period end only once the period is over,
// at the period's end, and only once; a subscription that is not cancelling is left alone.
func TestEndSubscriptionIfDueEndsOnceThePeriodIsOver(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		c := newCheckout(t, dialect)
		ctx := context.Background()
		timer := commands.Meta{AccountID: c.meta.AccountID, Actor: commands.TimerActor}
		end := func(id string) commands.EndSubscriptionIfDueResult {
			t.Helper()
			res, err := c.h.EndSubscriptionIfDue.Handle(ctx, commands.EndSubscriptionIfDue{Meta: timer, SubscriptionID: id})
			if err != nil {
				t.Fatalf("end subscription if due: %v", err)
			}
			return res
		}
		cancelling := c.buy(t, 1, "ann@example.com").SubscriptionID
		renewing := c.buy(t, 1, "bob@example.com").SubscriptionID
		cancel, err := c.h.CancelSubscription.Handle(ctx, commands.CancelSubscription{Meta: c.meta, SubscriptionID: cancelling, AtPeriodEnd: true})
		if err != nil {
			t.Fatal(err)
		}
		periodEnd := cancel.CurrentPeriodEnd

		c.clock.Set(periodEnd.Add(-time.Second))
		if res := end(cancelling); res.Ended || len(c.stream(t, cancelling)) != 2 {
			t.Fatalf("a second before the period ends: %+v, stream %+v", res, c.stream(t, cancelling))
		}
		c.clock.Set(periodEnd.Add(time.Hour))
		if res := end(cancelling); !res.Ended || res.Position == 0 {
			t.Fatalf("once the period is over: %+v", res)
		}
		events := c.stream(t, cancelling)
		cancelled, ok := events[len(events)-1].(domain.SubscriptionCancelled)
		if !ok || len(events) != 3 || !cancelled.Subscription.CancelledAt.Equal(periodEnd) || cancelled.Subscription.Status != domain.SubscriptionStatusCancelled {
			t.Fatalf("subscription stream after the timer: %+v", events)
		}
		if res := end(cancelling); res.Ended || len(c.stream(t, cancelling)) != 3 {
			t.Fatalf("ending again recorded something: %+v", res)
		}
		if res := end(renewing); res.Ended || len(c.stream(t, renewing)) != 1 {
			t.Fatalf("a subscription that is not cancelling ended: %+v", res)
		}
		_, err = c.h.EndSubscriptionIfDue.Handle(ctx, commands.EndSubscriptionIfDue{Meta: commands.Meta{AccountID: "acc_other", Actor: commands.TimerActor}, SubscriptionID: cancelling})
		wantKind(t, err, domain.KindForbidden)
	})
}
