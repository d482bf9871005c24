package eventstore

// The statements of the write path, for the test of their query plans.
const (
	ReadStreamFromQuery = readStreamFrom
	ReadLogQuery        = readLog
	PGStreamVersions    = pgStreamVersions
)

// SQLiteVersionsOf is the versions statement of an SQLite append for n streams.
var SQLiteVersionsOf = sqliteVersionsOf
