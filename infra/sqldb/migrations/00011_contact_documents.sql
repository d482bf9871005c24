-- +goose Up
-- Each contact as the integration API shows it, as JSON, written with the row by the contacts
-- projection: a page of contacts is read as these documents side by side (projections/
-- contact_document.go). Rows written before this migration have none (NULL) and are shown from
-- their columns until they are written again or `funnel projections rebuild contacts` runs.
ALTER TABLE contacts ADD COLUMN document TEXT;

-- +goose Down
ALTER TABLE contacts DROP COLUMN document;
