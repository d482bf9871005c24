package commands_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sealing"
	"github.com/funnelhq/funnel/infra/sealing/sealingtest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// Checkout commands against the real event store, in both storage modes.

type noObserver struct{}

func (noObserver) CommandHandled(string, time.Duration, error) {}

// clock is the injected Now of the handlers: tests move it instead of sleeping.
type clock struct{ now atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Unix(0, c.now.Load()).UTC() }
func (c *clock) Set(t time.Time)         { c.now.Store(t.UnixNano()) }
func (c *clock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

type checkout struct {
	h       commands.Handlers
	sealer  *sealing.Sealer
	store   *eventstore.Store
	clock   *clock
	meta    commands.Meta
	product *domain.Product
}

var start = time.Date(2025, 1, 31, 9, 0, 0, 0, time.UTC)

// newCheckout opens a store, an account and a saas_signup product with a one-time, a monthly and
// a 3-part split tier and one bump.
func newCheckout(t *testing.T, dialect sqldb.Dialect) *checkout {
	t.Helper()
	store := eventstore.New(sqldbtest.Open(t, dialect))
	t.Cleanup(store.Close)
	c := &checkout{store: store, clock: &clock{}}
	c.clock.Set(start)
	_, c.sealer = sealingtest.NewKey(t)
	c.h = commands.NewHandlers(commands.Dependencies{Store: store, Sealer: c.sealer, Log: zap.NewNop(), Observer: noObserver{}, Now: c.clock.Now})
	c.meta = c.newAccount(t)
	c.product = c.newProduct(t, c.meta.AccountID)
	return c
}

func (c *checkout) newAccount(t *testing.T) commands.Meta {
	t.Helper()
	acc, err := c.h.CreateAccount.Handle(context.Background(), commands.CreateAccount{Name: "Shop"})
	if err != nil {
		t.Fatal(err)
	}
	return commands.Meta{AccountID: acc.AccountID, Actor: domain.OperatorActor}
}

// newProduct appends a product's definition directly: creating products is another command's
// business, and a product never changes once created.
func (c *checkout) newProduct(t *testing.T, accountID string) *domain.Product {
	t.Helper()
	p := domain.ProductStream(domain.NewID("prod"))
	n := 0
	next := func() string { n++; return fmt.Sprintf("%s_%d", p.StreamID(), n) }
	err := p.Create(domain.AccountStream(accountID), domain.ProductSpec{Name: "Course", Forwarding: domain.ForwardingSaaSSignup,
		ActivationBaseURL: "https://app.example.com/signup",
		Tiers: []domain.PricingTierSpec{
			{Name: "Once", Amount: 10000, Currency: "EUR", Interval: domain.IntervalOneTime},
			{Name: "Monthly", Amount: 2500, Currency: "EUR", Interval: domain.IntervalMonth},
			{Name: "Split", Amount: 4000, Currency: "EUR", Interval: domain.IntervalSplit, Installments: 3},
		},
		Bumps: []domain.BumpSpec{{Name: "Workbook", Amount: 900}}}, next, next)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.store.Append(context.Background(), domain.Metadata{AccountID: accountID, Actor: "operator"},
		domain.StreamAppend{StreamID: p.StreamID(), Events: p.Changes()}); err != nil {
		t.Fatal(err)
	}
	return p
}

func (c *checkout) tier(i int) string { return c.product.Tiers()[i].ID }

func (c *checkout) buy(t *testing.T, tier int, email string, bumps ...string) commands.PurchaseResult {
	t.Helper()
	res, err := c.h.Purchase.Handle(context.Background(), commands.Purchase{Meta: c.meta, ProductID: c.product.StreamID(),
		PricingTierID: c.tier(tier), BumpIDs: bumps, Email: email, Name: "Ann Lee"})
	if err != nil {
		t.Fatalf("purchase: %v", err)
	}
	return res
}

// stream reads the events of a stream, decoded.
func (c *checkout) stream(t *testing.T, id string) []domain.Event {
	t.Helper()
	recs, err := c.store.ReadStream(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []domain.Event
	for _, r := range recs {
		e, err := r.Decode()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func wantKind(t *testing.T, err error, kind domain.ErrorKind) {
	t.Helper()
	if domain.KindOf(err) != kind {
		t.Fatalf("err = %v (kind %d), want kind %d", err, domain.KindOf(err), kind)
	}
}

func TestPurchaseOfEachKindOfTier(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		c := newCheckout(t, dialect)
		bump := c.product.Bumps()[0].ID

		once := c.buy(t, 0, "Ann@Example.com", bump)
		if once.SubscriptionID != "" || once.ActivationToken == "" || !once.CustomerCreated {
			t.Fatalf("one-time purchase %+v", once)
		}
		purchased := c.stream(t, once.TransactionID)[0].(domain.CheckoutPurchased)
		if purchased.Transaction.Amount != 10900 || purchased.Transaction.Currency != "EUR" || purchased.Transaction.Processor != "stripe" ||
			purchased.Customer.Email != "Ann@Example.com" || purchased.Contact.FirstName != "Ann" || purchased.Contact.LastName != "Lee" ||
			purchased.Activation == nil || purchased.Activation.ActivationID != once.ActivationID || purchased.Activation.PlainToken != "" {
			t.Fatalf("purchased %+v", purchased)
		}
		// The purchase keeps the token sealed for its activation, and only the key opens it.
		if token, err := c.sealer.Open(purchased.Activation.SealedToken, domain.ActivationTokenSealing(once.ActivationID)); err != nil || string(token) != once.ActivationToken {
			t.Fatalf("sealed token opens to %q (%v), want %q", token, err, once.ActivationToken)
		}
		if raw, err := c.store.ReadStream(context.Background(), once.TransactionID); err != nil || strings.Contains(string(raw[0].Data), once.ActivationToken) {
			t.Fatalf("the recorded purchase holds the token: %s (%v)", raw[0].Data, err)
		}
		contact := c.stream(t, once.ContactID)
		if _, ok := contact[0].(domain.ContactCreated); !ok {
			t.Fatalf("contact stream %+v", contact)
		}
		activation := c.stream(t, once.ActivationID)[0].(domain.ActivationIssued)
		if activation.Email != "Ann@Example.com" || activation.TransactionID != once.TransactionID {
			t.Fatalf("activation %+v", activation)
		}

		monthly := c.buy(t, 1, "ann@example.com")
		if monthly.SubscriptionID == "" || monthly.CustomerCreated || monthly.CustomerID != once.CustomerID || monthly.ContactID != once.ContactID {
			t.Fatalf("monthly purchase %+v (first %+v)", monthly, once)
		}
		started := c.stream(t, monthly.SubscriptionID)[0].(domain.SubscriptionStarted)
		if !started.CurrentPeriodEnd.Equal(time.Date(2025, 2, 28, 9, 0, 0, 0, time.UTC)) || started.Sale.Transaction.ID != monthly.TransactionID {
			t.Fatalf("started %+v", started)
		}
		split := c.buy(t, 2, "bob@example.com")
		if split.SubscriptionID == "" || split.CustomerID == once.CustomerID {
			t.Fatalf("split purchase %+v", split)
		}

		// The log shows the payment before the subscription and the activation it opened.
		c.store.Head(context.Background()) // waits for the horizon to pass the store's commits
		recs, err := c.store.ReadLog(context.Background(), 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, r := range recs {
			if r.StreamID == monthly.TransactionID || r.StreamID == monthly.SubscriptionID || r.StreamID == monthly.ActivationID {
				order = append(order, r.Type)
			}
		}
		if fmt.Sprint(order) != "[CheckoutPurchased SubscriptionStarted ActivationIssued]" {
			t.Fatalf("log order %v", order)
		}
	})
}

func TestPurchaseRefusals(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		c := newCheckout(t, dialect)
		ctx := context.Background()
		buy := func(p commands.Purchase) error {
			_, err := c.h.Purchase.Handle(ctx, p)
			return err
		}
		good := commands.Purchase{Meta: c.meta, ProductID: c.product.StreamID(), PricingTierID: c.tier(0), Email: "a@example.com"}
		bad := good
		bad.Email = "nope"
		wantKind(t, buy(bad), domain.KindInvalid)
		bad = good
		bad.PricingTierID = "tier_x"
		wantKind(t, buy(bad), domain.KindInvalid)
		bad = good
		bad.BumpIDs = []string{"bump_x"}
		wantKind(t, buy(bad), domain.KindInvalid)
		bad = good
		bad.ProductID = "prod_unknown"
		wantKind(t, buy(bad), domain.KindNotFound)
		other := c.newAccount(t)
		bad = good
		bad.Meta = other
		wantKind(t, buy(bad), domain.KindForbidden)
	})
}

func TestRebillAdvancesThePeriodAndSplitPlansEnd(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		c := newCheckout(t, dialect)
		ctx := context.Background()
		monthly := c.buy(t, 1, "ann@example.com")
		c.clock.Set(time.Date(2025, 2, 28, 9, 0, 0, 0, time.UTC))
		res, err := c.h.Rebill.Handle(ctx, commands.Rebill{Meta: c.meta, SubscriptionID: monthly.SubscriptionID, TxnID: "ch_123"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != domain.SubscriptionStatusActive || !res.CurrentPeriodEnd.Equal(time.Date(2025, 3, 31, 9, 0, 0, 0, time.UTC)) {
			t.Fatalf("after rebill %+v", res)
		}
		rebilled := c.stream(t, res.TransactionID)[0].(domain.CheckoutRebilled)
		if rebilled.Transaction.TxnID != "ch_123" || rebilled.Transaction.SubscriptionID != monthly.SubscriptionID || rebilled.Transaction.Amount != 2500 {
			t.Fatalf("rebilled %+v", rebilled)
		}

		split := c.buy(t, 2, "bob@example.com")
		for i := 2; i <= 3; i++ {
			res, err := c.h.Rebill.Handle(ctx, commands.Rebill{Meta: c.meta, SubscriptionID: split.SubscriptionID})
			if err != nil {
				t.Fatalf("installment %d: %v", i, err)
			}
			if want := map[bool]string{true: domain.SubscriptionStatusCompleted, false: domain.SubscriptionStatusActive}[i == 3]; res.Status != want {
				t.Fatalf("after installment %d: %s, want %s", i, res.Status, want)
			}
		}
		_, err = c.h.Rebill.Handle(ctx, commands.Rebill{Meta: c.meta, SubscriptionID: split.SubscriptionID})
		wantKind(t, err, domain.KindConflict)

		_, err = c.h.Rebill.Handle(ctx, commands.Rebill{Meta: c.meta, SubscriptionID: "sub_unknown"})
		wantKind(t, err, domain.KindNotFound)
		_, err = c.h.Rebill.Handle(ctx, commands.Rebill{Meta: c.newAccount(t), SubscriptionID: monthly.SubscriptionID})
		wantKind(t, err, domain.KindForbidden)
	})
}

func TestCancelAtPeriodEndOrAtOnce(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		c := newCheckout(t, dialect)
		ctx := context.Background()
		later := c.buy(t, 1, "ann@example.com")
		res, err := c.h.CancelSubscription.Handle(ctx, commands.CancelSubscription{Meta: c.meta, SubscriptionID: later.SubscriptionID, AtPeriodEnd: true})
		if err != nil || res.Status != domain.SubscriptionStatusActive || !res.CancelAtPeriodEnd {
			t.Fatalf("cancel at period end: %+v, %v", res, err)
		}
		_, err = c.h.Rebill.Handle(ctx, commands.Rebill{Meta: c.meta, SubscriptionID: later.SubscriptionID})
		wantKind(t, err, domain.KindConflict)

		now := c.buy(t, 1, "bob@example.com")
		res, err = c.h.CancelSubscription.Handle(ctx, commands.CancelSubscription{Meta: c.meta, SubscriptionID: now.SubscriptionID})
		if err != nil || res.Status != domain.SubscriptionStatusCancelled {
			t.Fatalf("cancel at once: %+v, %v", res, err)
		}
		events := c.stream(t, now.SubscriptionID)
		if len(events) != 3 {
			t.Fatalf("subscription stream %+v", events)
		}
		if _, ok := events[2].(domain.SubscriptionCancelled); !ok {
			t.Fatalf("last event %T", events[2])
		}
		_, err = c.h.Rebill.Handle(ctx, commands.Rebill{Meta: c.meta, SubscriptionID: now.SubscriptionID})
		wantKind(t, err, domain.KindConflict)
		_, err = c.h.CancelSubscription.Handle(ctx, commands.CancelSubscription{Meta: c.meta, SubscriptionID: now.SubscriptionID})
		wantKind(t, err, domain.KindConflict)
	})
}

