-- +goose Up
-- The contact document is now the generated wire type (api/wire Contact), whose members encode
-- in alphabetical order rather than the order of the hand-written struct before it: the same
-- members and values, other bytes. Documents written before are dropped, so that a page of
-- contacts never mixes the two: those rows are shown from their columns until they are written
-- again or `funnel projections rebuild contacts` runs (migration 11).
UPDATE contacts SET document = NULL;

-- +goose Down
-- Nothing to undo: a NULL document is always valid.
SELECT 1;
