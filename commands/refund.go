package commands

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// Refund returns money of a transaction (POST /admin/v1/accounts/{a}/checkout/transactions/{id}/refund):
// all that remains by default, or AmountCents. The transaction's stream version orders
// concurrent refunds, so together they never return more than was paid.
type Refund struct {
	Meta          Meta
	TransactionID string
	AmountCents   *int64
}

// RefundResult is the refund and the transaction's status after it.
type RefundResult struct {
	Refund   domain.Refund
	Sale     domain.Sale // the payment after the refund, as checkout.refunded reports it
	Status   string
	Refunded int64 // refunded so far, this refund included
	Position int64
}

// RefundHandler handles Refund.
type RefundHandler = Handler[Refund, RefundResult]

// NewRefundHandler returns the handler of Refund, logged and measured.
func NewRefundHandler(repo *Repository, now func() time.Time, log *zap.Logger, obs Observer) RefundHandler {
	return decorate[Refund, RefundResult](refundHandler{repo: repo, now: now}, log, obs)
}

type refundHandler struct {
	repo *Repository
	now  func() time.Time
}

// Handle records the refund.
func (h refundHandler) Handle(ctx context.Context, cmd Refund) (RefundResult, error) {
	var res RefundResult
	pos, err := execute(ctx, h.repo, cmd.Meta, cmd.TransactionID, func(ctx context.Context, s *session) error {
		txn, err := loadTransaction(ctx, s, cmd.Meta.AccountID, cmd.TransactionID)
		if err != nil {
			return err
		}
		if res.Refund, err = txn.Refund(cmd.AmountCents, h.now()); err != nil {
			return err
		}
		res.Sale, res.Status, res.Refunded = txn.Sale(), txn.Status(), txn.Refunded()
		return nil
	})
	if err != nil {
		return RefundResult{}, err
	}
	res.Position = pos
	return res, nil
}
