-- +goose Up
-- Webhook subscriptions and the delivery outbox, both written by the webhook projector
-- (webhooks/projector.go) in the transaction that moves its checkpoint.
CREATE TABLE webhook_subscriptions (
    id                   TEXT   NOT NULL PRIMARY KEY,
    account_id           TEXT   NOT NULL,
    kind                 TEXT   NOT NULL,
    url                  TEXT   NOT NULL,
    events               TEXT   NOT NULL, -- JSON array
    filters              TEXT   NOT NULL, -- JSON object
    secret               TEXT   NOT NULL,
    previous_secret      TEXT   NOT NULL,
    previous_valid_until BIGINT NOT NULL, -- unix ms; the previous secret signs too until then
    status               TEXT   NOT NULL, -- active, disabled, deleted
    status_reason        TEXT   NOT NULL,
    created_at           BIGINT NOT NULL,
    updated_at           BIGINT NOT NULL,
    position             BIGINT NOT NULL
);
CREATE INDEX webhook_subscriptions_by_account ON webhook_subscriptions (account_id, status, position);

-- One row per (event, subscription). The body is the exact bytes every attempt sends.
CREATE TABLE webhook_deliveries (
    id               TEXT    NOT NULL PRIMARY KEY, -- derived from (event id, subscription id)
    account_id       TEXT    NOT NULL,
    subscription_id  TEXT    NOT NULL,
    event_id         TEXT    NOT NULL,
    event_type       TEXT    NOT NULL,
    event_position   BIGINT  NOT NULL,
    ordering_key     TEXT    NOT NULL, -- events with the same key reach a subscription in order ('' = none)
    body             TEXT    NOT NULL,
    status           TEXT    NOT NULL, -- pending, succeeded, failed
    attempts         INTEGER NOT NULL,
    max_attempts     INTEGER NOT NULL,
    next_attempt_at  BIGINT  NOT NULL,
    claimed_until    BIGINT  NOT NULL, -- a worker owns the delivery until then (0: nobody)
    last_status_code INTEGER NOT NULL,
    last_error       TEXT    NOT NULL,
    created_at       BIGINT  NOT NULL,
    updated_at       BIGINT  NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
CREATE INDEX webhook_deliveries_by_account ON webhook_deliveries (account_id, event_position, id);
CREATE INDEX webhook_deliveries_ordered ON webhook_deliveries (subscription_id, ordering_key, event_position);

CREATE TABLE webhook_attempts (
    delivery_id TEXT    NOT NULL,
    attempt     INTEGER NOT NULL,
    at          BIGINT  NOT NULL,
    status_code INTEGER NOT NULL, -- 0 when no response came
    error       TEXT    NOT NULL,
    duration_ms INTEGER NOT NULL,
    PRIMARY KEY (delivery_id, attempt)
);

-- Sample payloads come from an account's recent events of one type.
CREATE INDEX events_by_account_type ON events (account_id, type, position);

-- +goose Down
DROP INDEX events_by_account_type;
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_subscriptions;
