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

// readModels are the service's projections on one database.
type readModels struct {
	accounts    *projections.Accounts
	tags        *projections.Tags
	contacts    *projections.Contacts
	crms        *projections.CRMs
	leads       *projections.Leads
	forms       *projections.Forms
	submissions *projections.FormSubmissions
	eventTypes  *projections.EventTypes
	bookings    *projections.Bookings
	products    *projections.Products
	customers   *projections.Customers
	payments    *projections.Transactions  // checkout transactions
	subs        *projections.Subscriptions // checkout subscriptions
	activations *projections.Activations
	timers      *projections.SubscriptionTimers
	// webhooks is a read model too: the subscription lists are served from its table.
	webhooks *webhooks.Projector
}

// newReadModels builds the projections; the webhook projector opens activation tokens and seals
// the delivery bodies that carry one with sealer, reports deliveries it gives up to observer and
// log, and tells wakeDispatcher when deliveries were recorded (all nil where no dispatcher runs:
// the operator commands only read the projections' names or rebuild other read models, and so
// need no server key).
func newReadModels(db *sqldb.DB, sealer webhooks.Sealer, observer webhooks.Observer, log *zap.Logger, wakeDispatcher func()) readModels {
	return readModels{
		accounts:    projections.NewAccounts(db.Read),
		tags:        projections.NewTags(db.Read),
		contacts:    projections.NewContacts(db.Read),
		crms:        projections.NewCRMs(db.Read),
		leads:       projections.NewLeads(db.Read),
		forms:       projections.NewForms(db.Read),
		submissions: projections.NewFormSubmissions(db.Read),
		eventTypes:  projections.NewEventTypes(db.Read),
		bookings:    projections.NewBookings(db.Read),
		products:    projections.NewProducts(db.Read),
		customers:   projections.NewCustomers(db.Read),
		payments:    projections.NewTransactions(db.Read),
		subs:        projections.NewSubscriptions(db.Read),
		activations: projections.NewActivations(db.Read),
		timers:      projections.NewSubscriptionTimers(db.Read),
		webhooks:    webhooks.NewProjector(db.Dialect, maxDeliveryAttempts, sealer, observer, log, wakeDispatcher),
	}
}

// all lists the projections in the order the pipeline runs them.
func (m readModels) all() []projections.Projection {
	return []projections.Projection{m.accounts, m.tags, m.contacts, m.crms, m.leads, m.forms, m.submissions, m.eventTypes, m.bookings, m.products,
		m.customers, m.payments, m.subs, m.activations, m.timers, m.webhooks}
}

// inline are the read models the event store applies in the transaction of each append
// (eventstore.InlineProjection): those a write's answer and its client read back at once, the
// contacts and the leads their tag automations open. Every process that appends to a database
// must apply the same ones.
func (m readModels) inline() []eventstore.InlineProjection {
	return []eventstore.InlineProjection{m.contacts, m.leads}
}

// InlineProjections returns the read models on db that every process appending to db must apply
// inline, the same list the service applies: for a tool that appends beside it (cmd/loadtest
// seeds the log so). A process that appends without them leaves them behind until the next
// append of one that applies them catches them up.
func InlineProjections(db *sqldb.DB) []eventstore.InlineProjection {
	return newReadModels(db, nil, nil, zap.NewNop(), nil).inline()
}

// relayed are the read models the relay applies: all but the inline ones.
func (m readModels) relayed() []projections.Projection {
	var out []projections.Projection
	for _, p := range m.all() {
		if p != projections.Projection(m.contacts) && p != projections.Projection(m.leads) {
			out = append(out, p)
		}
	}
	return out
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
func Rebuild(ctx context.Context, db *sqldb.DB, name string, progress func(pos, head int64)) (int64, error) {
	if err := db.RequireCurrentSchema(ctx); err != nil {
		return 0, err
	}
	store := eventstore.New(db)
	defer store.Close()
	all := newReadModels(db, nil, nil, nil, nil).all()
	names := make([]string, len(all))
	for i, p := range all {
		names[i] = p.Name()
		if p.Name() != name {
			continue
		}
		r, ok := p.(projections.Rebuildable)
		if !ok {
			return 0, fmt.Errorf("%s cannot be rebuilt: rebuilding it would send every delivery again", name)
		}
		return pipeline.Rebuild(ctx, db, store, r, progress)
	}
	return 0, fmt.Errorf("no projection %q; projections are %s", name, strings.Join(names, ", "))
}
