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

// ContactSubscriptions lists, from the log, the billing subscriptions that a contact's purchases
// started (infra/eventstore). The erasure loads each of them in its session and refuses while one
// is active: the subscription would go on charging someone the service no longer knows. The log,
// not the subscriptions read model: that one is relayed, and a purchase committed just before the
// erasure may not be in it yet; and each subscription read is checked at its version when the
// erasure commits, so a cancellation or a renewal committed meanwhile makes it decide again.
type ContactSubscriptions interface {
	SubscriptionsOfContact(ctx context.Context, accountID, contactID string) ([]string, error)
}

// EraseContactHandler handles EraseContact.
type EraseContactHandler = Handler[EraseContact, EraseContactResult]

// NewEraseContactHandler returns the handler of EraseContact, logged and measured.
func NewEraseContactHandler(repo *Repository, subscriptions ContactSubscriptions, now func() time.Time, log *zap.Logger, obs Observer) EraseContactHandler {
	return decorate[EraseContact, EraseContactResult](eraseContactHandler{repo: repo, subscriptions: subscriptions, now: now}, log, obs)
}

type eraseContactHandler struct {
	repo          *Repository
	subscriptions ContactSubscriptions
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
		if err := h.refuseWhileSubscribed(ctx, s, cmd.Meta.AccountID, cmd.ContactID); err != nil {
			return err
		}
		return contact.Erase(res.ErasedAt)
	})
	if err != nil {
		return EraseContactResult{}, err
	}
	return res, nil
}

// refuseWhileSubscribed refuses the erasure of a contact that pays an active billing
// subscription of the account.
func (h eraseContactHandler) refuseWhileSubscribed(ctx context.Context, s *session, accountID, contactID string) error {
	if h.subscriptions == nil {
		return nil
	}
	ids, err := h.subscriptions.SubscriptionsOfContact(ctx, accountID, contactID)
	if err != nil {
		return err
	}
	for _, id := range ids {
		sub, err := loadOnce(ctx, s, id, domain.BillingSubscriptionStream)
		if err != nil {
			return err
		}
		if sub.Exists() && sub.AccountID() == accountID && sub.Status() == domain.SubscriptionStatusActive {
			return domain.Refused(domain.CodeSubscriptionActive, "%s", SubscriptionActiveMessage)
		}
	}
	return nil
}
