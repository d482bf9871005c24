-- +goose Up
-- The oldest binary that may run on this schema (infra/sqldb/compatibility.go): the number of the
-- last migration applied that binaries older than it cannot run beside. Each binary that migrates
-- writes it; a binary whose own migrations end below it refuses the database, and one whose
-- migrations end at or above it runs, however many additive migrations a newer release applied.
CREATE TABLE IF NOT EXISTS schema_compatibility (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    oldest_binary BIGINT NOT NULL
);

-- +goose Down
DROP TABLE IF EXISTS schema_compatibility;
