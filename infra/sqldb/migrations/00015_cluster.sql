-- +goose Up
-- Several serve processes on one PostgreSQL database (operator-api.md "Several processes"). Each
-- process says it is alive here about once a second (infra/cluster): GET /admin/v1/cluster lists
-- those seen within 10 s, with the work each runs now. Times are milliseconds since the epoch, by
-- the database's clock, so that the hosts' clocks need not agree.
CREATE TABLE cluster_processes (
    id           TEXT PRIMARY KEY,
    role         TEXT NOT NULL,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    started_at   BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL,
    runs         TEXT NOT NULL DEFAULT ''
);

-- One row per piece of work that must run on one process at a time (a projection, the webhook
-- projector, the timers): the process that holds it, and until when. The holder renews it every
-- second; a lease not renewed by its expiry (the process died, hung, or lost the database) is
-- taken over by another worker, which goes on from the work's checkpoint.
CREATE TABLE leases (
    name       TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);

-- +goose Down
DROP TABLE leases;
DROP TABLE cluster_processes;