func TestRefundsPartialThenFullNeverOverRefund(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		c := newCheckout(t, dialect)
		ctx := context.Background()
		txn := c.buy(t, 0, "ann@example.com").TransactionID // 10000
		amount := func(n int64) *int64 { return &n }
		res, err := c.h.Refund.Handle(ctx, commands.Refund{Meta: c.meta, TransactionID: txn, AmountCents: amount(4000)})
		if err != nil || res.Status != domain.TransactionPartiallyRefunded || res.Refund.FullyRefunded {
			t.Fatalf("partial refund %+v, %v", res, err)
		}
		_, err = c.h.Refund.Handle(ctx, commands.Refund{Meta: c.meta, TransactionID: txn, AmountCents: amount(6001)})
		wantKind(t, err, domain.KindInvalid)
		res, err = c.h.Refund.Handle(ctx, commands.Refund{Meta: c.meta, TransactionID: txn})
		if err != nil || res.Status != domain.TransactionRefunded || res.Refund.AmountCents != 6000 || !res.Refund.FullyRefunded {
			t.Fatalf("full refund %+v, %v", res, err)
		}
		_, err = c.h.Refund.Handle(ctx, commands.Refund{Meta: c.meta, TransactionID: txn})
		wantKind(t, err, domain.KindConflict)
		_, err = c.h.Refund.Handle(ctx, commands.Refund{Meta: c.meta, TransactionID: "txn_unknown"})
		wantKind(t, err, domain.KindNotFound)
		_, err = c.h.Refund.Handle(ctx, commands.Refund{Meta: c.newAccount(t), TransactionID: txn})
		wantKind(t, err, domain.KindForbidden)
	})
}

