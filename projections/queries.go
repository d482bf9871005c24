package projections

import "database/sql"

// Queries are the read models of this package on one database, one reader each: what the APIs
// read. A look-up of one row (Get) takes the account the request acts in and answers a domain
// NotFound or Forbidden error itself (ofAccount); a list takes the account and shows nothing of
// another. Each reader is also the projection that writes its read model; ReadModels lists them
// once, with how each runs.
type Queries struct {
	Accounts             *Accounts
	Tags                 *Tags
	Contacts             *Contacts
	CRMs                 *CRMs
	Leads                *Leads
	Forms                *Forms
	Submissions          *FormSubmissions
	Calendars            *Calendars
	Bookings             *Bookings
	Products             *Products
	Customers            *Customers
	Transactions         *Transactions         // checkout payments
	BillingSubscriptions *BillingSubscriptions // checkout (billing) subscriptions
	Activations          *Activations
	Timers               *SubscriptionTimers
}

// NewQueries builds every read model of this package on db.
func NewQueries(db *sql.DB) Queries {
	return Queries{
		Accounts:             NewAccounts(db),
		Tags:                 NewTags(db),
		Contacts:             NewContacts(db),
		CRMs:                 NewCRMs(db),
		Leads:                NewLeads(db),
		Forms:                NewForms(db),
		Submissions:          NewFormSubmissions(db),
		Calendars:            NewCalendars(db),
		Bookings:             NewBookings(db),
		Products:             NewProducts(db),
		Customers:            NewCustomers(db),
		Transactions:         NewTransactions(db),
		BillingSubscriptions: NewBillingSubscriptions(db),
		Activations:          NewActivations(db),
		Timers:               NewSubscriptionTimers(db),
	}
}

// ReadModel is one entry of the registry of read models (Queries.ReadModels).
type ReadModel struct {
	// Projection writes the read model's tables and is its reader (the Queries field it is);
	// its Name is the read model's name and checkpoint. It implements infra/pipeline's
	// Rebuildable.
	Projection interface {
		Name() string
		Tables() []string
	}
	// Inline read models are applied by the event store in the transaction of each append
	// (eventstore.InlineProjection): those a write's answer and its client read back at once,
	// the contacts and the leads their tag automations open. Every process that appends to a
	// database must apply the same ones. The relay applies the others after the append.
	Inline bool
}

// ReadModels is the registry: every read model of this package once, in the order the pipeline
// runs them. To add a read model, add its reader to Queries and NewQueries, and its entry here;
// the event store's inline list, the relay's, `funnel projections`, and the tests that compare
// the tables with the schema all read this list (infra/service/read_models.go adds the webhook
// projector).
func (q Queries) ReadModels() []ReadModel {
	return []ReadModel{
		{Projection: q.Accounts}, {Projection: q.Tags}, {Projection: q.Contacts, Inline: true}, {Projection: q.CRMs},
		{Projection: q.Leads, Inline: true}, {Projection: q.Forms}, {Projection: q.Submissions}, {Projection: q.Calendars},
		{Projection: q.Bookings}, {Projection: q.Products}, {Projection: q.Customers}, {Projection: q.Transactions},
		{Projection: q.BillingSubscriptions}, {Projection: q.Activations}, {Projection: q.Timers},
	}
}
