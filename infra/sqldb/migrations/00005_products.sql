-- +goose Up
-- Read model of checkout products (projections/products.go), rebuilt from the log. Every row
-- names its account (DESIGN.md invariant 7); seq is the log position of ProductCreated, so lists
-- page in creation order. A product never changes once created and its tiers and bumps are only
-- ever read with it, so they are kept as JSON beside it rather than in tables of their own.
CREATE TABLE products (
    id                  TEXT   NOT NULL PRIMARY KEY,
    account_id          TEXT   NOT NULL,
    name                TEXT   NOT NULL,
    internal_name       TEXT   NOT NULL,
    forwarding          TEXT   NOT NULL, -- none or saas_signup
    activation_base_url TEXT   NOT NULL, -- '' unless saas_signup
    pricing_tiers       TEXT   NOT NULL, -- JSON array of tiers, by index
    bumps               TEXT   NOT NULL, -- JSON array of bumps, by index
    created_at          BIGINT NOT NULL,
    seq                 BIGINT NOT NULL
);
CREATE INDEX products_by_account ON products (account_id, seq);

-- +goose Down
DROP TABLE products;
