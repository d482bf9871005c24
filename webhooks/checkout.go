package webhooks

import (
	"fmt"

	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/domain"
)

// The checkout payloads (integration-api.md section 6), member for member, in the contract's
// order, and their mappers: each checkout webhook is made from its one domain event, whose
// embedded domain.Sale names the members as the payloads do (domain/checkout_sale.go).

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

// checkoutCancelScheduled is the checkout.subscription_cancel_scheduled payload: the members of
// the subscription's latest payment, and the subscription.
type checkoutCancelScheduled struct {
	checkoutPayment
	Subscription scheduledCancellation `json:"subscription"`
}

// checkoutSubscriptionCancelled is the checkout.subscription_cancelled payload: the members of
// the subscription's latest payment, and the subscription.
type checkoutSubscriptionCancelled struct {
	checkoutPayment
	Subscription endedSubscription `json:"subscription"`
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
	// Bumps are the bump offers bought with the plan: {id, index, name, amount}, as the
	// products API lists them (the contract leaves their members open).
	Bumps []domain.Bump `json:"bumps"`
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

// holdsSecret tells whether the payload carries an activation token (secretCarrier).
func (p checkoutPayment) holdsSecret() bool { return p.Activation != nil }

// purchasedData maps a first payment. Its activation is there when the product forwards to a
// SaaS signup: the token, which the purchase keeps sealed, opened with open, and the signup URL
// with it, as the purchase's answer gave them.
func purchasedData(e domain.CheckoutPurchased, open Opener) (checkoutPayment, resources, error) {
	p, about := paymentOf(e.Sale), saleResources(e.Sale, e.Transaction.SubscriptionID)
	if a := e.Activation; a != nil {
		token, err := activationToken(*a, open)
		if err != nil {
			return p, about, err
		}
		link, err := a.URL(token)
		if err != nil {
			return p, about, fmt.Errorf("webhooks: activation %s: %w", a.ActivationID, err)
		}
		p.Activation = &checkoutActivation{Token: token, URL: link, ExpiresAt: wire.Time(a.ExpiresAt)}
	}
	return p, about, nil
}

// activationToken is the token of a purchase's activation: opened, or as recorded by a purchase
// from before tokens were sealed (domain.SealedActivationGrant.PlainToken).
func activationToken(a domain.SealedActivationGrant, open Opener) (string, error) {
	if a.SealedToken == "" {
		return a.PlainToken, nil
	}
	token, err := open.Open(a.SealedToken, domain.ActivationTokenSealing(a.ActivationID))
	if err != nil {
		return "", fmt.Errorf("its activation token %w: %w", errNotOpened, err)
	}
	return string(token), nil
}

// rebilledData maps a renewal payment.
func rebilledData(e domain.CheckoutRebilled) (checkoutPayment, resources) {
	p := paymentOf(e.Sale)
	p.IsRebill = true
	return p, saleResources(e.Sale, e.Transaction.SubscriptionID)
}

// refundedData maps a refund: the payment (a purchase or a rebill), with its status after the
// refund, and the refund.
func refundedData(e domain.CheckoutRefunded) (checkoutRefunded, resources) {
	r := e.Refund
	return checkoutRefunded{
		checkoutPayment: paymentOf(e.Sale),
		Refund:          checkoutRefund{AmountCents: r.AmountCents, FullyRefunded: r.FullyRefunded, RefundedAt: wire.Time(r.RefundedAt)},
	}, saleResources(e.Sale, e.Transaction.SubscriptionID)
}

// cancelScheduledData maps a cancellation as it is asked for.
func cancelScheduledData(e domain.SubscriptionCancelScheduled) (checkoutCancelScheduled, resources) {
	s := e.Subscription
	return checkoutCancelScheduled{checkoutPayment: paymentOf(e.Sale), Subscription: scheduledCancellation{
		ID: s.ID, Status: s.Status, Processor: s.Processor, CancelAtPeriodEnd: s.CancelAtPeriodEnd,
		CurrentPeriodEnd: wire.Time(s.CurrentPeriodEnd), ScheduledAt: wire.Time(s.ScheduledAt),
	}}, saleResources(e.Sale, s.ID)
}

// subscriptionCancelledData maps the end of a subscription.
func subscriptionCancelledData(e domain.SubscriptionCancelled) (checkoutSubscriptionCancelled, resources) {
	s := e.Subscription
	return checkoutSubscriptionCancelled{checkoutPayment: paymentOf(e.Sale), Subscription: endedSubscription{
		ID: s.ID, Status: s.Status, Processor: s.Processor, CancelledAt: wire.Time(s.CancelledAt),
	}}, saleResources(e.Sale, s.ID)
}

// paymentOf is the payment members of a sale.
func paymentOf(s domain.Sale) checkoutPayment {
	t := s.Transaction
	return checkoutPayment{
		IsRebill: s.IsRebill,
		Product:  checkoutProduct{ID: s.Product.ID, Name: s.Product.Name, InternalName: s.Product.InternalName},
		Transaction: checkoutTransaction{ID: t.ID, TxnID: t.TxnID, Amount: t.Amount, Currency: t.Currency, Status: t.Status,
			Processor: t.Processor, SubscriptionID: t.SubscriptionID},
		Pricing: checkoutPricing{TierIndex: s.Pricing.TierIndex, TierName: s.Pricing.TierName, PricingTierID: s.Pricing.PricingTierID,
			BumpIndices: wire.List(s.Pricing.BumpIndices), Bumps: wire.List(s.Pricing.Bumps)},
		Customer: checkoutCustomer{Email: s.Customer.Email, Name: s.Customer.Name, ContactID: s.Customer.ContactID},
		Contact:  contactSummary{ContactID: s.Contact.ContactID, Email: s.Contact.Email, FirstName: s.Contact.FirstName, LastName: s.Contact.LastName},
	}
}

// saleResources are the ids a checkout event is about: what the product, pricing and bump
// filters match, and the resource whose events reach a webhook in order (decisions.md
// "Webhooks"): the billing subscription, or the transaction of a one-time purchase, so that its
// refund never arrives before the purchase.
func saleResources(s domain.Sale, subscriptionID string) resources {
	orderingKey := subscriptionID
	if orderingKey == "" {
		orderingKey = s.Transaction.ID
	}
	r := resources{productID: s.Product.ID, pricingTierID: s.Pricing.PricingTierID, orderingKey: orderingKey}
	for _, b := range s.Pricing.Bumps {
		r.bumpIDs = append(r.bumpIDs, b.ID)
	}
	return r
}
