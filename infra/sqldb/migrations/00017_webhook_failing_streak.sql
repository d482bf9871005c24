-- +goose Up
-- Integrator self-service (decisions.md "Subscriptions, deliveries, replay, test"). Number 16
-- leaves 14 and 15 to work in flight.

-- When the subscription's current run of failed attempts began (unix milliseconds; 0: its last
-- attempt succeeded, or none failed yet). The dispatcher sets it on a failure that follows a
-- success and clears it on a success; a run of 5 days disables the subscription (failing.go).
ALTER TABLE webhook_subscriptions ADD COLUMN failing_since BIGINT NOT NULL DEFAULT 0;

-- A subscription's deliveries, newest first (GET /api/v1/webhooks/subscriptions/:id/deliveries):
-- replayed deliveries are new though their events are old, so they page by creation.
CREATE INDEX webhook_deliveries_by_subscription ON webhook_deliveries (subscription_id, created_at, id);

-- +goose Down
DROP INDEX webhook_deliveries_by_subscription;
ALTER TABLE webhook_subscriptions DROP COLUMN failing_since;
