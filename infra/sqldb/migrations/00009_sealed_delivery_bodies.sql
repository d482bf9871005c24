-- +goose Up
-- A delivery whose payload carries a secret (the activation token of checkout.purchased) keeps
-- its body sealed with the server key (FUNNEL_SECRET_KEY or the SQLite key file): 1 here. The
-- dispatcher opens it when it claims the delivery (webhooks/claims.go). Other bodies stay
-- readable JSON: 0.
ALTER TABLE webhook_deliveries ADD COLUMN body_sealed INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE webhook_deliveries DROP COLUMN body_sealed;
