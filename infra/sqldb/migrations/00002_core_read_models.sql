-- +goose Up
-- Read models of the core: rebuilt from the log by the projections in projections/.
CREATE TABLE accounts (
    id         TEXT   NOT NULL PRIMARY KEY,
    name       TEXT   NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id         TEXT   NOT NULL PRIMARY KEY,
    account_id TEXT   NOT NULL,
    name       TEXT   NOT NULL,
    scopes     TEXT   NOT NULL, -- JSON array
    key_hash   TEXT   NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX api_keys_by_account ON api_keys (account_id, created_at);

CREATE TABLE custom_fields (
    id         TEXT   NOT NULL PRIMARY KEY,
    account_id TEXT   NOT NULL,
    name       TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    position   BIGINT NOT NULL
);
CREATE INDEX custom_fields_by_account ON custom_fields (account_id, position);

CREATE TABLE tags (
    id          TEXT    NOT NULL PRIMARY KEY,
    account_id  TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    name_key    TEXT    NOT NULL,
    sort_order  INTEGER NOT NULL,
    automations TEXT    NOT NULL, -- JSON array
    created_at  BIGINT  NOT NULL,
    UNIQUE (account_id, name_key)
);
CREATE INDEX tags_by_order ON tags (account_id, sort_order, name_key, id);

CREATE TABLE contacts (
    id            TEXT   NOT NULL PRIMARY KEY,
    account_id    TEXT   NOT NULL,
    email         TEXT   NOT NULL,
    email_key     TEXT   NOT NULL,
    first_name    TEXT   NOT NULL,
    last_name     TEXT   NOT NULL,
    phone         TEXT   NOT NULL,
    tag_ids       TEXT   NOT NULL, -- JSON array, in the order the tags were applied
    custom_fields TEXT   NOT NULL, -- JSON object
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    seq           BIGINT NOT NULL, -- log position of ContactCreated: the newest-first order
    UNIQUE (account_id, email_key)
);
CREATE INDEX contacts_newest_first ON contacts (account_id, seq);

-- +goose Down
DROP TABLE contacts;
DROP TABLE tags;
DROP TABLE custom_fields;
DROP TABLE api_keys;
DROP TABLE accounts;
