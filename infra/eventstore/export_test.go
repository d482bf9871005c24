package eventstore

// The statements of the write path, for the test of their query plans.
const (
	ReadStreamFromQuery = readStreamFrom
	ReadLogQuery        = readLog
	ReadLogBelowHorizon = readLogBelowHorizon
	PGStreamVersions    = pgStreamVersions
)

// The pages of a contact's history, both ways.
var (
	ContactHistory            = readContactHistory
	ContactHistoryNewestFirst = readContactHistoryNewestFirst
)

// SQLiteVersionsOf is the versions statement of an SQLite append for n streams.
var SQLiteVersionsOf = sqliteVersionsOf

// ReadRangeQuery is the statement of a rebuild's window read for n types.
var ReadRangeQuery = readRange
