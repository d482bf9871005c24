package domain

import (
	"strings"
	"testing"
	"time"
)

// A checkout fixture: a saas_signup product with a one-time, a monthly, a yearly and a 3-part
// split tier, and two bumps.
func checkoutProduct(t *testing.T) *Product {
	t.Helper()
	p := ProductStream("prod_1")
	err := p.Create(AccountStream("acc_1"), ProductSpec{Name: "Course", InternalName: "course-2025", Forwarding: ForwardingSaaSSignup,
		ActivationBaseURL: "https://app.example.com/signup?ref=funnel",
		Tiers: []PricingTierSpec{
			{Name: "Once", Amount: 10000, Currency: "USD", Interval: IntervalOneTime},
			{Name: "Monthly", Amount: 2500, Currency: "USD", Interval: IntervalMonth},
			{Name: "Yearly", Amount: 25000, Currency: "USD", Interval: IntervalYear},
			{Name: "3 payments", Amount: 4000, Currency: "USD", Interval: IntervalSplit, Installments: 3},
		},
		Bumps: []BumpSpec{{Name: "Workbook", Amount: 900}, {Name: "Call", Amount: 5000}}}, ids("tier"), ids("bump"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func checkoutCustomer(t *testing.T) *Customer {
	t.Helper()
	c := CustomerStream(CustomerIDFor("acc_1", "Ann@Example.com"))
	if _, err := c.Register("acc_1", "Ann@Example.com", "Ann Lee", "ct_1"); err != nil {
		t.Fatal(err)
	}
	return c
}

var jan31 = time.Date(2025, 1, 31, 10, 0, 0, 0, time.UTC)

// purchase buys a tier of the fixture product and returns its transaction and, for recurring
// tiers, its subscription.
func purchase(t *testing.T, tierID string, bumpIDs ...string) (*Transaction, *BillingSubscription) {
	t.Helper()
	product := checkoutProduct(t)
	order, err := NewOrder(product, tierID, bumpIDs)
	if err != nil {
		t.Fatal(err)
	}
	pay, err := NewPayment("", "", jan31)
	if err != nil {
		t.Fatal(err)
	}
	txn := TransactionStream("txn_1")
	var sub *BillingSubscription
	subID := ""
	if order.Tier.Recurring() {
		sub = BillingSubscriptionStream("sub_1")
		subID = sub.StreamID()
	}
	txn.Purchase(order, checkoutCustomer(t), SaleContact{ContactID: "ct_1", Email: "Ann@Example.com", FirstName: "Ann", LastName: "Lee"}, pay, subID, nil)
	if sub != nil {
		sub.Start(order, txn)
	}
	return txn, sub
}

func rebill(t *testing.T, sub *BillingSubscription, id string, at time.Time) (*Transaction, error) {
	t.Helper()
	pay, err := NewPayment("", "", at)
	if err != nil {
		t.Fatal(err)
	}
	txn := TransactionStream(id)
	return txn, sub.Rebill(txn, pay)
}

func wantKind(t *testing.T, err error, kind ErrorKind, text string) {
	t.Helper()
	if KindOf(err) != kind || !strings.Contains(err.Error(), text) {
		t.Fatalf("err = %v (kind %d), want kind %d with %q", err, KindOf(err), kind, text)
	}
}

func TestCustomerIsOnePerAccountAndEmailCaseInsensitively(t *testing.T) {
	if CustomerIDFor("acc_1", "Ann@Example.com") != CustomerIDFor("acc_1", " ann@example.COM ") {
		t.Fatal("one email in two casings names two customers")
	}
	if CustomerIDFor("acc_1", "ann@example.com") == CustomerIDFor("acc_2", "ann@example.com") {
		t.Fatal("two accounts share a customer id")
	}
	c := checkoutCustomer(t)
	if created, err := c.Register("acc_1", "ann@example.com", "", "ct_1"); created || err != nil {
		t.Fatalf("second purchase created=%v err=%v", created, err)
	}
	if created, _ := c.Register("acc_1", "ann@example.com", "Ann Smith", "ct_1"); created || c.Name() != "Ann Smith" || c.Email() != "Ann@Example.com" {
		t.Fatalf("after a new name: created=%v name=%q email=%q", created, c.Name(), c.Email())
	}
	if n := len(c.Changes()); n != 2 {
		t.Fatalf("%d events, want CustomerCreated and CustomerRenamed", n)
	}
}

func TestNewOrderChecksTierAndBumps(t *testing.T) {
	product := checkoutProduct(t)
	order, err := NewOrder(product, "tier_1", []string{"bump_2", "bump_1"})
	if err != nil || order.Amount() != 10000+5000+900 {
		t.Fatalf("order %+v err %v", order, err)
	}
	_, err = NewOrder(product, "tier_9", nil)
	wantKind(t, err, KindInvalid, "pricingTierId")
	_, err = NewOrder(product, "tier_1", []string{"bump_1", "bump_9"})
	wantKind(t, err, KindInvalid, "bumpIds[1]")
	_, err = NewOrder(product, "tier_1", []string{"bump_1", "bump_1"})
	wantKind(t, err, KindInvalid, "bumpIds[1] repeats")
}

func TestNewPaymentDefaultsAndChecks(t *testing.T) {
	pay, err := NewPayment("", "", jan31)
	if err != nil || pay.Processor != DefaultProcessor {
		t.Fatalf("payment %+v err %v", pay, err)
	}
	_, err = NewPayment("Pay Pal", "", jan31)
	wantKind(t, err, KindInvalid, "processor")
	_, err = NewPayment("paypal", strings.Repeat("x", 256), jan31)
	wantKind(t, err, KindInvalid, "txnId")
}

func TestPurchaseRecordsTheSaleAWebhookNeeds(t *testing.T) {
	txn, sub := purchase(t, "tier_2", "bump_2")
	if sub == nil {
		t.Fatal("a monthly tier opened no subscription")
	}
	e := txn.Changes()[0].(CheckoutPurchased)
	want := Sale{
		Product:     SaleProduct{ID: "prod_1", Name: "Course", InternalName: "course-2025"},
		Transaction: SaleTransaction{ID: "txn_1", TxnID: "txn_1", Amount: 2500 + 5000, Currency: "USD", Status: TransactionSucceeded, Processor: "stripe", SubscriptionID: "sub_1"},
		Customer:    SaleCustomer{Email: "Ann@Example.com", Name: "Ann Lee", ContactID: "ct_1"},
		Contact:     SaleContact{ContactID: "ct_1", Email: "Ann@Example.com", FirstName: "Ann", LastName: "Lee"},
	}
	got := e.Sale
	if got.Product != want.Product || got.Transaction != want.Transaction || got.Customer != want.Customer || got.Contact != want.Contact {
		t.Fatalf("sale %+v\nwant %+v", got, want)
	}
	if p := got.Pricing; p.TierIndex != 1 || p.TierName != "Monthly" || p.PricingTierID != "tier_2" || len(p.BumpIndices) != 1 || p.BumpIndices[0] != 1 || p.Bumps[0].Name != "Call" {
		t.Fatalf("pricing %+v", p)
	}
	if sub.Status() != SubscriptionStatusActive || !sub.CurrentPeriodEnd().Equal(time.Date(2025, 2, 28, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("subscription %s until %v", sub.Status(), sub.CurrentPeriodEnd())
	}
	one, none := purchase(t, "tier_1")
	if none != nil || one.Sale().Transaction.SubscriptionID != "" || len(one.Sale().Pricing.BumpIndices) != 0 {
		t.Fatalf("one-time purchase: subscription %v, sale %+v", none, one.Sale())
	}
}

func TestPeriodEndCountsFromTheStartAndClampsMonthEnds(t *testing.T) {
	cases := []struct {
		interval string
		n        int
		want     time.Time
	}{
		{IntervalMonth, 1, time.Date(2025, 2, 28, 10, 0, 0, 0, time.UTC)},
		{IntervalMonth, 2, time.Date(2025, 3, 31, 10, 0, 0, 0, time.UTC)},
		{IntervalMonth, 3, time.Date(2025, 4, 30, 10, 0, 0, 0, time.UTC)},
		{IntervalSplit, 13, time.Date(2026, 2, 28, 10, 0, 0, 0, time.UTC)},
		{IntervalYear, 1, time.Date(2026, 1, 31, 10, 0, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		if got := PeriodEnd(jan31, c.interval, c.n); !got.Equal(c.want) {
			t.Errorf("PeriodEnd(jan 31, %s, %d) = %v, want %v", c.interval, c.n, got, c.want)
		}
	}
	leap := time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)
	if got := PeriodEnd(leap, IntervalYear, 1); !got.Equal(time.Date(2025, 2, 28, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("a year after Feb 29 = %v", got)
	}
}

func TestRebillPaysOneMorePeriodAtTheTierAmount(t *testing.T) {
	_, sub := purchase(t, "tier_2", "bump_1")
	txn, err := rebill(t, sub, "txn_2", jan31.AddDate(0, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	e := txn.Changes()[0].(CheckoutRebilled)
	if e.Transaction.ID != "txn_2" || e.Transaction.Amount != 2500 || e.Transaction.SubscriptionID != "sub_1" || e.Installment != 2 || len(e.Pricing.Bumps) != 1 {
		t.Fatalf("rebill %+v", e)
	}
	if !sub.CurrentPeriodEnd().Equal(time.Date(2025, 3, 31, 10, 0, 0, 0, time.UTC)) || sub.Payments() != 2 {
		t.Fatalf("period end %v after %d payments", sub.CurrentPeriodEnd(), sub.Payments())
	}
	_, yearly := purchase(t, "tier_3")
	if _, err := rebill(t, yearly, "txn_3", jan31); err != nil || !yearly.CurrentPeriodEnd().Equal(time.Date(2027, 1, 31, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("yearly rebill: %v, until %v", err, yearly.CurrentPeriodEnd())
	}
}

func TestSplitPlanCompletesAfterItsLastInstallment(t *testing.T) {
	_, sub := purchase(t, "tier_4")
	for i, id := range []string{"txn_2", "txn_3"} {
		if _, err := rebill(t, sub, id, jan31.AddDate(0, i+1, 0)); err != nil {
			t.Fatalf("installment %d: %v", i+2, err)
		}
	}
	if sub.Status() != SubscriptionStatusCompleted {
		t.Fatalf("after 3 of 3 installments: %s", sub.Status())
	}
	if _, ok := sub.Changes()[len(sub.Changes())-1].(SubscriptionCompleted); !ok {
		t.Fatalf("last event %T, want SubscriptionCompleted", sub.Changes()[len(sub.Changes())-1])
	}
	_, err := rebill(t, sub, "txn_4", jan31.AddDate(0, 3, 0))
	wantKind(t, err, KindConflict, "paid in full")
	wantKind(t, sub.Cancel(false, jan31), KindConflict, "paid in full")
}

func TestCancelAtPeriodEndStaysActiveUntilThePeriodEnds(t *testing.T) {
	_, sub := purchase(t, "tier_2")
	if err := sub.Cancel(true, jan31.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	scheduled := sub.Changes()[1].(SubscriptionCancelScheduled)
	if sub.Status() != SubscriptionStatusActive || !sub.CancelAtPeriodEnd() ||
		scheduled.Subscription != (ScheduledSubscription{ID: "sub_1", Status: "active", Processor: "stripe", CancelAtPeriodEnd: true,
			CurrentPeriodEnd: sub.CurrentPeriodEnd(), ScheduledAt: jan31.Add(time.Hour)}) || scheduled.Product.ID != "prod_1" {
		t.Fatalf("status %s, scheduled %+v", sub.Status(), scheduled)
	}
	if err := sub.Cancel(true, jan31.Add(2*time.Hour)); err != nil || len(sub.Changes()) != 2 {
		t.Fatalf("cancelling at period end twice: %v, %d events", err, len(sub.Changes()))
	}
	_, err := rebill(t, sub, "txn_2", jan31.AddDate(0, 1, 0))
	wantKind(t, err, KindConflict, "cancelled at period end")
	if sub.EndIfDue(sub.CurrentPeriodEnd().Add(-time.Second)) || sub.Status() != SubscriptionStatusActive {
		t.Fatal("ended before its period did")
	}
	if !sub.EndIfDue(sub.CurrentPeriodEnd().Add(time.Hour)) || sub.Status() != SubscriptionStatusCancelled {
		t.Fatal("did not end once its period was over")
	}
	cancelled := sub.Changes()[2].(SubscriptionCancelled)
	if cancelled.Subscription != (CancelledSubscription{ID: "sub_1", Status: "cancelled", Processor: "stripe", CancelledAt: sub.CurrentPeriodEnd()}) {
		t.Fatalf("cancelled %+v", cancelled.Subscription)
	}
	if sub.EndIfDue(sub.CurrentPeriodEnd().Add(2 * time.Hour)) {
		t.Fatal("ended twice")
	}
}

// A subscription whose period is over (no rebill came) ends as it is cancelled, even at period
// end: its end is never dated before the cancellation.
func TestCancelAtPeriodEndOfAnOverduePeriodEndsAtOnce(t *testing.T) {
	_, sub := purchase(t, "tier_2")
	at := sub.CurrentPeriodEnd().Add(72 * time.Hour)
	if err := sub.Cancel(true, at); err != nil {
		t.Fatal(err)
	}
	changes := sub.Changes()
	if len(changes) != 3 || sub.Status() != SubscriptionStatusCancelled {
		t.Fatalf("status %s, changes %+v", sub.Status(), changes)
	}
	scheduled, cancelled := changes[1].(SubscriptionCancelScheduled), changes[2].(SubscriptionCancelled)
	if !scheduled.Subscription.CancelAtPeriodEnd || !scheduled.Subscription.ScheduledAt.Equal(at) || !cancelled.Subscription.CancelledAt.Equal(at) {
		t.Fatalf("scheduled %+v, cancelled %+v", scheduled.Subscription, cancelled.Subscription)
	}
	if sub.EndIfDue(at.Add(time.Hour)) {
		t.Fatal("ended twice")
	}
}

// A rebill's sale says it is one, and so do a refund of it and the cancellations after it.
func TestRebillSalesAreMarkedAsRebills(t *testing.T) {
	txn, sub := purchase(t, "tier_2")
	if txn.Sale().IsRebill {
		t.Fatal("the purchase is marked as a rebill")
	}
	renewal, err := rebill(t, sub, "txn_2", jan31.AddDate(0, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if !renewal.Sale().IsRebill {
		t.Fatal("the rebill is not marked as one")
	}
	if _, err := renewal.Refund(nil, jan31.AddDate(0, 1, 1)); err != nil {
		t.Fatal(err)
	}
	refunded := renewal.Changes()[1].(CheckoutRefunded)
	if err := sub.Cancel(false, jan31.AddDate(0, 1, 2)); err != nil {
		t.Fatal(err)
	}
	changes := sub.Changes()
	cancelled := changes[len(changes)-1].(SubscriptionCancelled)
	if !refunded.IsRebill || !cancelled.IsRebill || cancelled.Transaction.ID != "txn_2" {
		t.Fatalf("refund %+v, cancellation %+v", refunded.Sale, cancelled.Sale)
	}
}

func TestCancelAtOnceEndsTheSubscriptionAndRefusesRebills(t *testing.T) {
	_, sub := purchase(t, "tier_2")
	if err := sub.Cancel(false, jan31.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if sub.Status() != SubscriptionStatusCancelled || len(sub.Changes()) != 3 {
		t.Fatalf("status %s after %d events", sub.Status(), len(sub.Changes()))
	}
	if s := sub.Changes()[1].(SubscriptionCancelScheduled).Subscription; s.CancelAtPeriodEnd {
		t.Fatalf("scheduled %+v", s)
	}
	_, err := rebill(t, sub, "txn_2", jan31.AddDate(0, 1, 0))
	wantKind(t, err, KindConflict, "subscription is cancelled")
	wantKind(t, sub.Cancel(true, jan31), KindConflict, "already cancelled")

	// A subscription to end at period end can still be ended at once.
	_, later := purchase(t, "tier_2")
	if err := later.Cancel(true, jan31); err != nil {
		t.Fatal(err)
	}
	if err := later.Cancel(false, jan31.Add(time.Hour)); err != nil || later.Status() != SubscriptionStatusCancelled {
		t.Fatalf("cancel at once after at period end: %v, %s", err, later.Status())
	}
	if _, ok := later.Changes()[2].(SubscriptionCancelled); !ok || len(later.Changes()) != 3 {
		t.Fatalf("events %+v", later.Changes())
	}
}

func TestRefundsNeverExceedWhatWasPaid(t *testing.T) {
	txn, _ := purchase(t, "tier_1") // 10000
	partial := int64(2500)
	refund, err := txn.Refund(&partial, jan31)
	if err != nil || refund.FullyRefunded || txn.Status() != TransactionPartiallyRefunded || txn.Refunded() != 2500 {
		t.Fatalf("partial refund %+v err %v status %s", refund, err, txn.Status())
	}
	tooMuch := int64(7501)
	_, err = txn.Refund(&tooMuch, jan31)
	wantKind(t, err, KindInvalid, "at most 7500")
	zero := int64(0)
	_, err = txn.Refund(&zero, jan31)
	wantKind(t, err, KindInvalid, "amountCents")
	refund, err = txn.Refund(nil, jan31)
	if err != nil || refund.AmountCents != 7500 || !refund.FullyRefunded || txn.Status() != TransactionRefunded {
		t.Fatalf("refund of the rest %+v err %v status %s", refund, err, txn.Status())
	}
	last := txn.Changes()[len(txn.Changes())-1].(CheckoutRefunded)
	if last.Transaction.Status != TransactionRefunded || last.Refund.AmountCents != 7500 || last.Product.ID != "prod_1" {
		t.Fatalf("refunded event %+v", last)
	}
	_, err = txn.Refund(nil, jan31)
	wantKind(t, err, KindConflict, "already fully refunded")
	// Replaying the stream gives the same state.
	again := TransactionStream("txn_1")
	for _, e := range txn.Changes() {
		again.Replay(e)
	}
	if again.Refunded() != 10000 || again.Status() != TransactionRefunded {
		t.Fatalf("replayed: refunded %d, status %s", again.Refunded(), again.Status())
	}
}

func issue(t *testing.T, at time.Time) (*Activation, string) {
	t.Helper()
	token, err := NewActivationToken()
	if err != nil {
		t.Fatal(err)
	}
	a := ActivationStream(ActivationIDFor(token))
	grant, err := a.Issue(token, checkoutProduct(t), checkoutCustomer(t), "txn_1", "", at)
	if err != nil {
		t.Fatal(err)
	}
	if grant.Token != token || grant.URL != "https://app.example.com/signup?ref=funnel&token="+token || !grant.ExpiresAt.Equal(at.Add(7*24*time.Hour)) {
		t.Fatalf("grant %+v", grant)
	}
	return a, token
}

func TestActivationTokensAreLongRandomURLSafeAndStoredHashed(t *testing.T) {
	a, token := issue(t, jan31)
	b, other := issue(t, jan31)
	if len(token) < 22 || token == other || a.StreamID() == b.StreamID() || strings.ContainsAny(token, "+/=") {
		t.Fatalf("tokens %q and %q, ids %s and %s", token, other, a.StreamID(), b.StreamID())
	}
	issued := a.Changes()[0].(ActivationIssued)
	_, _, data, err := EncodeEvent(issued)
	if err != nil || strings.Contains(string(data), token) {
		t.Fatalf("the issued event names the token: %s (%v)", data, err)
	}
	if !a.Matches(token) || a.Matches(other) || a.Status() != ActivationStatusPending {
		t.Fatal("the activation does not know its own token only")
	}
	sealed := a.Sealed("v1.k.sealed-token")
	if sealed.ActivationID != a.StreamID() || sealed.SealedToken != "v1.k.sealed-token" || sealed.PlainToken != "" ||
		sealed.ActivationBaseURL != "https://app.example.com/signup?ref=funnel" || !sealed.ExpiresAt.Equal(a.ExpiresAt()) {
		t.Fatalf("sealed grant %+v", sealed)
	}
	for _, grant := range []SealedActivationGrant{sealed, {PlainToken: token}} {
		purchased := CheckoutPurchased{Activation: &grant}
		red := purchased.Redacted().(CheckoutPurchased)
		_, _, data, err := EncodeEvent(red)
		if err != nil || strings.Contains(string(data), token) || strings.Contains(string(data), "sealed-token") || *purchased.Activation != grant {
			t.Fatalf("redacted %s (%v)", data, err)
		}
	}
}

// A purchase recorded before tokens were sealed (schema version 1) kept its token and the signup
// URL with it in the clear: it still decodes, with the token as recorded and the URL rebuilt
// exactly as it was.
func TestVersion1PurchasesKeepTheirPlainToken(t *testing.T) {
	token, err := NewActivationToken()
	if err != nil {
		t.Fatal(err)
	}
	link, err := ActivationURL("https://app.example.com/signup?ref=funnel&token=stale#start", token)
	if err != nil {
		t.Fatal(err)
	}
	v1 := `{"accountId": "acc_1", "customerId": "cus_1", "product": {"id": "prod_1"}, "transaction": {"id": "txn_1"},
		"activation": {"token": "` + token + `", "url": "` + link + `", "expiresAt": "2025-02-07T10:00:00Z"}, "purchasedAt": "2025-01-31T10:00:00Z"}`
	e, err := DecodeEvent("CheckoutPurchased", 1, []byte(v1))
	if err != nil {
		t.Fatal(err)
	}
	p := e.(CheckoutPurchased)
	g := p.Activation
	if p.AccountID != "acc_1" || p.Product.ID != "prod_1" || !p.PurchasedAt.Equal(jan31) || g == nil ||
		g.PlainToken != token || g.SealedToken != "" || g.ActivationID != ActivationIDFor(token) || !g.ExpiresAt.Equal(jan31.Add(ActivationTTL)) {
		t.Fatalf("upcast %+v, activation %+v", p, g)
	}
	if rebuilt, err := g.URL(g.PlainToken); err != nil || rebuilt != link {
		t.Fatalf("url %q (%v), recorded %q", rebuilt, err, link)
	}

	without, err := DecodeEvent("CheckoutPurchased", 1, []byte(`{"accountId": "acc_1", "purchasedAt": "2025-01-31T10:00:00Z"}`))
	if err != nil || without.(CheckoutPurchased).Activation != nil {
		t.Fatalf("a version 1 purchase without activation: %+v, %v", without, err)
	}
}

func TestActivationCompletesOnceWithOneExternalUser(t *testing.T) {
	a, _ := issue(t, jan31)
	if err := a.Complete("user-1", jan31.Add(time.Hour)); err != nil || a.Status() != ActivationStatusCompleted {
		t.Fatalf("complete: %v, %s", err, a.Status())
	}
	for _, again := range []string{"user-1", ""} {
		if err := a.Complete(again, jan31.Add(2*time.Hour)); err != nil || len(a.Changes()) != 2 {
			t.Fatalf("completing again with %q: %v, %d events", again, err, len(a.Changes()))
		}
	}
	wantKind(t, a.Complete("user-2", jan31.Add(2*time.Hour)), KindConflict, "another externalUserId")
	a.ExpireIfDue(jan31.AddDate(0, 1, 0))
	if a.Status() != ActivationStatusCompleted {
		t.Fatal("a completed activation expired")
	}
}

func TestActivationExpiresSevenDaysAfterIssue(t *testing.T) {
	a, _ := issue(t, jan31)
	a.ExpireIfDue(jan31.Add(ActivationTTL - time.Second))
	if a.Status() != ActivationStatusPending {
		t.Fatal("expired early")
	}
	wantKind(t, a.Complete("", jan31.Add(ActivationTTL)), KindInvalid, "expired")
	a.ExpireIfDue(jan31.Add(ActivationTTL))
	a.ExpireIfDue(jan31.Add(ActivationTTL + time.Hour))
	if a.Status() != ActivationStatusExpired || len(a.Changes()) != 2 {
		t.Fatalf("status %s after %d events, want expired recorded once", a.Status(), len(a.Changes()))
	}
	wantKind(t, a.Complete("", jan31.Add(ActivationTTL)), KindInvalid, "expired")
}

// The cancellation events report the latest payment as its transaction stands (a refund since),
// and replaying them gives the subscription the command kept.
func TestCancellationReportsTheLatestPaymentAsRefunded(t *testing.T) {
	txn, sub := purchase(t, "tier_2")
	if _, err := txn.Refund(nil, jan31.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	sub.SeeLatestPayment(txn)
	if err := sub.Cancel(false, jan31.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	events := sub.Changes()
	scheduled, cancelled := events[1].(SubscriptionCancelScheduled), events[2].(SubscriptionCancelled)
	if scheduled.Sale.Transaction.Status != TransactionRefunded || cancelled.Sale.Transaction.Status != TransactionRefunded {
		t.Fatalf("the cancellation reports the payment as %s and %s, want refunded", scheduled.Sale.Transaction.Status, cancelled.Sale.Transaction.Status)
	}
	replayed := BillingSubscriptionStream(sub.StreamID())
	for _, e := range events {
		replayed.Replay(e)
	}
	kept, err := sub.EncodeState()
	if err != nil {
		t.Fatal(err)
	}
	fromLog, err := replayed.EncodeState()
	if err != nil {
		t.Fatal(err)
	}
	if string(kept) != string(fromLog) {
		t.Errorf("kept state %s, replayed %s", kept, fromLog)
	}
}
