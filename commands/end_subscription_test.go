package commands_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

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

// racingStore is another process that ends the subscription between this process's read and its
// append: the first append through it lets the other process's append commit first.
type racingStore struct {
	commands.EventStore
	once  sync.Once
	other func() error
	err   error
}

func (s *racingStore) Append(ctx context.Context, meta domain.Metadata, appends ...domain.StreamAppend) (int64, error) {
	s.once.Do(func() { s.err = s.other() })
	return s.EventStore.Append(ctx, meta, appends...)
}

// Two processes firing one timer at once both decide to end the subscription; the stream's
// expected version lets the first append win, and the other decides again on the reloaded
// stream and records nothing: one SubscriptionCancelled in all.
func TestEndSubscriptionIfDueRacingAnotherProcessRecordsOnce(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		c := newCheckout(t, dialect)
		ctx := context.Background()
		id := c.buy(t, 1, "ann@example.com").SubscriptionID
		cancel, err := c.h.CancelSubscription.Handle(ctx, commands.CancelSubscription{Meta: c.meta, SubscriptionID: id, AtPeriodEnd: true})
		if err != nil {
			t.Fatal(err)
		}
		c.clock.Set(cancel.CurrentPeriodEnd)
		store := &racingStore{EventStore: c.store, other: func() error {
			recs, err := c.store.ReadStream(ctx, id)
			if err != nil {
				return err
			}
			sub := domain.BillingSubscriptionStream(id)
			for _, r := range recs {
				e, err := r.Decode()
				if err != nil {
					return err
				}
				sub.Replay(e)
			}
			if !sub.EndIfDue(c.clock.Now()) {
				t.Error("the other process found nothing due")
			}
			_, err = c.store.Append(ctx, domain.Metadata{AccountID: c.meta.AccountID, Actor: string(commands.TimerActor)},
				domain.StreamAppend{StreamID: id, ExpectedVersion: recs[len(recs)-1].Version, Events: sub.Changes()})
			return err
		}}
		h := commands.NewEndSubscriptionIfDueHandler(commands.NewRepository(store, 0), c.clock.Now, zap.NewNop(), noObserver{})
		res, err := h.Handle(ctx, commands.EndSubscriptionIfDue{Meta: commands.Meta{AccountID: c.meta.AccountID, Actor: commands.TimerActor}, SubscriptionID: id})
		if err != nil || store.err != nil {
			t.Fatalf("end subscription if due: %v (the other process: %v)", err, store.err)
		}
		if res.Ended {
			t.Fatalf("this process says it ended the subscription the other process ended: %+v", res)
		}
		cancelled := 0
		for _, e := range c.stream(t, id) {
			if _, ok := e.(domain.SubscriptionCancelled); ok {
				cancelled++
			}
		}
		if cancelled != 1 {
			t.Fatalf("%d SubscriptionCancelled recorded, want 1", cancelled)
		}
	})
}
