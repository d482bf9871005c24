package commands

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// CompleteActivation marks a SaaS signup done (POST /api/v1/checkout/activations/:token/complete),
// with the integrating app's user id when given. Completing again with the same id, or none,
// succeeds and changes nothing; with another id: 409. An expired activation: 400, and its expiry
// is recorded.
type CompleteActivation struct {
	Meta           Meta
	Token          string
	ExternalUserID string
}

// CompleteActivationHandler handles CompleteActivation.
type CompleteActivationHandler = Handler[CompleteActivation, ActivationView]

// NewCompleteActivationHandler returns the handler of CompleteActivation, logged and measured.
func NewCompleteActivationHandler(repo *Repository, now func() time.Time, log *zap.Logger, obs Observer) CompleteActivationHandler {
	return decorate[CompleteActivation, ActivationView](completeActivationHandler{repo: repo, now: now}, log, obs)
}

type completeActivationHandler struct {
	repo *Repository
	now  func() time.Time
}

// Handle completes the activation.
func (h completeActivationHandler) Handle(ctx context.Context, cmd CompleteActivation) (ActivationView, error) {
	var view ActivationView
	pos, err := execute(ctx, h.repo, cmd.Meta, domain.ActivationIDFor(cmd.Token), func(ctx context.Context, s *session) error {
		activation, err := loadActivation(ctx, s, cmd.Meta.AccountID, cmd.Token, h.now)
		if err != nil {
			return err
		}
		if err := refuseErasedBuyer(ctx, s, activation); err != nil {
			return err
		}
		// An expired activation is refused after its expiry is committed, not instead of it.
		if activation.Status() != domain.ActivationStatusExpired {
			if err := activation.Complete(cmd.ExternalUserID, h.now()); err != nil {
				return err
			}
		}
		view, err = viewActivation(activation, cmd.Token)
		return err
	})
	if errors.Is(err, domain.ErrContactErased) {
		return ActivationView{}, domain.ErrActivationBuyerErased // the store's refusal to seal for the buyer
	}
	if err != nil {
		return ActivationView{}, err
	}
	if view.Status == domain.ActivationStatusExpired {
		return ActivationView{}, domain.Refused(domain.CodeActivationExpired, "activation token has expired")
	}
	view.Position = pos
	return view, nil
}

// refuseErasedBuyer refuses to show or complete the activation of an erased buyer
// (domain.ErrActivationBuyerErased), as a write to the contact is refused. The store refuses a
// completion too, when it seals the externalUserId under the buyer's destroyed key; but another
// process than the one that erased may still hold that key. So the session reads the buyer's
// contact, whose version the commit then checks: an erasure committed in between, in any
// process, makes it decide again, and refuse.
func refuseErasedBuyer(ctx context.Context, s *session, activation *domain.Activation) error {
	if activation.ContactID() == "" {
		return nil
	}
	contact, err := loadOnce(ctx, s, activation.ContactID(), domain.ContactStream)
	if err != nil {
		return err
	}
	if contact.Erased() {
		return domain.ErrActivationBuyerErased
	}
	return nil
}
