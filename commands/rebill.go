package commands

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// Rebill records a renewal payment of a subscription or a split plan
// (POST /admin/v1/accounts/{a}/checkout/subscriptions/{id}/rebill): one more period paid. A
// cancelled, completed or cancelling subscription refuses it (409).
type Rebill struct {
	Meta           Meta
	SubscriptionID string
	TxnID          string // optional: the processor's id of the payment
}

// RebillResult names the new transaction and says what the subscription became.
type RebillResult struct {
	TransactionID    string
	Sale             domain.Sale // the payment as checkout.rebilled reports it
	Status           string      // active, or completed after a split plan's last installment
	CurrentPeriodEnd time.Time
	Position         int64
}

// RebillHandler handles Rebill.
type RebillHandler = Handler[Rebill, RebillResult]

// NewRebillHandler returns the handler of Rebill, logged and measured.
func NewRebillHandler(repo *Repository, now func() time.Time, log *zap.Logger, obs Observer) RebillHandler {
	return decorate[Rebill, RebillResult](rebillHandler{repo: repo, now: now}, log, obs)
}

type rebillHandler struct {
	repo *Repository
	now  func() time.Time
}

// Handle records the rebill.
func (h rebillHandler) Handle(ctx context.Context, cmd Rebill) (RebillResult, error) {
	pay, err := domain.NewPayment("", cmd.TxnID, h.now())
	if err != nil {
		return RebillResult{}, err
	}
	res := RebillResult{TransactionID: domain.NewID(transactionPrefix)}
	res.Position, err = execute(ctx, h.repo, cmd.Meta, cmd.SubscriptionID, func(ctx context.Context, s *session) error {
		// Tracked first, so that the log shows the payment before the renewal it pays, as a
		// purchase shows its payment before the subscription it opens.
		txn := domain.TransactionStream(res.TransactionID)
		if err := s.track(txn); err != nil {
			return err
		}
		sub, err := loadCheckoutSubscription(ctx, s, cmd.Meta.AccountID, cmd.SubscriptionID)
		if err != nil {
			return err
		}
		if err := sub.Rebill(txn, pay); err != nil {
			return err
		}
		res.Sale, res.Status, res.CurrentPeriodEnd = txn.Sale(), sub.Status(), sub.CurrentPeriodEnd()
		return nil
	})
	if err != nil {
		return RebillResult{}, err
	}
	return res, nil
}
