package commands

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// EraseContact forgets a contact (DELETE /api/v1/contacts/:contactId, and the operator's
// POST …/contacts/{contactId}/erase; decisions.md "Erasure"). Its ContactErased destroys the
// contact's key in the transaction that records it (infra/eventstore), and the read models, the
// webhook outbox and the caches drop what they hold of the person as they apply it.
type EraseContact struct {
	Meta      Meta
	ContactID string
}

// EraseContactResult is the erasure done.
type EraseContactResult struct {
	ContactID string
	ErasedAt  time.Time
	Written
}

// ActiveSubscriptions tells whether a contact pays a billing subscription that is still active
// (the subscriptions read model): such a contact is not erased, the subscription would go on
// charging someone the service no longer knows.
type ActiveSubscriptions interface {
	HasActiveSubscription(ctx context.Context, accountID, contactID string) (bool, error)
}

// EraseContactHandler handles EraseContact.
type EraseContactHandler = Handler[EraseContact, EraseContactResult]

// NewEraseContactHandler returns the handler of EraseContact, logged and measured.
func NewEraseContactHandler(repo *Repository, subscriptions ActiveSubscriptions, now func() time.Time, log *zap.Logger, obs Observer) EraseContactHandler {
	return decorate[EraseContact, EraseContactResult](eraseContactHandler{repo: repo, subscriptions: subscriptions, now: now}, log, obs)
}

type eraseContactHandler struct {
	repo          *Repository
	subscriptions ActiveSubscriptions
	now           func() time.Time
}

// SubscriptionActiveMessage is the refusal of an erasure while the person pays a subscription.
const SubscriptionActiveMessage = "the contact has an active subscription: cancel it first"

// Handle erases the contact.
func (h eraseContactHandler) Handle(ctx context.Context, cmd EraseContact) (EraseContactResult, error) {
	if !domain.IsContactID(cmd.ContactID) {
		return EraseContactResult{}, domain.NotFound("contact not found")
	}
	res := EraseContactResult{ContactID: cmd.ContactID, ErasedAt: h.now().UTC()}
	var err error
	res.Written, err = executeWrite(ctx, h.repo, cmd.Meta, cmd.ContactID, func(ctx context.Context, s *session) error {
		contact, err := loadOnce(ctx, s, cmd.ContactID, domain.ContactStream)
		if err != nil {
			return err
		}
		switch {
		case !contact.Exists():
			return domain.NotFound("contact not found")
		case contact.AccountID() != cmd.Meta.AccountID:
			return domain.Forbidden("contact belongs to another account")
		}
		if h.subscriptions != nil {
			active, err := h.subscriptions.HasActiveSubscription(ctx, cmd.Meta.AccountID, cmd.ContactID)
			if err != nil {
				return err
			}
			if active {
				return domain.Refused(domain.CodeSubscriptionActive, "%s", SubscriptionActiveMessage)
			}
		}
		return contact.Erase(res.ErasedAt)
	})
	if err != nil {
		return EraseContactResult{}, err
	}
	return res, nil
}
