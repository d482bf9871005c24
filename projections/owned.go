package projections

import (
	"errors"

	"github.com/funnelhq/funnel/domain"
)

// ofAccount is the outcome of a look-up of one row by id for the account a request acts in
// (decisions.md "General", both APIs): the row when it is the account's, a domain NotFound
// "<what> not found" when it exists nowhere, a domain Forbidden "<what> belongs to another
// account" when another account owns it (ids are unique across accounts, so it is that one and no
// other). The look-ups the APIs call (Get) all answer through it, so tenancy is the read side's
// rule and no handler has to remember it.
func ofAccount[T any](row T, err error, ownerID, accountID, what string) (T, error) {
	var zero T
	switch {
	case errors.Is(err, ErrNotFound):
		return zero, domain.NotFound("%s not found", what)
	case err != nil:
		return zero, err
	case ownerID != accountID:
		return zero, domain.Forbidden("%s belongs to another account", what)
	}
	return row, nil
}
