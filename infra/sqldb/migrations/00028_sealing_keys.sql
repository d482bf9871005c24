-- +goose Up
-- The server keys that have sealed, by id (infra/sealing: 8 hex digits of the key's SHA-256,
-- never the key), in the order they first sealed (seq, not a time: the processes' clocks may
-- disagree), and when (sealed_at, unix ms, for operators). A process whose first key a key of a
-- higher seq replaced seals with that one, rather than seal the persons' keys and the signing
-- secrets back with the older key; one that lacks the newest key refuses to start
-- (infra/service/sealing_keys.go).
CREATE TABLE IF NOT EXISTS sealing_keys (
    key_id    TEXT   NOT NULL PRIMARY KEY,
    seq       BIGINT NOT NULL UNIQUE,
    sealed_at BIGINT NOT NULL
);

-- +goose Down
DROP TABLE IF EXISTS sealing_keys;
