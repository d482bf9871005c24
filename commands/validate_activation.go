package commands

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// ValidateActivation reads the activation of a token (GET /api/v1/checkout/activations/:token).
// It is a command, not a query, because reading a token is a use of it: an activation found past
// its expiry records that it expired. An erased buyer's activation is refused as its completion
// is (refuseErasedBuyer), so that a token that cannot be completed does not read as pending.
type ValidateActivation struct {
	Meta  Meta
	Token string
}

// ActivationView is an activation as the integration API shows it.
type ActivationView struct {
	ActivationID   string
	Status         string
	Email          string
	ProductID      string
	ProductName    string
	ExpiresAt      time.Time
	ActivationURL  string
	ExternalUserID string
	Position       int64
}

// ValidateActivationHandler handles ValidateActivation.
type ValidateActivationHandler = Handler[ValidateActivation, ActivationView]

// NewValidateActivationHandler returns the handler of ValidateActivation, logged and measured.
func NewValidateActivationHandler(repo *Repository, now func() time.Time, log *zap.Logger, obs Observer) ValidateActivationHandler {
	return decorate[ValidateActivation, ActivationView](validateActivationHandler{repo: repo, now: now}, log, obs)
}

type validateActivationHandler struct {
	repo *Repository
	now  func() time.Time
}

// Handle reads the activation.
func (h validateActivationHandler) Handle(ctx context.Context, cmd ValidateActivation) (ActivationView, error) {
	var view ActivationView
	pos, err := execute(ctx, h.repo, cmd.Meta, domain.ActivationIDFor(cmd.Token), func(ctx context.Context, s *session) error {
		activation, err := loadActivation(ctx, s, cmd.Meta.AccountID, cmd.Token, h.now)
		if err != nil {
			return err
		}
		if err := refuseErasedBuyer(ctx, s, activation); err != nil {
			return err
		}
		view, err = viewActivation(activation, cmd.Token)
		return err
	})
	if err != nil {
		return ActivationView{}, err
	}
	view.Position = pos
	return view, nil
}

// viewActivation shows an activation to the holder of its token.
func viewActivation(a *domain.Activation, token string) (ActivationView, error) {
	link, err := a.URL(token)
	if err != nil {
		return ActivationView{}, err
	}
	return ActivationView{ActivationID: a.StreamID(), Status: a.Status(), Email: a.Email(), ProductID: a.ProductID(),
		ProductName: a.ProductName(), ExpiresAt: a.ExpiresAt(), ActivationURL: link, ExternalUserID: a.ExternalUserID()}, nil
}
