package webhooks

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/infra/sqldb"
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
	if len(failed) == 0 {
		return
	}
	var ids []any
	for id := range failed {
		if !succeeded[id] { // a success in the same batch ended the run
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return
	}
	in := sqldb.Placeholders(d.db.Dialect, 2, len(ids))
	if _, err := d.db.Write.ExecContext(ctx, `UPDATE webhook_subscriptions SET failing_since = $1 WHERE failing_since = 0 AND id IN (`+in+`)`,
		append([]any{now}, ids...)...); err != nil {
		d.log.Warn("record subscriptions' failures", zap.Error(err))
		return
	}
	rows, err := d.db.Write.QueryContext(ctx, `SELECT id FROM webhook_subscriptions WHERE status = 'active' AND failing_since > 0 AND failing_since <= $1 AND id IN (`+in+`)`,
		append([]any{now - FailingFor.Milliseconds()}, ids...)...)
	if err != nil {
		d.log.Warn("read subscriptions' failures", zap.Error(err))
		return
	}
	var failing []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err == nil {
			failing = append(failing, id)
		}
	}
	rows.Close()
	for _, id := range failing {
		if err := d.disable(ctx, failed[id], id, ReasonFailing); err != nil {
			d.log.Error("disable a failing subscription", zap.String("subscription", id), zap.Error(err))
		}
	}
}
