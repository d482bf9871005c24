-- +goose Up
-- Read models of checkout payments (projections/customers.go, transactions.go, subscriptions.go,
-- activations.go), rebuilt from the log. Every row names its account (DESIGN.md invariant 7);
-- seq is the log position of the row's first event. Times are unix milliseconds, 0 for none.

-- One customer per account and email (the stream id is derived from both, domain.CustomerIDFor);
-- lists run newest first, optionally narrowed to one email_key.
CREATE TABLE customers (
    id         TEXT   NOT NULL PRIMARY KEY,
    account_id TEXT   NOT NULL,
    email      TEXT   NOT NULL, -- as the first purchase spelt it
    email_key  TEXT   NOT NULL, -- lower-cased, for the email filter
    name       TEXT   NOT NULL,
    contact_id TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    seq        BIGINT NOT NULL
);
CREATE INDEX customers_newest_first ON customers (account_id, seq);
CREATE INDEX customers_by_email ON customers (account_id, email_key);

-- Payments: a purchase or a rebill, and how much of it was refunded.
CREATE TABLE transactions (
    id              TEXT   NOT NULL PRIMARY KEY,
    account_id      TEXT   NOT NULL,
    customer_id     TEXT   NOT NULL,
    kind            TEXT   NOT NULL, -- purchase or rebill
    product_id      TEXT   NOT NULL,
    pricing_tier_id TEXT   NOT NULL,
    bump_ids        TEXT   NOT NULL, -- JSON array
    txn_id          TEXT   NOT NULL, -- the processor's id
    processor       TEXT   NOT NULL,
    amount          BIGINT NOT NULL, -- minor units
    currency        TEXT   NOT NULL,
    refunded        BIGINT NOT NULL, -- minor units refunded so far
    status          TEXT   NOT NULL, -- succeeded, partially_refunded or refunded
    subscription_id TEXT   NOT NULL, -- '' for a one-time tier
    paid_at         BIGINT NOT NULL,
    seq             BIGINT NOT NULL
);
CREATE INDEX transactions_by_customer ON transactions (customer_id, seq);

-- Subscriptions of recurring and split tiers.
CREATE TABLE subscriptions (
    id                   TEXT    NOT NULL PRIMARY KEY,
    account_id           TEXT    NOT NULL,
    customer_id          TEXT    NOT NULL,
    product_id           TEXT    NOT NULL,
    pricing_tier_id      TEXT    NOT NULL,
    interval_unit        TEXT    NOT NULL, -- month, year or split
    installments         INTEGER NOT NULL, -- 0 unless split
    payments             INTEGER NOT NULL,
    amount               BIGINT  NOT NULL, -- of each renewal, minor units
    currency             TEXT    NOT NULL,
    processor            TEXT    NOT NULL,
    status               TEXT    NOT NULL, -- active, completed or cancelled
    cancel_at_period_end INTEGER NOT NULL, -- 0 or 1
    current_period_end   BIGINT  NOT NULL,
    started_at           BIGINT  NOT NULL,
    ended_at             BIGINT  NOT NULL, -- cancelled or completed at; 0 while active
    seq                  BIGINT  NOT NULL
);
CREATE INDEX subscriptions_by_customer ON subscriptions (customer_id, seq);

-- SaaS signup activations. The row never holds the token nor its hash: the id is derived from
-- the token (domain.ActivationIDFor), so whoever holds a token finds its row.
CREATE TABLE activations (
    id                  TEXT   NOT NULL PRIMARY KEY,
    account_id          TEXT   NOT NULL,
    customer_id         TEXT   NOT NULL,
    email               TEXT   NOT NULL,
    product_id          TEXT   NOT NULL,
    product_name        TEXT   NOT NULL,
    activation_base_url TEXT   NOT NULL,
    transaction_id      TEXT   NOT NULL,
    subscription_id     TEXT   NOT NULL,
    status              TEXT   NOT NULL, -- pending, completed or expired
    external_user_id    TEXT   NOT NULL,
    issued_at           BIGINT NOT NULL,
    expires_at          BIGINT NOT NULL,
    completed_at        BIGINT NOT NULL, -- 0 unless completed
    seq                 BIGINT NOT NULL
);

-- +goose Down
DROP TABLE activations;
DROP TABLE subscriptions;
DROP TABLE transactions;
DROP TABLE customers;
