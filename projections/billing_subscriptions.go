package projections

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/funnelhq/funnel/domain"
)

// BillingSubscriptions is the read model of the subscriptions of recurring and split tiers.
type BillingSubscriptions struct {
	readModel[writer]
	db *sql.DB
}

// NewBillingSubscriptions reads the subscriptions read model from db.
func NewBillingSubscriptions(db *sql.DB) *BillingSubscriptions {
	return &BillingSubscriptions{db: db, readModel: eachEvent(db, "subscriptions", []string{"subscriptions"},
		on(insertSubscription), on(renewSubscription), on(completeSubscription), on(scheduleSubscriptionCancel), on(cancelSubscription))}
}

func insertSubscription(w writer, r domain.Recorded, e domain.SubscriptionStarted) error {
	return w.exec(`INSERT INTO subscriptions (id, account_id, customer_id, product_id, pricing_tier_id, interval_unit, installments, payments,
			amount, currency, processor, status, cancel_at_period_end, current_period_end, started_at, ended_at, seq)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, $9, $10, $11, 0, $12, $13, 0, $14)`,
		e.SubscriptionID, e.AccountID, e.CustomerID, e.Sale.Product.ID, e.Sale.Pricing.PricingTierID, e.Interval, e.Installments,
		e.RenewalAmount, e.Sale.Transaction.Currency, e.Sale.Transaction.Processor, domain.SubscriptionStatusActive,
		millis(e.CurrentPeriodEnd), millis(e.StartedAt), r.Position)
}

func renewSubscription(w writer, _ domain.Recorded, e domain.SubscriptionRenewed) error {
	return w.exec(`UPDATE subscriptions SET payments = $1, current_period_end = $2 WHERE id = $3`,
		e.Payments, millis(e.CurrentPeriodEnd), e.SubscriptionID)
}

func completeSubscription(w writer, _ domain.Recorded, e domain.SubscriptionCompleted) error {
	return w.exec(`UPDATE subscriptions SET status = $1, ended_at = $2 WHERE id = $3`,
		domain.SubscriptionStatusCompleted, millis(e.CompletedAt), e.SubscriptionID)
}

func scheduleSubscriptionCancel(w writer, _ domain.Recorded, e domain.SubscriptionCancelScheduled) error {
	return w.exec(`UPDATE subscriptions SET cancel_at_period_end = $1 WHERE id = $2`,
		boolInt(e.Subscription.CancelAtPeriodEnd), e.Subscription.ID)
}

func cancelSubscription(w writer, _ domain.Recorded, e domain.SubscriptionCancelled) error {
	return w.exec(`UPDATE subscriptions SET status = $1, ended_at = $2 WHERE id = $3`,
		domain.SubscriptionStatusCancelled, millis(e.Subscription.CancelledAt), e.Subscription.ID)
}

// boolInt stores a flag as 0 or 1, which both databases read back alike.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// BillingSubscription is a subscription as the APIs show it.
type BillingSubscription struct {
	ID                string
	AccountID         string
	CustomerID        string
	ProductID         string
	PricingTierID     string
	Interval          string // month, year or split
	Installments      int    // 0 unless split
	Payments          int    // made so far, the purchase included
	Amount            int64  // of each renewal, minor units
	Currency          string
	Processor         string
	Status            string // active, completed or cancelled
	CancelAtPeriodEnd bool
	CurrentPeriodEnd  time.Time
	StartedAt         time.Time
	EndedAt           time.Time // when it was cancelled or completed; zero while active
}

const selectSubscriptions = `SELECT id, account_id, customer_id, product_id, pricing_tier_id, interval_unit, installments, payments,
	amount, currency, processor, status, cancel_at_period_end, current_period_end, started_at, ended_at FROM subscriptions`

func scanBillingSubscription(row interface{ Scan(...any) error }) (BillingSubscription, error) {
	var s BillingSubscription
	var atPeriodEnd int
	var periodEnd, started, ended int64
	if err := row.Scan(&s.ID, &s.AccountID, &s.CustomerID, &s.ProductID, &s.PricingTierID, &s.Interval, &s.Installments, &s.Payments,
		&s.Amount, &s.Currency, &s.Processor, &s.Status, &atPeriodEnd, &periodEnd, &started, &ended); err != nil {
		return BillingSubscription{}, notFound(err)
	}
	s.CancelAtPeriodEnd = atPeriodEnd == 1
	s.CurrentPeriodEnd, s.StartedAt = fromMillis(periodEnd), fromMillis(started)
	if ended != 0 {
		s.EndedAt = fromMillis(ended)
	}
	return s, nil
}

// Get returns one subscription of an account: a domain NotFound error when there is none, a domain
// Forbidden one when it belongs to another account (ofAccount).
func (p *BillingSubscriptions) Get(ctx context.Context, accountID, id string) (BillingSubscription, error) {
	row, err := p.byID(ctx, id)
	return ofAccount(row, err, row.AccountID, accountID, "subscription")
}

// byID returns one subscription of any account (ErrNotFound when there is none).
func (p *BillingSubscriptions) byID(ctx context.Context, id string) (BillingSubscription, error) {
	s, err := scanBillingSubscription(p.db.QueryRowContext(ctx, selectSubscriptions+` WHERE id = $1`, id))
	if err != nil {
		return BillingSubscription{}, fmt.Errorf("projections: subscription %s: %w", id, err)
	}
	return s, nil
}

// OfCustomer returns every subscription of a customer, oldest first (a customer has few).
func (p *BillingSubscriptions) OfCustomer(ctx context.Context, customerID string) ([]BillingSubscription, error) {
	out, err := queryAll(ctx, p.db, scanBillingSubscription, selectSubscriptions+` WHERE customer_id = $1 ORDER BY seq`, customerID)
	if err != nil {
		return nil, fmt.Errorf("projections: subscriptions of %s: %w", customerID, err)
	}
	return out, nil
}
