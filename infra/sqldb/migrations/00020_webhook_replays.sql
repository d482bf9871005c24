-- +goose Up
-- A replay of a window of a webhook subscription's events (POST
-- /api/v1/webhooks/subscriptions/:id/replay; webhooks/replays.go). A replay is recorded in
-- batches, each its own short transaction that also moves this row on (up_to, delivery_count), so
-- that the deliveries and the progress commit together. A row left 'recording' by a process that
-- stopped is resumed from up_to, under the same id (so the same delivery ids), once its claim ran
-- out: claimed_by is the attempt recording it, claimed_until (unix milliseconds) renewed by every
-- batch. since_at and until_at are unix milliseconds (until_at 0: no end); types is the JSON
-- array of the outbound types asked for ([]: every type the subscription receives).
-- idempotency_id is the Idempotency-Key claim of the request that asked for it (NULL without
-- one): a retry of that request answers this replay instead of recording another.
CREATE TABLE webhook_replays (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL,
    subscription_id TEXT NOT NULL,
    since_at        BIGINT NOT NULL,
    until_at        BIGINT NOT NULL,
    types           TEXT NOT NULL,
    idempotency_id  TEXT,
    up_to           BIGINT NOT NULL DEFAULT 0,
    delivery_count  BIGINT NOT NULL DEFAULT 0,
    state           TEXT NOT NULL,
    claimed_by      TEXT NOT NULL DEFAULT '',
    claimed_until   BIGINT NOT NULL DEFAULT 0,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
CREATE UNIQUE INDEX webhook_replays_idempotency ON webhook_replays (idempotency_id);
-- The replays still being recorded, for the worker that resumes those whose claim ran out.
CREATE INDEX webhook_replays_recording ON webhook_replays (claimed_until) WHERE state = 'recording';

-- +goose Down
DROP TABLE webhook_replays;
