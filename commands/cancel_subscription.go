package commands

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// CancelSubscription cancels a checkout subscription
// (POST /admin/v1/accounts/{a}/checkout/subscriptions/{id}/cancel): at the end of its current
// period (it stays active until then) or at once.
type CancelSubscription struct {
	Meta           Meta
	SubscriptionID string
	AtPeriodEnd    bool
}

// CancelSubscriptionResult is the subscription after the cancellation.
type CancelSubscriptionResult struct {
	Status            string
	Processor         string
	CancelAtPeriodEnd bool
	CurrentPeriodEnd  time.Time
	Position          int64
}

// CancelSubscriptionHandler handles CancelSubscription.
type CancelSubscriptionHandler = Handler[CancelSubscription, CancelSubscriptionResult]

// NewCancelSubscriptionHandler returns the handler of CancelSubscription, logged and measured.
func NewCancelSubscriptionHandler(repo *Repository, now func() time.Time, log *zap.Logger, obs Observer) CancelSubscriptionHandler {
	return decorate[CancelSubscription, CancelSubscriptionResult](cancelSubscriptionHandler{repo: repo, now: now}, log, obs)
}

type cancelSubscriptionHandler struct {
	repo *Repository
	now  func() time.Time
}

// Handle cancels the subscription.
func (h cancelSubscriptionHandler) Handle(ctx context.Context, cmd CancelSubscription) (CancelSubscriptionResult, error) {
	var res CancelSubscriptionResult
	pos, err := execute(ctx, h.repo, cmd.Meta, cmd.SubscriptionID, func(ctx context.Context, s *session) error {
		sub, err := loadCheckoutSubscription(ctx, s, cmd.Meta.AccountID, cmd.SubscriptionID)
		if err != nil {
			return err
		}
		if err := seeLatestPayment(ctx, s, sub); err != nil {
			return err
		}
		if err := sub.Cancel(cmd.AtPeriodEnd, h.now()); err != nil {
			return err
		}
		res.Status, res.Processor, res.CancelAtPeriodEnd, res.CurrentPeriodEnd = sub.Status(), sub.Processor(), sub.CancelAtPeriodEnd(), sub.CurrentPeriodEnd()
		return nil
	})
	if err != nil {
		return CancelSubscriptionResult{}, err
	}
	res.Position = pos
	return res, nil
}

// seeLatestPayment reads the transaction of the subscription's latest payment in the session, so
// that its cancellation events report that payment's status as it is now (a refund since), and
// the commit checks that transaction's version: a refund committed meanwhile makes it decide
// again.
func seeLatestPayment(ctx context.Context, s *session, sub *domain.BillingSubscription) error {
	if sub.LatestPaymentID() == "" {
		return nil
	}
	txn, err := loadOnce(ctx, s, sub.LatestPaymentID(), domain.TransactionStream)
	if err != nil {
		return err
	}
	sub.SeeLatestPayment(txn)
	return nil
}