// Concurrent refunds of 3000 each on a 10000 payment: at most three succeed, and together they
// never return more than was paid, whatever the interleaving.
func TestConcurrentRefundsNeverOverRefund(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		c := newCheckout(t, dialect)
		txn := c.buy(t, 0, "ann@example.com").TransactionID
		const workers = 6
		var wg sync.WaitGroup
		var succeeded atomic.Int64
		errs := make(chan error, workers)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				amount := int64(3000)
				_, err := c.h.Refund.Handle(context.Background(), commands.Refund{Meta: c.meta, TransactionID: txn, AmountCents: &amount})
				switch {
				case err == nil:
					succeeded.Add(1)
				case domain.KindOf(err) != domain.KindInvalid:
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("refund failed other than by refusal: %v", err)
		}
		var refunded int64
		for _, e := range c.stream(t, txn)[1:] {
			refunded += e.(domain.CheckoutRefunded).Refund.AmountCents
		}
		if succeeded.Load() != 3 || refunded != 9000 {
			t.Fatalf("%d refunds succeeded returning %d, want 3 returning 9000", succeeded.Load(), refunded)
		}
	})
}

func TestOneCustomerPerEmailUnderConcurrentPurchases(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		c := newCheckout(t, dialect)
		const buyers = 8
		var wg sync.WaitGroup
		results := make([]commands.PurchaseResult, buyers)
		errs := make([]error, buyers)
		for i := range buyers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = c.h.Purchase.Handle(context.Background(), commands.Purchase{Meta: c.meta, ProductID: c.product.StreamID(),
					PricingTierID: c.tier(1), Email: []string{"same@example.com", "SAME@Example.com"}[i%2], Name: "Ann Lee"})
			}()
		}
		wg.Wait()
		created := 0
		for i, err := range errs {
			if err != nil {
				t.Fatalf("purchase %d: %v", i, err)
			}
			if results[i].CustomerID != results[0].CustomerID {
				t.Fatalf("two customers for one email: %s and %s", results[i].CustomerID, results[0].CustomerID)
			}
			if results[i].CustomerCreated {
				created++
			}
		}
		customer := c.stream(t, results[0].CustomerID)
		if created != 1 || len(customer) != 1 {
			t.Fatalf("%d purchases created the customer, whose stream has %d events", created, len(customer))
		}
		if _, ok := customer[0].(domain.CustomerCreated); !ok {
			t.Fatalf("customer stream %+v", customer)
		}
	})
}

