-- +goose Up
-- An erasure deletes the person's rows from these read models by contact (projections: erased);
-- without an index each erasure read the whole table (every submission, booking and customer of
-- every account). Rebuilds copy them with their tables.
CREATE INDEX form_submissions_by_contact ON form_submissions (contact_id);
CREATE INDEX bookings_by_contact ON bookings (contact_id);
CREATE INDEX customers_by_contact ON customers (contact_id);

-- +goose Down
DROP INDEX customers_by_contact;
DROP INDEX bookings_by_contact;
DROP INDEX form_submissions_by_contact;
