package operator

import (
	"context"

	"github.com/funnelhq/funnel/domain"
)

// HistoryReader reads a page of an entity's history from the log.
type HistoryReader func(ctx context.Context, accountID, id string, after int64, limit int) ([]domain.Recorded, error)

// ContactIDForEmail is the contact whose history a look-up by email shows: the contact created
// under the email's old key, when the normalisation changed it and that contact has a history
// (domain.LegacyContactIDFor), as commands find it; else domain.ContactIDFor.
func ContactIDForEmail(ctx context.Context, accountID, email string, read HistoryReader) (string, error) {
	if legacy, changed := domain.LegacyContactIDFor(accountID, email); changed {
		events, err := read(ctx, accountID, legacy, 0, 1)
		if err != nil || len(events) > 0 {
			return legacy, err
		}
	}
	return domain.ContactIDFor(accountID, email), nil
}
