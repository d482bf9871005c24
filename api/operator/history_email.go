package operator

import (
	"context"

	"github.com/funnelhq/funnel/domain"
)

// HistoryReader reads a page of an entity's history from the log.
type HistoryReader func(ctx context.Context, accountID, id string, after int64, limit int) ([]domain.Recorded, error)

// EmailContacts is what finds the contact of an email in the log (the event store): whether a
// contact has a history, and whether it was erased.
type EmailContacts interface {
	ReadContactHistory(ctx context.Context, accountID, contactID string, after int64, limit int) ([]domain.Recorded, error)
	Erased(ctx context.Context, contactID string) (bool, error)
}

// ContactIDForEmail is the contact whose history a look-up by email shows: the email's current
// contact, as commands find it (domain.CurrentContactID): the contact created under the email's
// old key, when the normalisation changed it and that contact has a history; else
// domain.ContactIDFor; and past every erased contact of the email, the next. An erased contact is
// not found by its email (decisions.md "Erasure": lists and filters don't find it; its history
// stays readable by its id): an email whose contacts were all erased finds one with no history,
// answered as an unknown email is.
func ContactIDForEmail(ctx context.Context, accountID, email string, log EmailContacts) (string, error) {
	hasHistory := func(id string) (bool, error) {
		events, err := log.ReadContactHistory(ctx, accountID, id, 0, 1)
		return len(events) > 0, err
	}
	erased := func(id string) (bool, error) { return log.Erased(ctx, id) }
	id, _, err := domain.CurrentContactID(accountID, email, hasHistory, erased)
	return id, err
}
