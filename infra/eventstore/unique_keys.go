package eventstore

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// uniqueKey is a unique key an append may fail on, as each database names it in its error.
type uniqueKey struct {
	pgConstraint  string // PostgreSQL's constraint or index name
	sqliteColumns string // SQLite's "table.column, table.column" list
}

// failedOn tells whether err is a unique violation of the key.
func (k uniqueKey) failedOn(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23505" && pgErr.ConstraintName == k.pgConstraint
	}
	return strings.Contains(err.Error(), "UNIQUE constraint failed: "+k.sqliteColumns)
}

// streamVersionKey is the unique (stream_id, version) of the events table.
var streamVersionKey = uniqueKey{"events_stream_id_version_key", "events.stream_id, events.version"}

// isStreamVersionTaken tells whether an append failed on the unique (stream_id, version): another
// transaction appended to one of its streams after it read the stream's version.
func isStreamVersionTaken(err error) bool { return streamVersionKey.failedOn(err) }

// personKey is the primary key of person_key_rows (the position of the contact's first event).
var personKey = uniqueKey{"person_key_rows_pkey", "person_key_rows.first_position"}

// isPersonKeyTaken tells whether an append failed storing a new person's key: the contact has one
// (or was erased) since the append looked (storeNewKeys).
func isPersonKeyTaken(err error) bool { return personKey.failedOn(err) }

// isKeyWithoutFirstEvent tells whether an append failed storing a new person's key because the
// contact's first event was not in the log as the append saw it (storeNewKeys): on PostgreSQL
// its position was NULL, which the primary key refuses, for instance while the append creating
// the contact has yet to commit.
func isKeyWithoutFirstEvent(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == "23502" && pgErr.TableName == "person_key_rows" && pgErr.ColumnName == "first_position"
	}
	return errors.Is(err, errKeyWithoutFirstEvent)
}
