package domain

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Transaction status values (decisions.md "Checkout, subscriptions, activations").
const (
	TransactionSucceeded         = "succeeded"
	TransactionPartiallyRefunded = "partially_refunded"
	TransactionRefunded          = "refunded"
)

// DefaultProcessor is the processor of a payment recorded without one: the operator API stands
// in for a card processor's callbacks, and Stripe is the one integrators most expect to see.
const DefaultProcessor = "stripe"

const maxTxnIDLength = 255

// processorName is a processor's name as payloads carry it: short, lower case, no spaces.
var processorName = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,31}$`)

// Payment is what a processor reports of money received.
type Payment struct {
	Processor string
	TxnID     string // the processor's id of the payment; "" takes the transaction's own id
	At        time.Time
}

// TransactionIDFor is the id of the one transaction an account can record for a processor's
// txnId (decisions.md "Processor transaction ids"): a processor that notifies the same payment
// twice reaches the same stream, whose expected version records it once under any concurrency.
// Unlike an email, a txnId is compared exactly (processors' ids are case-sensitive).
func TransactionIDFor(accountID, txnID string) string {
	return derivedID("txn", accountID, "transaction", txnID)
}

// IsTransactionID tells whether id has the shape of a transaction id (random or TransactionIDFor).
func IsTransactionID(id string) bool {
	return strings.HasPrefix(id, "txn_") && len(id) == len("txn_")+26
}

// NewPayment checks a payment's processor (default DefaultProcessor) and processor id.
func NewPayment(processor, txnID string, at time.Time) (Payment, error) {
	processor, txnID = strings.TrimSpace(processor), strings.TrimSpace(txnID)
	if processor == "" {
		processor = DefaultProcessor
	}
	if !processorName.MatchString(processor) {
		return Payment{}, InvalidField("processor", "processor must be a short lower-case name such as stripe or paypal")
	}
	if err := checkLength("txnId", txnID, maxTxnIDLength); err != nil {
		return Payment{}, err
	}
	return Payment{Processor: processor, TxnID: txnID, At: at.UTC()}, nil
}

// Order is a valid choice of a product's pricing tier and bumps.
type Order struct {
	Product *Product
	Tier    PricingTier
	Bumps   []Bump
}

// NewOrder checks that the tier and the bumps (each at most once) belong to the product.
func NewOrder(product *Product, tierID string, bumpIDs []string) (Order, error) {
	tier, ok := product.Tier(tierID)
	if !ok {
		return Order{}, InvalidField("pricingTierId", "pricingTierId is not a pricing tier of this product")
	}
	order := Order{Product: product, Tier: tier}
	seen := map[string]bool{}
	for i, id := range bumpIDs {
		bump, ok := product.Bump(id)
		if !ok {
			return Order{}, InvalidField(fmt.Sprintf("bumpIds[%d]", i), "bumpIds[%d] is not a bump of this product", i)
		}
		if seen[id] {
			return Order{}, InvalidField(fmt.Sprintf("bumpIds[%d]", i), "bumpIds[%d] repeats a bump", i)
		}
		seen[id] = true
		order.Bumps = append(order.Bumps, bump)
	}
	return order, nil
}

// Amount is what the first payment of the order costs: the tier and every bump.
func (o Order) Amount() int64 {
	amount := o.Tier.Amount
	for _, b := range o.Bumps {
		amount += b.Amount
	}
	return amount
}

// Transaction is one payment: the first one of a purchase, or a rebill of a subscription. Its
// refunds are recorded on its stream, so that two concurrent refunds are decided one after the
// other and never return more than was paid.
type Transaction struct {
	id         string
	exists     bool
	accountID  string
	customerID string
	sale       Sale
	activation *SealedActivationGrant // the SaaS signup a purchase handed over, its token sealed
	paidAt     time.Time
	refunded   int64
	changes
}

// TransactionStream returns an empty transaction to load stream id into.
func TransactionStream(id string) *Transaction { return &Transaction{id: id} }

// StreamID is the transaction id.
func (t *Transaction) StreamID() string { return t.id }

// Exists tells whether the payment was recorded.
func (t *Transaction) Exists() bool { return t.exists }

// AccountID is the account that was paid.
func (t *Transaction) AccountID() string { return t.accountID }

// CustomerID is the customer who paid.
func (t *Transaction) CustomerID() string { return t.customerID }

// Activation is the SaaS signup the purchase handed over, its token sealed (nil when none, and
// for a rebill).
func (t *Transaction) Activation() *SealedActivationGrant { return t.activation }

// Status is succeeded, partially_refunded or refunded.
func (t *Transaction) Status() string { return t.sale.Transaction.Status }

// Amount is what was paid, in minor units.
func (t *Transaction) Amount() int64 { return t.sale.Transaction.Amount }

// Refunded is what was returned so far, in minor units.
func (t *Transaction) Refunded() int64 { return t.refunded }

// Sale is the payment as checkout events show it.
func (t *Transaction) Sale() Sale { return t.sale }

// Purchase records the first payment of an order. subscriptionID is the subscription it opens
// ("" for a one-time tier); activation is the SaaS signup it hands over, its token sealed (nil
// when none: see Activation.Sealed).
func (t *Transaction) Purchase(order Order, customer *Customer, contact SaleContact, pay Payment, subscriptionID string, activation *SealedActivationGrant) {
	sale := Sale{
		Product:     SaleProduct{ID: order.Product.StreamID(), Name: order.Product.Name(), InternalName: order.Product.InternalName()},
		Transaction: t.saleTransaction(pay, order.Amount(), order.Tier.Currency, subscriptionID),
		Pricing:     pricingOf(order.Tier, order.Bumps),
		Customer:    customer.Sale(),
		Contact:     contact,
	}
	t.record(CheckoutPurchased{AccountID: customer.AccountID(), CustomerID: customer.StreamID(), Sale: sale, Activation: activation, PurchasedAt: pay.At})
}

// rebill records a renewal payment of a subscription; the subscription decides it (Subscription.Rebill).
func (t *Transaction) rebill(accountID, customerID string, sale Sale, installment int, at time.Time) {
	t.record(CheckoutRebilled{AccountID: accountID, CustomerID: customerID, Sale: sale, Installment: installment, RebilledAt: at})
}

func (t *Transaction) saleTransaction(pay Payment, amount int64, currency, subscriptionID string) SaleTransaction {
	txnID := pay.TxnID
	if txnID == "" {
		txnID = t.id
	}
	return SaleTransaction{ID: t.id, TxnID: txnID, Amount: amount, Currency: currency, Status: TransactionSucceeded,
		Processor: pay.Processor, SubscriptionID: subscriptionID}
}

// Refund returns amountCents of the payment (nil: all that remains). It never returns more than
// remains: a refund of a refunded transaction is a conflict, an amount above what remains invalid.
func (t *Transaction) Refund(amountCents *int64, at time.Time) (Refund, error) {
	remaining := t.Amount() - t.refunded
	if remaining == 0 {
		return Refund{}, Conflict("transaction is already fully refunded")
	}
	amount := remaining
	if amountCents != nil {
		amount = *amountCents
	}
	switch {
	case amount <= 0:
		return Refund{}, InvalidField("amountCents", "amountCents must be a positive amount in minor units")
	case amount > remaining:
		return Refund{}, InvalidField("amountCents", "amountCents must be at most %d, what remains of the transaction", remaining)
	}
	refund := Refund{AmountCents: amount, FullyRefunded: amount == remaining, RefundedAt: at.UTC()}
	sale := t.sale
	sale.Transaction.Status = TransactionPartiallyRefunded
	if refund.FullyRefunded {
		sale.Transaction.Status = TransactionRefunded
	}
	t.record(CheckoutRefunded{AccountID: t.accountID, CustomerID: t.customerID, Sale: sale, Refund: refund})
	return refund, nil
}

// Replay applies one event of the transaction's stream.
func (t *Transaction) Replay(e Event) { t.when(e) }

func (t *Transaction) record(e Event) {
	t.when(e)
	t.pending = append(t.pending, e)
}

func (t *Transaction) when(e Event) {
	switch e := e.(type) {
	case CheckoutPurchased:
		t.exists, t.accountID, t.customerID, t.sale, t.paidAt = true, e.AccountID, e.CustomerID, e.Sale, e.PurchasedAt
		t.activation = e.Activation
	case CheckoutRebilled:
		t.exists, t.accountID, t.customerID, t.sale, t.paidAt = true, e.AccountID, e.CustomerID, e.Sale, e.RebilledAt
	case CheckoutRefunded:
		t.sale.Transaction.Status = e.Sale.Transaction.Status
		t.refunded += e.Refund.AmountCents
	}
}

// Refund is money returned from a transaction, as checkout.refunded reports it.
type Refund struct {
	AmountCents   int64     `json:"amountCents"`
	FullyRefunded bool      `json:"fullyRefunded"`
	RefundedAt    time.Time `json:"refundedAt"`
}

// CheckoutPurchased is the first successful payment of a purchase (checkout.purchased). For a
// saas_signup product it keeps the activation token sealed with the server key (schema version 2),
// for the webhook to hand over; purchases recorded before (version 1) kept it in the clear, and
// are upcast with it as it was. Every view of the log shows it redacted (SecretEvent).
type CheckoutPurchased struct {
	AccountID  string `json:"accountId"`
	CustomerID string `json:"customerId"`
	Sale
	Activation  *SealedActivationGrant `json:"activation,omitempty"`
	PurchasedAt time.Time              `json:"purchasedAt"`
}

// CheckoutRebilled is a renewal payment of a subscription or a split plan (checkout.rebilled).
// Installment counts the subscription's payments, this one included (the purchase is the first).
type CheckoutRebilled struct {
	AccountID  string `json:"accountId"`
	CustomerID string `json:"customerId"`
	Sale
	Installment int       `json:"installment"`
	RebilledAt  time.Time `json:"rebilledAt"`
}

// CheckoutRefunded is money returned from a transaction (checkout.refunded); its sale shows the
// transaction's status after the refund.
type CheckoutRefunded struct {
	AccountID  string `json:"accountId"`
	CustomerID string `json:"customerId"`
	Sale
	Refund Refund `json:"refund"`
}

func (CheckoutPurchased) EventType() string { return "CheckoutPurchased" }
func (CheckoutRebilled) EventType() string  { return "CheckoutRebilled" }
func (CheckoutRefunded) EventType() string  { return "CheckoutRefunded" }

// Payments of a subscription belong to its history (domain.SubscriptionEvent).
func (e CheckoutPurchased) SubscriptionRef() string { return e.Transaction.SubscriptionID }
func (e CheckoutRebilled) SubscriptionRef() string  { return e.Transaction.SubscriptionID }
func (e CheckoutRefunded) SubscriptionRef() string  { return e.Transaction.SubscriptionID }

// Payments belong to the buyer's contact history too (domain.ContactEvent).
func (e CheckoutPurchased) ContactRef() string { return e.Contact.ContactID }
func (e CheckoutRebilled) ContactRef() string  { return e.Contact.ContactID }
func (e CheckoutRefunded) ContactRef() string  { return e.Contact.ContactID }

// Redacted is the purchase with its activation token hidden, sealed or not (SecretEvent): a view
// of the log has no use for it.
func (e CheckoutPurchased) Redacted() Event {
	if e.Activation != nil {
		grant := *e.Activation
		if grant.SealedToken != "" {
			grant.SealedToken = RedactedSecret
		}
		if grant.PlainToken != "" {
			grant.PlainToken = RedactedSecret
		}
		e.Activation = &grant
	}
	return e
}

// purchasedV1 is the activation member of CheckoutPurchased as version 1 recorded it: the token
// in the clear, and the signup page with the token in its query.
type purchasedV1 struct {
	Token     string    `json:"token"`
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// upcastPurchasedV1 turns the activation of a version 1 purchase into a SealedActivationGrant
// that keeps its token as recorded (PlainToken): the token is in the log already, and the log is
// never rewritten. The signup page loses its token, which ActivationURL puts back as it was.
func upcastPurchasedV1(old json.RawMessage) (json.RawMessage, error) {
	var event map[string]json.RawMessage
	if err := json.Unmarshal(old, &event); err != nil {
		return nil, err
	}
	raw, ok := event["activation"]
	if !ok || string(raw) == "null" {
		return old, nil
	}
	var v1 purchasedV1
	if err := json.Unmarshal(raw, &v1); err != nil {
		return nil, err
	}
	u, err := url.Parse(v1.URL)
	if err != nil {
		return nil, fmt.Errorf("activation url: %w", err)
	}
	q := u.Query()
	q.Del("token")
	u.RawQuery = q.Encode()
	grant := SealedActivationGrant{ActivationID: ActivationIDFor(v1.Token), PlainToken: v1.Token, ActivationBaseURL: u.String(), ExpiresAt: v1.ExpiresAt}
	if event["activation"], err = json.Marshal(grant); err != nil {
		return nil, err
	}
	return json.Marshal(event)
}

func init() {
	register(CheckoutPurchased{}, 2, map[int]Upcaster{1: upcastPurchasedV1})
	personal(CheckoutPurchased{}, salePaths("")...)
	register(CheckoutRebilled{}, 1, nil)
	personal(CheckoutRebilled{}, salePaths("")...)
	register(CheckoutRefunded{}, 1, nil)
	personal(CheckoutRefunded{}, salePaths("")...)
}
