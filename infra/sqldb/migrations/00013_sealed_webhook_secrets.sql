-- +goose Up
-- A subscription's signing secrets (secret, previous_secret) are kept sealed with the server key
-- (FUNNEL_SECRET_KEY or the SQLite key file), bound to the subscription: 1 here. Rows written
-- before hold them in the clear, 0, until the first serve seals them
-- (webhooks.SealSubscriptionSecrets; a migration runs SQL only and has no key).
ALTER TABLE webhook_subscriptions ADD COLUMN secrets_sealed INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE webhook_subscriptions DROP COLUMN secrets_sealed;
