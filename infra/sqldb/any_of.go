package sqldb

import (
	"encoding/json"
	"strconv"
)

// AnyOf returns the condition that column holds one of values, and its arguments, its parameter
// numbered from ($from on PostgreSQL, ?from on SQLite), wherever it stands in the text. It is one parameter,
// so that the statement's text is the same however many values it takes: pgx prepares every text
// it sees, in a cache of each connection that every other statement shares, and a list whose
// length varies (a rebuild's window of contacts, a claim's deliveries) filled it with texts used
// once; SQLite parses a text each time it runs unless it is kept prepared (sqldb.Query), which a
// text per length would defeat. On PostgreSQL it is an array, `column = ANY($from)`; on SQLite a
// JSON array, `column IN (SELECT value FROM json_each(?from))`, which its planner matches on the
// column's index as it did an IN list. values are ids, valid UTF-8 (JSON would replace a byte
// that is not).
func AnyOf(dialect Dialect, column string, from int, values []string) (string, []any) {
	if values == nil {
		values = []string{} // an empty array: pgx sends nil as NULL, and NOT (x = ANY(NULL)) is not true
	}
	if dialect == Postgres {
		return column + " = ANY(" + placeholder(dialect, from) + ")", []any{values}
	}
	list, err := json.Marshal(values)
	if err != nil { // strings always encode
		panic(err)
	}
	// ?N, not ?: SQLite numbers a bare ? one past the largest number before it in the text, so
	// a list that stands before an earlier parameter ($3 in a LIMIT after it) would take its value.
	return column + " IN (SELECT value FROM json_each(?" + strconv.Itoa(from) + "))", []any{string(list)}
}
