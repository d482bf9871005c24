-- +goose Up
-- While an account's receivers are slow, the dispatcher claims its deliveries apart, a few at a
-- time (webhooks/send_slots.go): the walk of one account's pending deliveries, due first, in the
-- order they are sent. Without this index that walk followed webhook_deliveries_pending_due and
-- read every other account's due deliveries on the way.
--
-- event_position > 0 holds for every delivery; it is in the condition, as in migration 21, so that
-- only the statement that states it can use the index: with statistics taken before a backlog,
-- PostgreSQL took it for the claim's check of an earlier pending delivery of an ordering key,
-- which must probe webhook_deliveries_pending_ordered (webhooks/claim_plans_test.go).
--
-- IF NOT EXISTS: applied again when its version is marked unapplied (an interrupted upgrade's
-- record, and the upgrade tests in cmd/funnel), it does what it did.
CREATE INDEX IF NOT EXISTS webhook_deliveries_pending_by_account ON webhook_deliveries (account_id, next_attempt_at, event_position) WHERE status = 'pending' AND event_position > 0;

-- +goose Down
DROP INDEX IF EXISTS webhook_deliveries_pending_by_account;
