// Package projections builds the read models every GET is served from. Each projection is a
// Watermill handler (infra/pipeline) that applies a batch of events inside the transaction that
// also moves its checkpoint, so a redelivered batch changes nothing twice. Each file holds one
// read model: its declaration (read_model.go: a name, its tables, one typed handler per event
// type), how those events change it, and the queries that read it.
package projections

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/funnelhq/funnel/domain"
)

// Projection turns events into a read model.
type Projection interface {
	// Name identifies the projection's checkpoint.
	Name() string
	// Handles tells whether Apply does anything with events of a type. A batch with none of
	// them moves the checkpoint without a transaction.
	Handles(eventType string) bool
	// Apply applies events, in position order, to the read model inside tx.
	Apply(ctx context.Context, tx *sql.Tx, batch []domain.Recorded) error
}

// Rebuildable is a projection whose read model can be rebuilt from the log into fresh copies of
// its tables (`funnel projections rebuild NAME`). Apply must touch no other tables.
type Rebuildable interface {
	Projection
	Tables() []string
	// EventTypes lists the types Handles accepts: a rebuild reads only those from the log.
	EventTypes() []string
	// ApplyDecoded is Apply for events decoded already (decoded[i] is events[i]).
	ApplyDecoded(ctx context.Context, tx *sql.Tx, events []domain.Recorded, decoded []domain.Event) error
}

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
