package eventstore

import (
	"context"
	"time"
)

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

// WindowStartProbe is the statement of each step of the search for a window's start.
const WindowStartProbe = windowStartProbe

// WindowStart is where the scans of a window that starts at since begin.
func (s *Store) WindowStart(ctx context.Context, since time.Time) (int64, error) {
	return s.windowStart(ctx, since)
}

// WindowSlack is how far before its window's start a scan may begin.
const WindowSlack = windowSlack
