package commands

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// Rebill records a renewal payment of a subscription or a split plan
// (POST /admin/v1/accounts/{a}/checkout/subscriptions/{id}/rebill): one more period paid. A
// cancelled, completed or cancelling subscription refuses it (409). A rebill whose txnId the
// account recorded already, by a purchase or a rebill, records nothing: its result is that
// payment's (AlreadyRecorded), whatever the subscription it names and whatever became of it since
// (a split plan the payment paid off, a subscription cancelled after it): the txnId is looked up
// before a refusal is answered (payment_ids.go).
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
	// AlreadyRecorded tells that the txnId was recorded before: nothing was recorded now, and
	// the result is the earlier payment's, with its subscription as it is now.
	AlreadyRecorded bool
	Position        int64
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
	accountID := cmd.Meta.AccountID
	res := RebillResult{TransactionID: paymentTransactionID(accountID, pay)}
	var earlier RebillResult
	res.Position, err = execute(ctx, h.repo, cmd.Meta, cmd.SubscriptionID, func(ctx context.Context, s *session) error {
		res.AlreadyRecorded = false
		recorded, err := recordedPayment(ctx, s, accountID, res.TransactionID, pay)
		if err != nil {
			return err
		}
		if recorded == nil {
			refusal := recordRebill(ctx, s, accountID, cmd.SubscriptionID, pay, &res)
			if refusal == nil {
				return nil
			}
			// The txnId is looked up before the subscription's refusal is answered: a renewal
			// notified again after the subscription ended is the payment recorded.
			if recorded, err = recordedDespite(ctx, s, accountID, res.TransactionID, pay, refusal); err != nil {
				return err
			}
		}
		res.AlreadyRecorded = true
		earlier, err = recordedRebill(ctx, s, recorded)
		return err
	})
	if err != nil {
		return RebillResult{}, err
	}
	if res.AlreadyRecorded {
		earlier.Position = res.Position
		return earlier, nil
	}
	return res, nil
}

// recordRebill records the payment as the next period of the account's subscriptionID, filling
// res, or returns the refusal; it records nothing then.
func recordRebill(ctx context.Context, s *session, accountID, subscriptionID string, pay domain.Payment, res *RebillResult) error {
	// Tracked first, so that the log shows the payment before the renewal it pays, as a purchase
	// shows its payment before the subscription it opens.
	txn := domain.TransactionStream(res.TransactionID)
	if err := s.track(txn); err != nil {
		return err
	}
	sub, err := loadCheckoutSubscription(ctx, s, accountID, subscriptionID)
	if err != nil {
		return err
	}
	if err := sub.Rebill(txn, pay); err != nil {
		return err
	}
	res.Sale, res.Status, res.CurrentPeriodEnd = txn.Sale(), sub.Status(), sub.CurrentPeriodEnd()
	return nil
}

// recordedRebill is the result of the payment that recorded the txnId, with the subscription it
// paid, if any, as it is now.
func recordedRebill(ctx context.Context, s *session, txn *domain.Transaction) (RebillResult, error) {
	res := RebillResult{TransactionID: txn.StreamID(), Sale: txn.Sale(), AlreadyRecorded: true}
	if id := res.Sale.Transaction.SubscriptionID; id != "" {
		sub := domain.BillingSubscriptionStream(id)
		if _, err := s.peek(ctx, sub); err != nil {
			return RebillResult{}, err
		}
		res.Status, res.CurrentPeriodEnd = sub.Status(), sub.CurrentPeriodEnd()
	}
	return res, nil
}
