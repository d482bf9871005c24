package integration

import (
	"context"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections/paging"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/webhooks"
)

// The read models the handlers of the integration API read, each as much of it as they use.
// Lookups of one resource by id answer projections.ErrNotFound when there is none; lists answer
// a page and the cursor of the next one ("" on the last page).

// APIKeys finds the API key a request presents, by the hash of its secret.
type APIKeys interface {
	APIKeyByHash(ctx context.Context, hash string) (projections.APIKey, error)
}

// Contacts reads contacts.
type Contacts interface {
	Contact(ctx context.Context, id string) (projections.Contact, error)
	// ContactAt is Contact as of a position at least: a write's answer, built from what it wrote
	// where the read model kept it.
	ContactAt(ctx context.Context, id string, position int64) (projections.Contact, error)
	List(ctx context.Context, accountID string, f projections.ContactFilter, p paging.Page) ([]string, string, error)
}

// Tags lists an account's tags.
type Tags interface {
	List(ctx context.Context, accountID string, p paging.Page) ([]projections.Tag, string, error)
}

// CRMs reads CRM pipelines and their stages.
type CRMs interface {
	CRM(ctx context.Context, id string) (projections.CRM, error)
	List(ctx context.Context, accountID string, p paging.Page) ([]projections.CRM, string, error)
	Stages(ctx context.Context, crmID string, p paging.Page) ([]domain.Stage, string, error)
}

// Leads reads one lead.
type Leads interface {
	Lead(ctx context.Context, id string) (projections.Lead, error)
}

// Forms reads forms.
type Forms interface {
	Form(ctx context.Context, id string) (projections.Form, error)
	List(ctx context.Context, accountID string, p paging.Page) ([]projections.Form, string, error)
}

// Submissions reads one form submission.
type Submissions interface {
	Submission(ctx context.Context, id string) (projections.Submission, error)
}

// EventTypes reads calendars.
type EventTypes interface {
	EventType(ctx context.Context, id string) (projections.EventType, error)
	List(ctx context.Context, accountID string, p paging.Page) ([]projections.EventType, string, error)
}

// Bookings reads one booking.
type Bookings interface {
	Booking(ctx context.Context, id string) (projections.Booking, error)
}

// Products reads checkout products.
type Products interface {
	Product(ctx context.Context, id string) (projections.Product, error)
	List(ctx context.Context, accountID string, p paging.Page) ([]projections.Product, string, error)
}

// Samples are the sample payloads automation tools ask for when a REST Hook is set up
// (webhooks.ErrUnknownEvent for an event name that does not exist).
type Samples interface {
	For(ctx context.Context, accountID, eventName string, canRead func(domain.Scope) bool) ([]webhooks.Envelope, error)
}

// Customers reads checkout customers.
type Customers interface {
	Customer(ctx context.Context, id string) (projections.Customer, error)
	List(ctx context.Context, accountID string, f projections.CustomerFilter, p paging.Page) ([]projections.Customer, string, error)
}

// Transactions reads the payments of a customer.
type Transactions interface {
	OfCustomer(ctx context.Context, customerID string) ([]projections.Transaction, error)
}

// CheckoutSubscriptions reads the subscriptions of a customer.
type CheckoutSubscriptions interface {
	OfCustomer(ctx context.Context, customerID string) ([]projections.Subscription, error)
}

// Activations reads one SaaS signup activation.
type Activations interface {
	Activation(ctx context.Context, id string) (projections.Activation, error)
}
