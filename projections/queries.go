package projections

import "database/sql"

// Queries are the read models of this package on one database, one reader each: what the APIs
// read. A look-up of one row (Get) takes the account the request acts in and answers a domain
// NotFound or Forbidden error itself (ofAccount); a list takes the account and shows nothing of
// another. Each reader is also the projection that writes its read model (infra/service lists
// them once, with how each runs).
type Queries struct {
	Accounts      *Accounts
	Tags          *Tags
	Contacts      *Contacts
	CRMs          *CRMs
	Leads         *Leads
	Forms         *Forms
	Submissions   *FormSubmissions
	EventTypes    *EventTypes
	Bookings      *Bookings
	Products      *Products
	Customers     *Customers
	Transactions  *Transactions  // checkout payments
	Subscriptions *Subscriptions // checkout (billing) subscriptions
	Activations   *Activations
	Timers        *SubscriptionTimers
}

// NewQueries builds every read model of this package on db.
func NewQueries(db *sql.DB) Queries {
	return Queries{
		Accounts:      NewAccounts(db),
		Tags:          NewTags(db),
		Contacts:      NewContacts(db),
		CRMs:          NewCRMs(db),
		Leads:         NewLeads(db),
		Forms:         NewForms(db),
		Submissions:   NewFormSubmissions(db),
		EventTypes:    NewEventTypes(db),
		Bookings:      NewBookings(db),
		Products:      NewProducts(db),
		Customers:     NewCustomers(db),
		Transactions:  NewTransactions(db),
		Subscriptions: NewSubscriptions(db),
		Activations:   NewActivations(db),
		Timers:        NewSubscriptionTimers(db),
	}
}
