package projections

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/funnelhq/funnel/domain"
)

// SubscriptionTimers is the read model of the durable cancel-at-period-end timers: one per
// subscription set to cancel when its current period ends, due at that period end. It is derived
// from the log like every read model, so a rebuild recreates the pending timers and a restart
// finds them where it left them; the timer worker (infra/service/subscription_timer.go) reads it.
type SubscriptionTimers struct {
	readModel[writer]
	db *sql.DB
}

// NewSubscriptionTimers reads the timers read model from db. A cancellation is one operator
// request at a time: there is no burst worth batching.
func NewSubscriptionTimers(db *sql.DB) *SubscriptionTimers {
	return &SubscriptionTimers{db: db, readModel: eachEvent(db, "subscription-timers", []string{"subscription_timers"},
		on(setTimer), on(moveTimer), on(removeTimerOfCancelled), on(removeTimerOfCompleted))}
}

// setTimer starts the timer of a cancellation at period end. A cancellation at once is followed
// by SubscriptionCancelled in the same append, so it needs no timer.
func setTimer(w writer, _ domain.Recorded, e domain.SubscriptionCancelScheduled) error {
	if !e.Subscription.CancelAtPeriodEnd {
		return nil
	}
	return w.exec(`INSERT INTO subscription_timers (id, account_id, due_at) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET due_at = excluded.due_at`,
		e.Subscription.ID, e.AccountID, dueMillis(e.Subscription.CurrentPeriodEnd))
}

// moveTimer follows a renewal's new period end. The domain refuses to renew a subscription that
// cancels at period end, so this changes nothing today; it keeps the read model true to the log
// should that rule ever change.
func moveTimer(w writer, _ domain.Recorded, e domain.SubscriptionRenewed) error {
	return w.exec(`UPDATE subscription_timers SET due_at = $1 WHERE id = $2`, dueMillis(e.CurrentPeriodEnd), e.SubscriptionID)
}

// dueMillis rounds a period end up to the millisecond the table keeps: a timer read as due is
// then never a fraction of a millisecond early, when Subscription.EndIfDue would decline it.
func dueMillis(periodEnd time.Time) int64 {
	return millis(periodEnd.Add(time.Millisecond - time.Nanosecond))
}

func removeTimerOfCancelled(w writer, _ domain.Recorded, e domain.SubscriptionCancelled) error {
	return w.exec(`DELETE FROM subscription_timers WHERE id = $1`, e.Subscription.ID)
}

func removeTimerOfCompleted(w writer, _ domain.Recorded, e domain.SubscriptionCompleted) error {
	return w.exec(`DELETE FROM subscription_timers WHERE id = $1`, e.SubscriptionID)
}

// SubscriptionTimer is a pending cancellation at period end.
type SubscriptionTimer struct {
	SubscriptionID string
	AccountID      string
	DueAt          time.Time
}

// Soonest returns at most limit pending timers, the soonest due first, whether due yet or not:
// the caller fires those that are due and sleeps until the next.
func (t *SubscriptionTimers) Soonest(ctx context.Context, limit int) ([]SubscriptionTimer, error) {
	timers, err := queryAll(ctx, t.db, scanSubscriptionTimer,
		`SELECT id, account_id, due_at FROM subscription_timers ORDER BY due_at, id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("projections: soonest subscription timers: %w", err)
	}
	return timers, nil
}

func scanSubscriptionTimer(row interface{ Scan(...any) error }) (SubscriptionTimer, error) {
	var timer SubscriptionTimer
	var due int64
	if err := row.Scan(&timer.SubscriptionID, &timer.AccountID, &due); err != nil {
		return SubscriptionTimer{}, err
	}
	timer.DueAt = fromMillis(due)
	return timer, nil
}
