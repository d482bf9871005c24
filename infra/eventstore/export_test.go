package eventstore

import (
	"context"
	"time"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// The statements of the write path, for the test of their query plans.
const (
	ReadStreamFromQuery = readStreamFrom
	ReadLogQuery        = readLog
	ReadLogBelowHorizon = readLogBelowHorizon
	PGStreamVersions    = pgStreamVersions
)

// The pages of a contact's history, both ways, the subscriptions its purchases started, and its
// customers and activations.
var (
	ContactHistory            = readContactHistory
	ContactHistoryNewestFirst = readContactHistoryNewestFirst
	ContactSubscriptions      = readContactSubscriptions
	ContactStreams            = readContactStreams
	LaterPersonalQuery        = laterPersonalQuery
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

// AccountTypeScan is one type's scan of the feed's and replays' read (ReadAccountEvents), for
// the test of its plans: $1 account, $2 after, $3 and $4 the time window, then on PostgreSQL $5
// the settled position, and the type last.
func AccountTypeScan(postgres bool) string {
	if postgres {
		return accountTypeScan(6, belowHorizonOr(5), 200)
	}
	return accountTypeScan(5, "", 200)
}

// The reads of persons' keys, for the test of their query plans.
const ReadKeyQuery = readKey

var OpenableAmong = openableAmong

// EraseKey is the statement that destroys a contact's key in an erasing append on PostgreSQL ($1
// the contact, $2 its account, $3 when).
var EraseKey = eraseKeyOf(sqldb.Postgres)

// AfterResealRead runs, when set, between each ResealPersonKeys batch's read and its write.
var AfterResealRead = &afterResealRead
