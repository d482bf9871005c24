package service

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/projections"
)

// Timer loop tuning: how often the pending timers are read when none falls due sooner (the
// latest a timer fires after its due time, or after another process set it), and how many due
// timers one look fires.
const (
	timerPoll  = time.Second
	timerBatch = 100
)

// subscriptionTimer fires the durable cancel-at-period-end timers: it reads the soonest pending
// timers from their read model and runs EndSubscriptionIfDue for each one that is due.
//
// It is durable because the timers are a read model of the log: a restart, a crash or a rebuild
// finds them again. It fires once however many processes run it, because the command decides on
// the subscription's stream: when two processes end one subscription at once, one append wins and
// the other decides again and finds it ended. A timer stays in the read model until its
// SubscriptionCancelled is projected, so a failed run is simply tried again at the next look.
type subscriptionTimer struct {
	timers *projections.SubscriptionTimers
	end    commands.EndSubscriptionIfDueHandler
	now    func() time.Time
	log    *zap.Logger
	looked func() // counts each look (funnel_subscription_timer_looks_total): the loop is alive
}

// Run fires due timers until ctx ends. Errors are logged, never returned: the next look retries.
func (w subscriptionTimer) Run(ctx context.Context) error {
	for {
		wait := w.fireDue(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// fireDue runs the command of every due timer among the soonest, and returns how long to wait
// before looking again: until the next timer falls due, at most timerPoll.
func (w subscriptionTimer) fireDue(ctx context.Context) time.Duration {
	defer w.looked()
	timers, err := w.timers.Soonest(ctx, timerBatch)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Error("read subscription timers", zap.Error(err))
		}
		return timerPoll
	}
	now := w.now()
	for _, timer := range timers {
		if timer.DueAt.After(now) {
			return min(timerPoll, timer.DueAt.Sub(now))
		}
		meta := commands.Meta{AccountID: timer.AccountID, Actor: commands.TimerActor}
		_, err := w.end.Handle(ctx, commands.EndSubscriptionIfDue{Meta: meta, SubscriptionID: timer.SubscriptionID})
		if err != nil && ctx.Err() == nil {
			w.log.Error("fire subscription timer", zap.String("subscription", timer.SubscriptionID), zap.Error(err))
		}
	}
	return timerPoll
}
