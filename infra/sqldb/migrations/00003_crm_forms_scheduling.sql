-- +goose Up
-- Read models of CRMs and leads, forms and their submissions, calendars and their bookings:
-- rebuilt from the log by the projections in projections/. Every row names its account
-- (DESIGN.md invariant 7). seq is the log position of the row's first event: lists page on it,
-- so creation order is log order and a cursor stays valid while writes go on.
CREATE TABLE crms (
    id         TEXT   NOT NULL PRIMARY KEY,
    account_id TEXT   NOT NULL,
    name       TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    seq        BIGINT NOT NULL
);
CREATE INDEX crms_by_account ON crms (account_id, seq);

CREATE TABLE crm_stages (
    id         TEXT    NOT NULL PRIMARY KEY,
    crm_id     TEXT    NOT NULL,
    account_id TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    sort_order INTEGER NOT NULL, -- 1-based position in the pipeline
    UNIQUE (crm_id, sort_order)
);

CREATE TABLE leads (
    id         TEXT   NOT NULL PRIMARY KEY,
    account_id TEXT   NOT NULL,
    crm_id     TEXT   NOT NULL,
    stage_id   TEXT   NOT NULL,
    contact_id TEXT   NOT NULL,
    title      TEXT   NOT NULL,
    amount     BIGINT NOT NULL, -- minor units of the account's currency
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    seq        BIGINT NOT NULL
);
CREATE INDEX leads_by_crm ON leads (account_id, crm_id, seq);
CREATE INDEX leads_by_contact ON leads (account_id, contact_id, seq);

CREATE TABLE forms (
    id         TEXT   NOT NULL PRIMARY KEY,
    account_id TEXT   NOT NULL,
    name       TEXT   NOT NULL,
    fields     TEXT   NOT NULL, -- JSON array of fields, in order
    tag_ids    TEXT   NOT NULL, -- JSON array: tags a submission applies
    created_at BIGINT NOT NULL,
    seq        BIGINT NOT NULL
);
CREATE INDEX forms_by_account ON forms (account_id, seq);

CREATE TABLE form_submissions (
    id           TEXT   NOT NULL PRIMARY KEY,
    account_id   TEXT   NOT NULL,
    form_id      TEXT   NOT NULL,
    contact_id   TEXT,           -- NULL when no answer gave an email
    submitted_at BIGINT NOT NULL,
    answers      TEXT   NOT NULL, -- JSON object: field id to value
    seq          BIGINT NOT NULL
);
CREATE INDEX form_submissions_by_form ON form_submissions (account_id, form_id, seq);

CREATE TABLE event_types (
    id               TEXT    NOT NULL PRIMARY KEY,
    account_id       TEXT    NOT NULL,
    name             TEXT    NOT NULL,
    duration_minutes INTEGER NOT NULL,
    meeting_url      TEXT    NOT NULL,
    questions        TEXT    NOT NULL, -- JSON array of fields, in order
    created_at       BIGINT  NOT NULL,
    seq              BIGINT  NOT NULL
);
CREATE INDEX event_types_by_account ON event_types (account_id, seq);

CREATE TABLE bookings (
    id            TEXT   NOT NULL PRIMARY KEY,
    account_id    TEXT   NOT NULL,
    event_type_id TEXT   NOT NULL,
    contact_id    TEXT,           -- NULL when no answer gave an email
    start_time    BIGINT NOT NULL,
    end_time      BIGINT NOT NULL,
    timezone      TEXT   NOT NULL,
    meeting_url   TEXT   NOT NULL,
    answers       TEXT   NOT NULL, -- JSON object: question id to answer
    created_at    BIGINT NOT NULL,
    seq           BIGINT NOT NULL
);
CREATE INDEX bookings_by_event_type ON bookings (account_id, event_type_id, seq);

-- +goose Down
DROP TABLE bookings;
DROP TABLE event_types;
DROP TABLE form_submissions;
DROP TABLE forms;
DROP TABLE leads;
DROP TABLE crm_stages;
DROP TABLE crms;
