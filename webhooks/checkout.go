package webhooks

// The checkout payloads (integration-api.md section 6), member for member, in the contract's
// order. No domain event produces them yet: until checkouts exist they are only samples. The
// checkout issue adds a mapper per event and names it as the event's source in events.go.

// checkoutPayment is the checkout.purchased and checkout.rebilled payload.
type checkoutPayment struct {
	IsRebill    bool                `json:"isRebill"`
	Product     checkoutProduct     `json:"product"`
	Transaction checkoutTransaction `json:"transaction"`
	Pricing     checkoutPricing     `json:"pricing"`
	Customer    checkoutCustomer    `json:"customer"`
	Contact     contactSummary      `json:"contact"`
	// Activation is sent with a first purchase when the checkout forwards to SaaS Signup.
	Activation *checkoutActivation `json:"activation,omitempty"`
}

// checkoutRefunded is the checkout.refunded payload: the payment's members and the refund.
type checkoutRefunded struct {
	checkoutPayment
	Refund checkoutRefund `json:"refund"`
}

// checkoutCancelScheduled is the checkout.subscription_cancel_scheduled payload.
type checkoutCancelScheduled struct {
	checkoutSubject
	Subscription scheduledCancellation `json:"subscription"`
}

// checkoutSubscriptionCancelled is the checkout.subscription_cancelled payload.
type checkoutSubscriptionCancelled struct {
	checkoutSubject
	Subscription endedSubscription `json:"subscription"`
}

// checkoutSubject is what a cancellation is about: the checkout, its buyer, their contact.
type checkoutSubject struct {
	Product  checkoutProduct  `json:"product"`
	Customer checkoutCustomer `json:"customer"`
	Contact  contactSummary   `json:"contact"`
}

type checkoutProduct struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	InternalName string `json:"internalName"`
}

type checkoutTransaction struct {
	ID             string `json:"id"`
	TxnID          string `json:"txnId"`
	Amount         int64  `json:"amount"` // in cents
	Currency       string `json:"currency"`
	Status         string `json:"status"`
	Processor      string `json:"processor"`
	SubscriptionID string `json:"subscriptionId"`
}

type checkoutPricing struct {
	TierIndex     int    `json:"tierIndex"`
	TierName      string `json:"tierName"`
	PricingTierID string `json:"pricingTierId"`
	BumpIndices   []int  `json:"bumpIndices"`
	// Bumps are the bump offers bought with the plan; the contract does not list a bump's
	// members yet, the checkout issue does.
	Bumps []any `json:"bumps"`
}

type checkoutCustomer struct {
	Email     string `json:"email"`
	Name      string `json:"name"`
	ContactID string `json:"contactId"`
}

type checkoutActivation struct {
	Token     string `json:"token"`
	URL       string `json:"url"`
	ExpiresAt string `json:"expiresAt"`
}

type checkoutRefund struct {
	AmountCents   int64  `json:"amountCents"`
	FullyRefunded bool   `json:"fullyRefunded"`
	RefundedAt    string `json:"refundedAt"`
}

type scheduledCancellation struct {
	ID                string `json:"id"`
	Status            string `json:"status"`
	Processor         string `json:"processor"`
	CancelAtPeriodEnd bool   `json:"cancelAtPeriodEnd"`
	CurrentPeriodEnd  string `json:"currentPeriodEnd"`
	ScheduledAt       string `json:"scheduledAt"`
}

type endedSubscription struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	Processor   string `json:"processor"`
	CancelledAt string `json:"cancelledAt"`
}
