package commands_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// Eight purchases naming one txnId at once, through two sets of handlers that share nothing but
// the event store (two processes), for five buyers: the log alone decides, one records the
// payment, the others answer it and record nothing, not even their buyers' contacts.
func TestOneTxnIDOnePaymentWithNoReadModel(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		c := newCheckout(t, dialect)
		other := commands.NewHandlers(commands.Dependencies{Store: c.store, Sealer: c.sealer, Log: zap.NewNop(), Observer: noObserver{}, Now: c.clock.Now})
		results := make([]commands.PurchaseResult, 8)
		errs := make([]error, 8)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h := []commands.Handlers{c.h, other}[i%2]
				results[i], errs[i] = h.Purchase.Handle(context.Background(), commands.Purchase{Meta: c.meta, ProductID: c.product.StreamID(),
					PricingTierID: c.tier(1), Email: fmt.Sprintf("buyer%d@example.com", i%5), TxnID: "ch_once"})
			}()
		}
		wg.Wait()
		recorded := 0
		var first commands.PurchaseResult
		for i, res := range results {
			if errs[i] != nil {
				t.Fatalf("purchase %d: %v", i, errs[i])
			}
			if !res.AlreadyRecorded {
				recorded, first = recorded+1, res
			}
		}
		if recorded != 1 {
			t.Fatalf("%d of 8 purchases with one txnId recorded it, want 1", recorded)
		}
		for i, res := range results {
			if res.TransactionID != first.TransactionID || res.SubscriptionID != first.SubscriptionID || res.ActivationToken != first.ActivationToken ||
				res.CustomerID != first.CustomerID || res.TransactionID != domain.TransactionIDFor(c.meta.AccountID, "ch_once") {
				t.Fatalf("purchase %d answered %+v, the payment is %+v", i, res, first)
			}
		}
		if events := c.stream(t, first.TransactionID); len(events) != 1 {
			t.Fatalf("the transaction's stream holds %d events", len(events))
		}
		if events := c.stream(t, first.SubscriptionID); len(events) != 1 {
			t.Fatalf("the subscription's stream holds %d events", len(events))
		}
		contacts := 0
		for i := range 5 {
			if len(c.stream(t, domain.ContactIDFor(c.meta.AccountID, fmt.Sprintf("buyer%d@example.com", i)))) > 0 {
				contacts++
			}
		}
		if contacts != 1 {
			t.Fatalf("%d buyers' contacts recorded for one payment, want 1", contacts)
		}
	})
}

// The last installment of a split plan notified eight times at once through two sets of handlers
// (two processes): one records it and pays the plan off; the others, whether they decide before
// that payment is in the log (their append fails) or after it (the plan refuses a rebill), answer
// the payment and record nothing. A retry that meets the paid-off plan reads the txnId's stream
// before answering the refusal, so it is never told 409 for a payment that is recorded.
func TestOneTxnIDOneLastInstallment(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		c := newCheckout(t, dialect)
		other := commands.NewHandlers(commands.Dependencies{Store: c.store, Sealer: c.sealer, Log: zap.NewNop(), Observer: noObserver{}, Now: c.clock.Now})
		ctx := context.Background()
		split := c.buy(t, 2, "ada@example.com")
		if _, err := c.h.Rebill.Handle(ctx, commands.Rebill{Meta: c.meta, SubscriptionID: split.SubscriptionID, TxnID: "ch_second"}); err != nil {
			t.Fatal(err)
		}
		results := make([]commands.RebillResult, 8)
		errs := make([]error, 8)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h := []commands.Handlers{c.h, other}[i%2]
				results[i], errs[i] = h.Rebill.Handle(ctx, commands.Rebill{Meta: c.meta, SubscriptionID: split.SubscriptionID, TxnID: "ch_last"})
			}()
		}
		wg.Wait()
		recorded := 0
		for i, res := range results {
			if errs[i] != nil {
				t.Fatalf("rebill %d: %v", i, errs[i])
			}
			if !res.AlreadyRecorded {
				recorded++
			}
			if res.TransactionID != domain.TransactionIDFor(c.meta.AccountID, "ch_last") || res.Status != domain.SubscriptionStatusCompleted {
				t.Fatalf("rebill %d answered %+v", i, res)
			}
		}
		if recorded != 1 {
			t.Fatalf("%d of 8 notifications of the last installment recorded it, want 1", recorded)
		}
		if events := c.stream(t, split.SubscriptionID); len(events) != 4 { // started, renewed twice, completed
			t.Fatalf("the subscription's stream holds %d events, want 4", len(events))
		}
		// A new payment for the paid-off plan is still refused, by either process.
		for _, h := range []commands.Handlers{c.h, other} {
			_, err := h.Rebill.Handle(ctx, commands.Rebill{Meta: c.meta, SubscriptionID: split.SubscriptionID, TxnID: "ch_fourth"})
			wantKind(t, err, domain.KindConflict)
		}
	})
}
