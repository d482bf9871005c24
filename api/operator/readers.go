package operator

import (
	"context"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections/paging"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/webhooks"
)

// The read models the handlers of the operator API read, each as much of it as they use.
// Lookups of one resource by id answer projections.ErrNotFound (webhooks.ErrNotFound in the
// webhook tables) when there is none; lists answer a page and the cursor of the next one ("" on
// the last page).

// Accounts reads accounts, their API keys and their custom fields.
type Accounts interface {
	Account(ctx context.Context, id string) (projections.Account, error)
	APIKeyByHash(ctx context.Context, hash string) (projections.APIKey, error)
	APIKey(ctx context.Context, id string) (projections.APIKey, error)
	APIKeys(ctx context.Context, accountID string, p paging.Page) ([]projections.APIKey, string, error)
	CustomField(ctx context.Context, accountID, id string) (projections.CustomField, error)
	CustomFields(ctx context.Context, accountID string, p paging.Page) ([]projections.CustomField, string, error)
}

// Tags reads tags with their automations.
type Tags interface {
	Tag(ctx context.Context, id string) (projections.Tag, error)
	List(ctx context.Context, accountID string, p paging.Page) ([]projections.Tag, string, error)
}

// CRMs reads CRM pipelines.
type CRMs interface {
	CRM(ctx context.Context, id string) (projections.CRM, error)
	List(ctx context.Context, accountID string, p paging.Page) ([]projections.CRM, string, error)
}

// Leads lists an account's leads.
type Leads interface {
	List(ctx context.Context, accountID string, f projections.LeadFilter, p paging.Page) ([]projections.Lead, string, error)
}

// Forms reads forms.
type Forms interface {
	Form(ctx context.Context, id string) (projections.Form, error)
	List(ctx context.Context, accountID string, p paging.Page) ([]projections.Form, string, error)
}

// Submissions lists a form's submissions.
type Submissions interface {
	List(ctx context.Context, accountID, formID string, p paging.Page) ([]projections.Submission, string, error)
}

// EventTypes reads calendars.
type EventTypes interface {
	EventType(ctx context.Context, id string) (projections.EventType, error)
	List(ctx context.Context, accountID string, p paging.Page) ([]projections.EventType, string, error)
}

// Bookings lists a calendar's bookings.
type Bookings interface {
	List(ctx context.Context, accountID, eventTypeID string, p paging.Page) ([]projections.Booking, string, error)
}

// Products reads checkout products.
type Products interface {
	Product(ctx context.Context, id string) (projections.Product, error)
	List(ctx context.Context, accountID string, p paging.Page) ([]projections.Product, string, error)
}

// Customers reads one checkout customer.
type Customers interface {
	Customer(ctx context.Context, id string) (projections.Customer, error)
}

// Transactions reads one checkout payment.
type Transactions interface {
	Transaction(ctx context.Context, id string) (projections.Transaction, error)
}

// BillingSubscriptions reads one checkout subscription.
type BillingSubscriptions interface {
	Subscription(ctx context.Context, id string) (projections.Subscription, error)
}

// Subscriptions reads webhook subscriptions (the webhook projector's table).
type Subscriptions interface {
	Get(ctx context.Context, id string) (webhooks.Subscription, error)
	List(ctx context.Context, accountID, kind string, p paging.Page) ([]webhooks.Subscription, string, error)
}

// Deliveries reads the webhook delivery log and sends a delivery again.
type Deliveries interface {
	List(ctx context.Context, accountID string, f webhooks.DeliveryFilter, p paging.Page) ([]webhooks.Delivery, string, error)
	Retry(ctx context.Context, accountID, id string) (webhooks.Delivery, error)
}

// History reads an entity's history straight from the event log, and the account of a stream
// ("" when there is none).
type History interface {
	ReadContactHistory(ctx context.Context, accountID, contactID string, after int64, limit int) ([]domain.Recorded, error)
	ReadSubscriptionHistory(ctx context.Context, accountID, subscriptionID string, after int64, limit int) ([]domain.Recorded, error)
	StreamAccount(ctx context.Context, streamID string) (string, error)
}
