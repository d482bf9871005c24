-- +goose Up
-- The secrets a subscription signed with before its previous one, each still signing
-- webhook-signature until 24 hours after it was replaced (decisions.md "Webhooks"): a second
-- rotation within a day kept only one old secret, so a receiver still on the first lost its
-- deliveries' signature at once. A JSON array of {"secret": sealed, "until": unix ms}, newest
-- first ('' for none), sealed like secret and previous_secret (webhooks/signing_secrets.go).
ALTER TABLE webhook_subscriptions ADD COLUMN older_secrets TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE webhook_subscriptions DROP COLUMN older_secrets;
