package commands

import (
	"context"

	"github.com/funnelhq/funnel/domain"
)

// contactIDFor is the id of the contact of a normalized email in an account: domain.ContactIDFor,
// unless the email's key changed when emails came to be compared by domain.EmailKey and a contact
// was created under its old key, which stays that email's contact (docs/integration-api.md
// "Contacts"). No command creates a contact under an old key, so whether one exists never
// changes from false to true, and reading it before the command's session is safe. Only an
// address whose keys differ pays the read.
func (r *Repository) contactIDFor(ctx context.Context, accountID, email string) (string, error) {
	legacy, changed := domain.LegacyContactIDFor(accountID, email)
	if changed {
		exists, err := r.exists(ctx, domain.ContactStream(legacy))
		if err != nil || exists {
			return legacy, err
		}
	}
	return domain.ContactIDFor(accountID, email), nil
}

// customerIDFor is contactIDFor for the customer of an email.
func (r *Repository) customerIDFor(ctx context.Context, accountID, email string) (string, error) {
	legacy, changed := domain.LegacyCustomerIDFor(accountID, email)
	if changed {
		exists, err := r.exists(ctx, domain.CustomerStream(legacy))
		if err != nil || exists {
			return legacy, err
		}
	}
	return domain.CustomerIDFor(accountID, email), nil
}

// exists tells whether an aggregate's stream holds its creation.
func (r *Repository) exists(ctx context.Context, agg interface {
	domain.Aggregate
	Exists() bool
}) (bool, error) {
	if _, _, err := r.read(ctx, agg); err != nil {
		return false, err
	}
	return agg.Exists(), nil
}
