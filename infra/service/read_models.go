package service

import (
	"context"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/pipeline"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/webhooks"
)

// readModels are the service's read models on one database: the queries of each (what the APIs
// read, projections.Queries; the reader and the projection are one value) and the webhook
// projector, whose subscription list the APIs read through webhooks.Subscriptions.
type readModels struct {
	queries  projections.Queries
	webhooks *webhooks.Projector
}

// newReadModels builds the projections; the webhook projector opens activation tokens and seals
// the delivery bodies that carry one with sealer, reports deliveries it gives up to observer and
// log, and tells wakeDispatcher when deliveries were recorded (all nil where no dispatcher runs:
// the operator commands only read the projections' names or rebuild other read models, and so
// need no server key).
func newReadModels(db *sqldb.DB, sealer webhooks.Sealer, observer webhooks.Observer, log *zap.Logger, wakeDispatcher func()) readModels {
	return readModels{
		queries:  projections.NewQueries(db.Read),
		webhooks: webhooks.NewProjector(db.Dialect, maxDeliveryAttempts, sealer, observer, log, wakeDispatcher),
	}
}

// registered is one read model of the service: its projection (whose Name is the read model's
// name and checkpoint), whether it runs inline (projections.ReadModel.Inline), and its tables.
type registered struct {
	projection pipeline.Projection
	inline     bool
	tables     []string
}

// registry lists every read model of the service once, in the order the pipeline runs them: the
// registry of the projections package (projections.Queries.ReadModels), then the webhook
// projector. inline, relayed, the rebuildable tables and the tests that compare them with the
// schema all read it.
func (m readModels) registry() []registered {
	var out []registered
	for _, r := range m.queries.ReadModels() {
		out = append(out, registered{projection: r.Projection.(pipeline.Rebuildable), inline: r.Inline, tables: r.Projection.Tables()})
	}
	// The webhook outbox cannot be rebuilt: its deliveries would all be sent again.
	return append(out, registered{projection: m.webhooks, tables: webhooks.Tables})
}

// all lists the projections in the order the pipeline runs them.
func (m readModels) all() []pipeline.Projection {
	var out []pipeline.Projection
	for _, r := range m.registry() {
		out = append(out, r.projection)
	}
	return out
}

// inline are the read models the event store applies in the transaction of each append.
func (m readModels) inline() []eventstore.InlineProjection {
	var out []eventstore.InlineProjection
	for _, r := range m.registry() {
		if r.inline {
			out = append(out, r.projection.(eventstore.InlineProjection))
		}
	}
	return out
}

// relayed are the read models the relay applies: all but the inline ones.
func (m readModels) relayed() []pipeline.Projection {
	var out []pipeline.Projection
	for _, r := range m.registry() {
		if !r.inline {
			out = append(out, r.projection)
		}
	}
	return out
}

// RebuildableTables are the tables of the read models a rebuild from the log reproduces, as the
// registry lists them: what two databases of one dialect with the same log must hold alike
// (tests compare them). Each is keyed by an id column.
func RebuildableTables(db *sqldb.DB) []string {
	var out []string
	for _, r := range newReadModels(db, nil, nil, zap.NewNop(), nil).registry() {
		if _, ok := r.projection.(pipeline.Rebuildable); ok {
			out = append(out, r.tables...)
		}
	}
	return out
}

// InlineProjections returns the read models on db that every process appending to db must apply
// inline, the same list the service applies: for a tool that appends beside it (cmd/loadtest
// seeds the log so). A process that appends without them leaves them behind until the next
// append of one that applies them catches them up.
func InlineProjections(db *sqldb.DB) []eventstore.InlineProjection {
	return newReadModels(db, nil, nil, zap.NewNop(), nil).inline()
}

// ProjectionStatus tells how far each projection is, and the log's head (`funnel projections
// list`). It only reads db, so it runs beside a serving process.
func ProjectionStatus(ctx context.Context, db *sqldb.DB) (int64, []pipeline.Status, error) {
	return pipeline.Statuses(ctx, db, newReadModels(db, nil, nil, nil, nil).all())
}

// Rebuild rebuilds one read model from the log and swaps it in (pipeline.Rebuild), on a database
// that a serving process may be using (`funnel projections rebuild`): it needs the schema as this
// binary knows it and changes it in no other way. The webhook outbox cannot be rebuilt: its
// deliveries would all be sent again.
//
// secretKey is FUNNEL_SECRET_KEY ("": the key file of a SQLite database), which opens the
// personal values the log keeps sealed (OpenLog).
func Rebuild(ctx context.Context, db *sqldb.DB, secretKey, name string, progress func(pos, head int64)) (int64, error) {
	if err := db.RequireCurrentSchema(ctx); err != nil {
		return 0, err
	}
	store, err := OpenLog(ctx, db, secretKey)
	if err != nil {
		return 0, err
	}
	defer store.Close()
	all := newReadModels(db, nil, nil, nil, nil).all()
	names := make([]string, len(all))
	for i, p := range all {
		names[i] = p.Name()
		if p.Name() != name {
			continue
		}
		r, ok := p.(pipeline.Rebuildable)
		if !ok {
			return 0, fmt.Errorf("%s cannot be rebuilt: rebuilding it would send every delivery again", name)
		}
		return pipeline.Rebuild(ctx, db, store, r, progress)
	}
	return 0, fmt.Errorf("no projection %q; projections are %s", name, strings.Join(names, ", "))
}
