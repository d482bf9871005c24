-- +goose Up
-- Disabling or deleting a subscription gives up its pending deliveries in chunks, locked in id
-- order (webhooks/projector.go, Projector.stop). Without an index in that order each chunk read
-- every pending delivery of the subscription and sorted them: after a long outage of its
-- receiver, 100,000 of them, read 100 times over. This one holds pending rows only, in id order
-- by subscription, so each chunk is a range of it, starting after the last id given up.
--
-- event_position > 0 holds for every delivery (the log's positions start at 1). It is in the
-- condition so that only the statement that states it can use the index: the claim's check for
-- an earlier pending delivery of an ordering key (webhooks/claims.go) must keep to
-- webhook_deliveries_pending_ordered, and with statistics taken before a backlog (PostgreSQL
-- then expects no pending row) it took a pending-only index on (subscription_id, id) for
-- cheaper, scanning every pending delivery of the subscription at each check.
CREATE INDEX webhook_deliveries_pending_by_subscription ON webhook_deliveries (subscription_id, id) WHERE status = 'pending' AND event_position > 0;

-- +goose Down
DROP INDEX webhook_deliveries_pending_by_subscription;
