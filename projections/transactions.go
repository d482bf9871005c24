package projections

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/funnelhq/funnel/domain"
)

// Transactions is the read model of checkout payments: purchases and rebills, with what was
// refunded of each.
type Transactions struct {
	readModel[writer]
	db *sql.DB
}

// NewTransactions reads the transactions read model from db.
func NewTransactions(db *sql.DB) *Transactions {
	return &Transactions{db: db, readModel: eachEvent(db, "transactions", []string{"transactions"},
		on(insertPurchase), on(insertRebill), on(refundTransaction))}
}

// Transaction kinds: the first payment of an order, or a renewal of its subscription.
const (
	TransactionPurchase = "purchase"
	TransactionRebill   = "rebill"
)

func insertPurchase(w writer, r domain.Recorded, e domain.CheckoutPurchased) error {
	return insertTransaction(w, r, TransactionPurchase, e.AccountID, e.CustomerID, e.Sale, e.PurchasedAt)
}

func insertRebill(w writer, r domain.Recorded, e domain.CheckoutRebilled) error {
	return insertTransaction(w, r, TransactionRebill, e.AccountID, e.CustomerID, e.Sale, e.RebilledAt)
}

// insertTransaction stores a payment from its sale. The sale of a purchase may come with an
// activation token: nothing of it is stored here.
func insertTransaction(w writer, r domain.Recorded, kind, accountID, customerID string, sale domain.Sale, paidAt time.Time) error {
	bumpIDs := make([]string, len(sale.Pricing.Bumps))
	for i, b := range sale.Pricing.Bumps {
		bumpIDs[i] = b.ID
	}
	bumps, err := json.Marshal(bumpIDs)
	if err != nil {
		return fmt.Errorf("transaction bumps: %w", err)
	}
	t := sale.Transaction
	return w.exec(`INSERT INTO transactions (id, account_id, customer_id, kind, product_id, pricing_tier_id, bump_ids, txn_id, processor,
			amount, currency, refunded, status, subscription_id, paid_at, seq)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 0, $12, $13, $14, $15)`,
		t.ID, accountID, customerID, kind, sale.Product.ID, sale.Pricing.PricingTierID, string(bumps), t.TxnID, t.Processor,
		t.Amount, t.Currency, t.Status, t.SubscriptionID, millis(paidAt), r.Position)
}

func refundTransaction(w writer, _ domain.Recorded, e domain.CheckoutRefunded) error {
	return w.exec(`UPDATE transactions SET refunded = refunded + $1, status = $2 WHERE id = $3`,
		e.Refund.AmountCents, e.Sale.Transaction.Status, e.Sale.Transaction.ID)
}

// Transaction is a checkout payment as the APIs show it.
type Transaction struct {
	ID             string
	AccountID      string
	CustomerID     string
	Kind           string // TransactionPurchase or TransactionRebill
	ProductID      string
	PricingTierID  string
	BumpIDs        []string
	TxnID          string // the processor's id of the payment
	Processor      string
	Amount         int64 // minor units
	Currency       string
	Refunded       int64 // minor units refunded so far
	Status         string
	SubscriptionID string // "" for a one-time tier
	PaidAt         time.Time
}

const selectTransactions = `SELECT id, account_id, customer_id, kind, product_id, pricing_tier_id, bump_ids, txn_id, processor,
	amount, currency, refunded, status, subscription_id, paid_at FROM transactions`

func scanTransaction(row interface{ Scan(...any) error }) (Transaction, error) {
	var t Transaction
	var bumps string
	var paid int64
	if err := row.Scan(&t.ID, &t.AccountID, &t.CustomerID, &t.Kind, &t.ProductID, &t.PricingTierID, &bumps, &t.TxnID, &t.Processor,
		&t.Amount, &t.Currency, &t.Refunded, &t.Status, &t.SubscriptionID, &paid); err != nil {
		return Transaction{}, notFound(err)
	}
	if err := json.Unmarshal([]byte(bumps), &t.BumpIDs); err != nil {
		return Transaction{}, fmt.Errorf("projections: transaction bumps: %w", err)
	}
	t.PaidAt = fromMillis(paid)
	return t, nil
}

// Get returns one payment of an account: a domain NotFound error when there is none, a domain
// Forbidden one when it belongs to another account (ofAccount).
func (p *Transactions) Get(ctx context.Context, accountID, id string) (Transaction, error) {
	row, err := p.byID(ctx, id)
	return ofAccount(row, err, row.AccountID, accountID, "transaction")
}

// byID returns one payment of any account (ErrNotFound when there is none).
func (p *Transactions) byID(ctx context.Context, id string) (Transaction, error) {
	t, err := scanTransaction(p.db.QueryRowContext(ctx, selectTransactions+` WHERE id = $1`, id))
	if err != nil {
		return Transaction{}, fmt.Errorf("projections: transaction %s: %w", id, err)
	}
	return t, nil
}

// OfCustomer returns every payment of a customer, oldest first. A customer's payments are few
// (one per purchase and renewal), so they are not paged.
func (p *Transactions) OfCustomer(ctx context.Context, customerID string) ([]Transaction, error) {
	out, err := queryAll(ctx, p.db, scanTransaction, selectTransactions+` WHERE customer_id = $1 ORDER BY seq`, customerID)
	if err != nil {
		return nil, fmt.Errorf("projections: transactions of %s: %w", customerID, err)
	}
	return out, nil
}
