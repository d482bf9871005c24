// Package projections builds the read models every GET is served from. Each projection is a
// Watermill handler (it implements infra/pipeline's Projection) that applies a batch of events
// inside the transaction that also moves its checkpoint, so a redelivered batch changes nothing twice. Each file holds one
// read model: its declaration (read_model.go: a name, its tables, one typed handler per event
// type), how those events change it, and the queries that read it.
package projections

import (
	"database/sql"
	"errors"
	"time"
)

// ErrNotFound is returned by queries for a row that does not exist.
var ErrNotFound = errors.New("projections: not found")

// millis is how read models store times: unix milliseconds, UTC.
func millis(t time.Time) int64 { return t.UnixMilli() }

// fromMillis turns stored milliseconds back into a UTC time.
func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return err
}
