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
// lasted FailingFor is disabled, which gives up its pending deliveries (Projector.stop). Times
// are the schedule's clock (Config.Now), as the attempts' are. A failure here is logged: the
// next attempt tracks again.
func (d *Dispatcher) trackFailures(ctx context.Context, done []outcome) {
	succeeded, failed := map[string]bool{}, map[string]string{} // subscription id: its account
	for _, o := range done {
		if o.unsent || o.skipReason != "" {
			continue
		}
		if o.err == "" {
			succeeded[o.delivery.subscriptionID] = true
		} else {
			failed[o.delivery.subscriptionID] = o.delivery.accountID
		}
	}
	now := d.cfg.Now().UnixMilli()
	for id := range succeeded {
		if _, err := d.db.Write.ExecContext(ctx, `UPDATE webhook_subscriptions SET failing_since = 0 WHERE id = $1 AND failing_since <> 0`, id); err != nil {
			d.log.Warn("clear a subscription's failures", zap.String("subscription", id), zap.Error(err))
		}
	}
	cutoff := now - FailingFor.Milliseconds()
	for id, account := range failed {
		if succeeded[id] {
			continue // a success in the same batch ended the run
		}
		// One statement per subscription (a batch holds few): the run starts now unless one runs,
		// and it tells whether the run has lasted FailingFor while the subscription is active.
		var since int64
		err := d.db.Write.QueryRowContext(ctx, `UPDATE webhook_subscriptions SET failing_since = CASE WHEN failing_since = 0 THEN $1 ELSE failing_since END
			WHERE id = $2 AND status = 'active' RETURNING failing_since`, now, id).Scan(&since)
		if errors.Is(err, sql.ErrNoRows) {
			continue // disabled or deleted meanwhile
		}
		if err != nil {
			d.log.Warn("record a subscription's failures", zap.String("subscription", id), zap.Error(err))
			continue
		}
		if since <= cutoff {
			if err := d.disable(ctx, account, id, ReasonFailing); err != nil {
				d.log.Error("disable a failing subscription", zap.String("subscription", id), zap.Error(err))
			}
		}
	}
}
