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
//
// An erased contact's id is spent: the email's contact is then the next id of the email
// (domain.ContactIDAfterErasures), a new contact with nothing of the old one's.
func (r *Repository) contactIDFor(ctx context.Context, accountID, email string) (string, error) {
	id, _, err := r.contactIDAndErasures(ctx, accountID, email)
	return id, err
}

// guessContactID is contactIDFor for a command that takes the contact for new without reading it
// (session.mayBeNew): when this process keeps no state of the email's contact, nor found it
// existing before (Repository.mayBeNew), the id is taken as it is, without asking whether that
// contact was erased. An erased contact's stream holds its
// events, so an append that takes it for new fails on its version, and the next attempt asks
// (contactIDFor). guessed tells which it did. The store is told the contact likely has no
// key yet, so that sealing its values reads none (NewContactHint).
func (r *Repository) guessContactID(ctx context.Context, accountID, email string) (id string, guessed bool, err error) {
	id = domain.ContactIDFor(accountID, email)
	if _, changed := domain.LegacyContactIDFor(accountID, email); changed || !r.mayBeNew(domain.ContactStream(id)) {
		id, err = r.contactIDFor(ctx, accountID, email)
		return id, false, err
	}
	if hint, ok := r.store.(NewContactHint); ok {
		hint.MayBeNewContact(id)
	}
	return id, true, nil
}

// NewContactHint is told of a contact that a command takes for new: the store may then seal its
// values under a new key without looking for one (a key stored meanwhile fails the append, which
// is tried again).
type NewContactHint interface {
	MayBeNewContact(contactID string)
}

// contactIDAndErasures is contactIDFor, and how many contacts of the email were erased before it
// (domain.CurrentContactID, as the operator's history by email finds it too).
func (r *Repository) contactIDAndErasures(ctx context.Context, accountID, email string) (string, int, error) {
	exists := func(id string) (bool, error) { return r.exists(ctx, domain.ContactStream(id)) }
	var erased func(string) (bool, error)
	if erasures, ok := r.store.(ErasedContacts); ok {
		erased = func(id string) (bool, error) { return erasures.Erased(ctx, id) }
	}
	return domain.CurrentContactID(accountID, email, exists, erased)
}

// ErasedContacts tells whether a contact was erased (the event store keeps it with the contact's
// destroyed key): a store that cannot tell has no erasures.
type ErasedContacts interface {
	Erased(ctx context.Context, contactID string) (bool, error)
}

// customerIDFor is contactIDFor for the customer of an email, whose contacts were erased
// erasures times: each erased contact leaves its customer behind with it.
func (r *Repository) customerIDFor(ctx context.Context, accountID, email string, erasures int) (string, error) {
	if erasures > 0 {
		return domain.CustomerIDAfterErasures(accountID, email, erasures), nil
	}
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
