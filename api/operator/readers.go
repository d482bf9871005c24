package operator

import (
	"context"

	"github.com/funnelhq/funnel/domain"
)

// History reads an entity's history straight from the event log (the event store), the account
// of a stream ("" when there is none), and whether a contact was erased (a look-up by email steps
// over erased contacts: ContactIDForEmail). An interface, so that this package imports no
// adapter.
type History interface {
	Erased(ctx context.Context, contactID string) (bool, error)
	ReadContactHistory(ctx context.Context, accountID, contactID string, after int64, limit int) ([]domain.Recorded, error)
	ReadSubscriptionHistory(ctx context.Context, accountID, subscriptionID string, after int64, limit int) ([]domain.Recorded, error)
	// The same, newest first: the events before a position (0: from the head).
	ReadContactHistoryNewestFirst(ctx context.Context, accountID, contactID string, before int64, limit int) ([]domain.Recorded, error)
	ReadSubscriptionHistoryNewestFirst(ctx context.Context, accountID, subscriptionID string, before int64, limit int) ([]domain.Recorded, error)
	StreamAccount(ctx context.Context, streamID string) (string, error)
	// StreamsOfContact and ReadStream read a contact's customers and activations, whose later
	// events (a rename, a completion) hold the person's values without being in the contact's
	// history (the export).
	StreamsOfContact(ctx context.Context, accountID, contactID string) ([]string, error)
	// SubscriptionsOfContact finds the billing subscriptions of a contact's purchases, whose
	// SubscriptionStarted and SubscriptionRenewed hold the buyer's values without naming the
	// contact (the export).
	SubscriptionsOfContact(ctx context.Context, accountID, contactID string) ([]string, error)
	ReadStream(ctx context.Context, streamID string) ([]domain.Recorded, error)
}
