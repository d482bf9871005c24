-- +goose Up
-- The server keys that have sealed, by id (infra/sealing: 8 hex digits of the key's SHA-256,
-- never the key), with when a process first sealed with each: the order of the rotations. A
-- process started with FUNNEL_SECRET_KEY listing first a key that a later one replaced (a restart
-- with the configuration of before a rotation) seals with the newer key it also lists, rather
-- than seal the persons' keys and the signing secrets back with the older one
-- (infra/service/sealing_keys.go).
CREATE TABLE IF NOT EXISTS sealing_keys (
    key_id          TEXT   NOT NULL PRIMARY KEY,
    first_sealed_at BIGINT NOT NULL
);

-- +goose Down
DROP TABLE IF EXISTS sealing_keys;
