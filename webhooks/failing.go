package webhooks

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"go.uber.org/zap"
)

// FailingFor is how long a subscription's deliveries may all fail, with no success in between,
// before it is disabled ("failing"; decisions.md): a circuit breaker, so that a receiver gone
// for good stops costing attempts, and its integrator sees why in the subscription list.
const FailingFor = 5 * 24 * time.Hour

// trackFailures keeps each subscription's run of failures from the attempts just recorded: a
// success ends it, a failure starts it unless one runs already. A subscription whose run has
// lasted FailingFor is disabled, which gives up its pending deliveries (Projector.stop). A run is
// timed by its attempts (their Config.Now when they were made), not by when this runs: the record
// of a batch may come later than its attempts, after the clock moved on, and a run started at
// the record would look shorter than the failures it holds. A failure here is logged: the next
// attempt tracks again.
func (d *Dispatcher) trackFailures(ctx context.Context, done []outcome) {
	// By subscription: its account, and the first and last failed attempt of the batch.
	type failures struct {
		accountID   string
		first, last time.Time
	}
	succeeded, failed := map[string]bool{}, map[string]*failures{}
	for _, o := range done {
		if o.unsent || o.skipReason != "" {
			continue
		}
		id := o.delivery.subscriptionID
		if o.err == "" {
			succeeded[id] = true
			continue
		}
		if f := failed[id]; f == nil {
			failed[id] = &failures{accountID: o.delivery.accountID, first: o.at, last: o.at}
		} else {
			f.first, f.last = minTime(f.first, o.at), maxTime(f.last, o.at)
		}
	}
	for id := range succeeded {
		if _, err := d.db.Write.ExecContext(ctx, `UPDATE webhook_subscriptions SET failing_since = 0 WHERE id = $1 AND failing_since <> 0`, id); err != nil {
			d.log.Warn("clear a subscription's failures", zap.String("subscription", id), zap.Error(err))
		}
	}
	for id, f := range failed {
		if succeeded[id] {
			continue // a success in the same batch ended the run
		}
		// One statement per subscription (a batch holds few): the run starts at the batch's first
		// failure unless one runs, and it tells whether the run, up to the batch's last failure,
		// has lasted FailingFor while the subscription is active.
		var since int64
		err := d.db.Write.QueryRowContext(ctx, `UPDATE webhook_subscriptions SET failing_since = CASE WHEN failing_since = 0 THEN $1 ELSE failing_since END
			WHERE id = $2 AND status = 'active' RETURNING failing_since`, f.first.UnixMilli(), id).Scan(&since)
		if errors.Is(err, sql.ErrNoRows) {
			continue // disabled or deleted meanwhile
		}
		if err != nil {
			d.log.Warn("record a subscription's failures", zap.String("subscription", id), zap.Error(err))
			continue
		}
		if since <= f.last.UnixMilli()-FailingFor.Milliseconds() {
			if err := d.disable(ctx, f.accountID, id, ReasonFailing); err != nil {
				d.log.Error("disable a failing subscription", zap.String("subscription", id), zap.Error(err))
			}
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
