package eventstore

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// streamVersionKey is the unique (stream_id, version) of the events table, as PostgreSQL names it.
const streamVersionKey = "events_stream_id_version_key"

// isStreamVersionTaken tells whether an append failed on the unique (stream_id, version): another
// transaction appended to one of its streams after it read the stream's version.
func isStreamVersionTaken(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23505" && pgErr.ConstraintName == streamVersionKey
	}
	return strings.Contains(err.Error(), "UNIQUE constraint failed: events.stream_id, events.version")
}

// personKeyTaken is the primary key of person_keys, as PostgreSQL names it.
const personKeyTaken = "person_keys_pkey"

// isPersonKeyTaken tells whether an append failed storing a new person's key: the contact has one
// (or was erased) since the append looked (storeNewKeys).
func isPersonKeyTaken(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23505" && pgErr.ConstraintName == personKeyTaken
	}
	return strings.Contains(err.Error(), "UNIQUE constraint failed: person_keys.contact_id")
}