func TestActivationCompleteAndExpiry(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		c := newCheckout(t, dialect)
		ctx := context.Background()
		token := c.buy(t, 0, "ann@example.com").ActivationToken

		view, err := c.h.ValidateActivation.Handle(ctx, commands.ValidateActivation{Meta: c.meta, Token: token})
		if err != nil || view.Status != domain.ActivationStatusPending || view.Email != "ann@example.com" || view.ProductName != "Course" ||
			view.ActivationURL != "https://app.example.com/signup?token="+token || !view.ExpiresAt.Equal(start.Add(7*24*time.Hour)) {
			t.Fatalf("view %+v, %v", view, err)
		}
		_, err = c.h.ValidateActivation.Handle(ctx, commands.ValidateActivation{Meta: c.meta, Token: token + "x"})
		wantKind(t, err, domain.KindNotFound)
		_, err = c.h.ValidateActivation.Handle(ctx, commands.ValidateActivation{Meta: c.newAccount(t), Token: token})
		wantKind(t, err, domain.KindForbidden)

		complete := func(id string) (commands.ActivationView, error) {
			return c.h.CompleteActivation.Handle(ctx, commands.CompleteActivation{Meta: c.meta, Token: token, ExternalUserID: id})
		}
		if view, err := complete("user-1"); err != nil || view.Status != domain.ActivationStatusCompleted || view.ExternalUserID != "user-1" {
			t.Fatalf("complete %+v, %v", view, err)
		}
		if _, err := complete("user-1"); err != nil {
			t.Fatalf("completing again with the same id: %v", err)
		}
		if _, err := complete(""); err != nil {
			t.Fatalf("completing again with no id: %v", err)
		}
		_, err = complete("user-2")
		wantKind(t, err, domain.KindConflict)

		// Another purchase's token, used eight days later: expired, and recorded as such once.
		late := c.buy(t, 0, "bob@example.com")
		c.clock.Advance(7*24*time.Hour + time.Minute)
		_, err = c.h.CompleteActivation.Handle(ctx, commands.CompleteActivation{Meta: c.meta, Token: late.ActivationToken})
		wantKind(t, err, domain.KindInvalid)
		view, err = c.h.ValidateActivation.Handle(ctx, commands.ValidateActivation{Meta: c.meta, Token: late.ActivationToken})
		if err != nil || view.Status != domain.ActivationStatusExpired {
			t.Fatalf("expired view %+v, %v", view, err)
		}
		events := c.stream(t, late.ActivationID)
		if len(events) != 2 {
			t.Fatalf("activation stream %+v, want issued then expired", events)
		}
		if _, ok := events[1].(domain.ActivationExpired); !ok {
			t.Fatalf("second event %T", events[1])
		}
		// The completed activation does not expire.
		if view, err := complete("user-1"); err != nil || view.Status != domain.ActivationStatusCompleted {
			t.Fatalf("completed activation after seven days: %+v, %v", view, err)
		}
	})
}

