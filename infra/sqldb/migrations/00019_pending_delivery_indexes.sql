-- +goose Up
-- The dispatcher's claim (webhooks/claims.go) walks the pending deliveries in the order it sends
-- them and stops after the few it takes. (status, next_attempt_at) could not give that order: a
-- replay's deliveries all share one next_attempt_at, so each claim read and sorted every pending
-- delivery (111 ms at 10,000 pending on PostgreSQL). The check that no earlier delivery of the
-- same ordering key is still pending probes pending rows only: the full (subscription_id,
-- ordering_key, event_position) index walked every delivery the key ever had, a replay's
-- originals included. Both indexes hold pending rows only, so they stay as small as the queue.
-- The indexes they replace served nothing else; dropping them leaves the planner one way.
CREATE INDEX webhook_deliveries_pending_due ON webhook_deliveries (next_attempt_at, event_position) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_pending_ordered ON webhook_deliveries (subscription_id, ordering_key, event_position) WHERE status = 'pending';
DROP INDEX webhook_deliveries_due;
DROP INDEX webhook_deliveries_ordered;

-- +goose Down
CREATE INDEX webhook_deliveries_ordered ON webhook_deliveries (subscription_id, ordering_key, event_position);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
DROP INDEX webhook_deliveries_pending_ordered;
DROP INDEX webhook_deliveries_pending_due;
