package pipeline

import (
	"context"
	"database/sql"

	"github.com/funnelhq/funnel/domain"
)

// The interfaces the pipeline runs: the runtime owns them, and the read models (projections,
// the webhook projector) implement them without importing it.

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