// Within one process the handlers queue commands of one stream; across processes only the
// stream's expected version keeps two refunds apart. Two refunds decided on the same read of the
// transaction, as two processes would decide them, cannot both be appended.
func TestRefundsDecidedOnOneReadCannotBothCommit(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		c := newCheckout(t, dialect)
		ctx := context.Background()
		txn := c.buy(t, 0, "ann@example.com").TransactionID // 10000
		recs, err := c.store.ReadStream(ctx, txn)
		if err != nil {
			t.Fatal(err)
		}
		decide := func() domain.StreamAppend {
			agg := domain.TransactionStream(txn)
			for _, r := range recs {
				e, err := r.Decode()
				if err != nil {
					t.Fatal(err)
				}
				agg.Replay(e)
			}
			amount := int64(6000)
			if _, err := agg.Refund(&amount, c.clock.Now()); err != nil {
				t.Fatal(err)
			}
			return domain.StreamAppend{StreamID: txn, ExpectedVersion: int64(len(recs)), Events: agg.Changes()}
		}
		first, second := decide(), decide()
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, a := range []domain.StreamAppend{first, second} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = c.store.Append(ctx, domain.Metadata{AccountID: c.meta.AccountID, Actor: "operator"}, a)
			}()
		}
		wg.Wait()
		failed := 0
		for _, err := range errs {
			switch {
			case errors.Is(err, domain.ErrWrongVersion):
				failed++
			case err != nil:
				t.Fatalf("append: %v", err)
			}
		}
		if failed != 1 || len(c.stream(t, txn)) != 2 {
			t.Fatalf("%d appends refused, stream has %d events: want one refund committed", failed, len(c.stream(t, txn)))
		}
	})
}
