package webhooks_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// benchCount reads the size of a benchmark's log from an environment variable (a quick run sets
// it low), or returns def.
func benchCount(b *testing.B, name string, def, least int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < least {
		b.Fatalf("%s=%q: want a number of at least %d", name, s, least)
	}
	return n
}

// billingLog is a synthetic history of monthly plans: subs billing subscriptions of one product,
// each paid payments times (a purchase, then rebills), the payments of all subscriptions
// interleaved as renewals come (every subscription's k-th payment before any k+1-th), and, when
// a form is given, a form submission after each payment. It is appended straight to the log,
// as the other benchmarks seed, and so costs no command, no HTTP call and no webhook.
type billingLog struct {
	accountID, formID string
	subs, payments    int
}

// billedTxn is the transaction id of the k-th payment (0: the purchase) of billing subscription
// sub: the receiver of a replay reads the order back from it.
func billedTxn(sub, k int) string { return fmt.Sprintf("txn_bench%07d_%04d", sub, k) }

// billedSubscription is the id of billing subscription sub.
func billedSubscription(sub int) string { return fmt.Sprintf("sbs_bench%07d", sub) }

// paymentOrder reads back the subscription and the rank of a payment from its transaction id.
func paymentOrder(txnID string) (sub string, k int, ok bool) {
	rest, found := strings.CutPrefix(txnID, "txn_bench")
	if !found || len(rest) != 12 || rest[7] != '_' {
		return "", 0, false
	}
	k, err := strconv.Atoi(rest[8:])
	return "sbs_bench" + rest[:7], k, err == nil
}

// payment is the event of the k-th payment of billing subscription sub.
func (l billingLog) payment(sub, k int, at time.Time) domain.StreamAppend {
	id, email := billedTxn(sub, k), fmt.Sprintf("payer%d@example.com", sub)
	sale := domain.Sale{
		IsRebill:    k > 0,
		Product:     domain.SaleProduct{ID: "prod_bench", Name: "Pro Plan", InternalName: "pro"},
		Transaction: domain.SaleTransaction{ID: id, TxnID: id, Amount: 2900, Currency: "USD", Status: domain.TransactionSucceeded, Processor: "stripe", SubscriptionID: billedSubscription(sub)},
		Pricing:     domain.SalePricing{TierIndex: 1, TierName: "Monthly", PricingTierID: "tier_bench", BumpIndices: []int{}, Bumps: []domain.Bump{}},
		Customer:    domain.SaleCustomer{Email: email, Name: "Payer", ContactID: fmt.Sprintf("ct_bench%07d", sub)},
		Contact:     domain.SaleContact{ContactID: fmt.Sprintf("ct_bench%07d", sub), Email: email, FirstName: "Payer"},
	}
	customer := fmt.Sprintf("cus_bench%07d", sub)
	var e domain.Event = domain.CheckoutPurchased{AccountID: l.accountID, CustomerID: customer, Sale: sale, PurchasedAt: at}
	if k > 0 {
		e = domain.CheckoutRebilled{AccountID: l.accountID, CustomerID: customer, Sale: sale, Installment: k + 1, RebilledAt: at}
	}
	return domain.StreamAppend{StreamID: id, Events: []domain.Event{e}}
}

// events is how many outbound events the log holds.
func (l billingLog) events() int {
	n := l.subs * l.payments
	if l.formID != "" {
		n *= 2
	}
	return n
}

// append writes the log, 500 streams an append, waits until the read models have it, and returns
// the position of its last event.
func (l billingLog) append(b *testing.B, svc *servicetest.Service) int64 {
	b.Helper()
	ctx := context.Background()
	meta := domain.Metadata{AccountID: l.accountID, Actor: "bench"}
	var last int64
	var batch []domain.StreamAppend
	flush := func() {
		pos, err := svc.App.Store().Append(ctx, meta, batch...)
		if err != nil {
			b.Fatal(err)
		}
		last, batch = pos, batch[:0]
	}
	at := time.Now().UTC()
	for k := range l.payments {
		for sub := range l.subs {
			batch = append(batch, l.payment(sub, k, at))
			if l.formID != "" {
				batch = append(batch, submission(l.accountID, l.formID, k*l.subs+sub))
			}
			if len(batch) >= 500 {
				flush()
			}
		}
	}
	if len(batch) > 0 {
		flush()
	}
	wait, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	if err := svc.App.ReadModels().WaitReadModels(wait, last); err != nil {
		b.Fatal(err)
	}
	return last
}
