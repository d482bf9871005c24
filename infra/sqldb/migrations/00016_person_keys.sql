-- +goose Up
-- One key per person (contact) that the event log seals the person's values under
-- (infra/eventstore/personal_data.go). sealed_key is the key sealed with the server key, bound to
-- the contact; an erasure sets it to NULL and erased_at, in the transaction that appends
-- ContactErased: every value sealed under it is unreadable from then on. Not a read model: the
-- log cannot rebuild a destroyed key, which is the point. A migration down keeps the table:
-- without its keys the log's personal values are lost (hence IF NOT EXISTS on the way up again).
CREATE TABLE IF NOT EXISTS person_keys (
    contact_id TEXT   PRIMARY KEY,
    account_id TEXT   NOT NULL,
    sealed_key TEXT,
    erased_at  BIGINT
);

-- The contact of an activation, so that its erasure blanks the buyer's email in it. Rows written
-- before hold NULL: `funnel projections rebuild activations` fills them.
ALTER TABLE activations ADD COLUMN contact_id TEXT;
CREATE INDEX activations_by_contact ON activations (contact_id);

-- +goose Down
DROP INDEX activations_by_contact;
ALTER TABLE activations DROP COLUMN contact_id;
