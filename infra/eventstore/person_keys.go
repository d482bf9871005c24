package eventstore

import "github.com/funnelhq/funnel/infra/sqldb"

// Where the persons' keys are read. Since migration 29 a key's row (person_key_rows) is keyed by
// the position of its contact's first event, and the person_keys view finds a contact's key
// through the log's (stream_id, version) index. One contact's key is read through the view
// (readKey). The keys of several contacts at once are read by keysAmong, which on SQLite spells
// the join out: analyzed while the log was small, SQLite planned the view over a list of contacts
// as a scan of the whole log (plans_test.go).

// readKey reads a contact's key, NULL once erased, and when it was erased ($1 the contact).
const readKey = `SELECT sealed_key, erased_at FROM person_keys WHERE contact_id = $1`

// ErasedAmong returns the statement, and its arguments, that lists which of contactIDs are erased
// (their key destroyed), one contact_id a row.
func ErasedAmong(dialect sqldb.Dialect, contactIDs []string) (string, []any) {
	return keysAmong(dialect, contactIDs, "contact_id", "sealed_key IS NULL")
}

// openableAmong returns the statement, and its arguments, that reads the live keys of
// contactIDs, as rows of (contact_id, sealed_key).
func openableAmong(dialect sqldb.Dialect, contactIDs []string) (string, []any) {
	return keysAmong(dialect, contactIDs, "contact_id, sealed_key", "sealed_key IS NOT NULL")
}

// keysAmong reads columns (of contact_id, sealed_key) of the keys of contactIDs that meet where
// (on sealed_key). On SQLite the CROSS JOINs fix the order SQLite reads in whatever its
// statistics say: the listed contacts, the first event of each on the stream index, its key on
// the table's rowid.
func keysAmong(dialect sqldb.Dialect, contactIDs []string, columns, where string) (string, []any) {
	anyOf, args := sqldb.AnyOf(dialect, "contact_id", 1, contactIDs)
	if dialect == sqldb.Postgres {
		return `SELECT ` + columns + ` FROM person_keys WHERE ` + where + ` AND ` + anyOf, args
	}
	return `SELECT ` + columns + ` FROM (
		SELECT e.stream_id AS contact_id, k.sealed_key AS sealed_key
		  FROM json_each(?1) AS ids CROSS JOIN events AS e CROSS JOIN person_key_rows AS k
		 WHERE e.stream_id = ids.value AND e.version = 1 AND k.first_position = e.position AND k.contact_id = e.stream_id
		   AND k.` + where + `)`, args
}
