-- +goose Up
-- The Idempotency-Key response cache (infra/idempotency/store.go). It is not state of the
-- service and not a read model: it holds what the API answered to a request, for 24 hours, so
-- that a retry of it is answered the same without being performed again. The state changes
-- themselves are in the event log, as always.
CREATE TABLE idempotency_keys (
    scope        TEXT    NOT NULL, -- whose keys: account:<id> (integration API), operator:<token digest>
    key_hash     TEXT    NOT NULL, -- SHA-256 of the Idempotency-Key (hex): the key itself is not kept
    request_hash TEXT    NOT NULL, -- SHA-256 of method, path, query and body: "the same request"
    claim_id     TEXT    NOT NULL, -- stamped on the events the request appends (events.idempotency_id)
    state        TEXT    NOT NULL, -- running, performed (its outcome kept, no answer yet), done
    attempt      TEXT    NOT NULL, -- the attempt that holds the lease
    lease_until  BIGINT  NOT NULL, -- unix ms: a running or performed request is in progress until then
    outcome      TEXT    NOT NULL, -- performed: the results of its commands, sealed
    status       INTEGER NOT NULL, -- done: the answer
    content_type TEXT    NOT NULL,
    body         TEXT    NOT NULL, -- sealed
    created_at   BIGINT  NOT NULL, -- unix ms of the first use: the key is kept 24 hours from then
    PRIMARY KEY (scope, key_hash)
);
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);

-- The first event of a write performed under an Idempotency-Key carries the key's claim id: the
-- log holds at most one write per claim, so two attempts of one request can never both
-- perform it, whatever their timing, process or crash.
ALTER TABLE events ADD COLUMN idempotency_id TEXT;
CREATE UNIQUE INDEX events_by_idempotency_id ON events (idempotency_id) WHERE idempotency_id IS NOT NULL;

-- +goose Down
DROP INDEX events_by_idempotency_id;
ALTER TABLE events DROP COLUMN idempotency_id;
DROP TABLE idempotency_keys;
