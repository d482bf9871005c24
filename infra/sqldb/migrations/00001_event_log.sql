-- +goose Up
-- The event log: the only source of truth (DESIGN.md invariant 1). Rows are only ever inserted.
CREATE TABLE events (
    position        BIGINT  NOT NULL PRIMARY KEY, -- global order, dense, assigned under the head lock
    event_id        TEXT    NOT NULL UNIQUE,
    stream_id       TEXT    NOT NULL,
    version         BIGINT  NOT NULL,             -- 1-based position inside the stream
    type            TEXT    NOT NULL,
    schema_version  INTEGER NOT NULL,
    occurred_at     BIGINT  NOT NULL,             -- unix milliseconds, UTC
    account_id      TEXT    NOT NULL,
    contact_id      TEXT,                         -- the contact an event of another stream concerns
    data            TEXT    NOT NULL,
    metadata        TEXT    NOT NULL,
    UNIQUE (stream_id, version)
);
CREATE INDEX events_by_contact ON events (contact_id, position) WHERE contact_id IS NOT NULL;

-- One row holding the last position handed out. Appenders lock it for the length of their
-- transaction, so positions become visible in commit order and a reader never skips one.
CREATE TABLE event_log_head (
    id       INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    position BIGINT  NOT NULL
);
INSERT INTO event_log_head (id, position) VALUES (1, 0);

-- Where each projection is in the log, written in the same transaction as its read-model change.
CREATE TABLE projection_checkpoints (
    name       TEXT   NOT NULL PRIMARY KEY,
    position   BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

-- +goose Down
DROP TABLE projection_checkpoints;
DROP TABLE event_log_head;
DROP TABLE events;
