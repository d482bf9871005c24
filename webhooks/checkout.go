package webhooks

import (
	"fmt"
	"time"

	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/domain"
)

// The mappers of the checkout webhooks: each fills the generated wire type of its payload
// (integration.yaml's webhook schemas) from its one domain event, whose embedded domain.Sale
// names the members as the payloads do (domain/checkout_sale.go).

// checkoutEvents are the outbound events of checkout (events.go), each beside its mapper and its
// sample below.
var checkoutEvents = []outboundEvent{
	// The purchase keeps its activation token sealed: its mapper opens it (fromSealed), and the
	// delivery of a payload with a token is stored sealed in the outbox (sealedWhen).
	sealedWhen(define("checkout.purchased", domain.ScopeCheckoutRead, paymentFilters, purchasedSample,
		fromSealed(purchasedData)).alsoKnownAs("checkout.paid"), hasActivation),
	define("checkout.rebilled", domain.ScopeCheckoutRead, paymentFilters, rebilledSample, from(rebilledData)),
	define("checkout.refunded", domain.ScopeCheckoutRead, paymentFilters, refundedSample, from(refundedData)),
	define("checkout.subscription_cancel_scheduled", domain.ScopeCheckoutRead,
		[]filter{byProduct}, cancelScheduledSample, from(cancelScheduledData)),
	define("checkout.subscription_cancelled", domain.ScopeCheckoutRead,
		[]filter{byProduct}, subscriptionCancelledSample, from(subscriptionCancelledData)),
}

// paymentFilters apply to the events of one payment: the checkout, its pricing option, its bumps.
var paymentFilters = []filter{byProduct, byPricingTier, byBump}

// hasActivation tells whether a payment payload carries an activation token: its delivery's
// body is then stored sealed (events.go).
func hasActivation(p wire.CheckoutPaymentData) bool { return p.Activation != nil }

// purchasedData maps a first payment. Its activation is there when the product forwards to a
// SaaS signup: the token, which the purchase keeps sealed, opened with open, and the signup URL
// with it, as the purchase's answer gave them.
func purchasedData(e domain.CheckoutPurchased, open Opener) (wire.CheckoutPaymentData, resources, error) {
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
		p.Activation = &wire.CheckoutActivation{Token: token, Url: link, ExpiresAt: wire.At(a.ExpiresAt)}
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
func rebilledData(e domain.CheckoutRebilled) (wire.CheckoutPaymentData, resources) {
	p := paymentOf(e.Sale)
	p.IsRebill = true
	return p, saleResources(e.Sale, e.Transaction.SubscriptionID)
}

// refundedData maps a refund: the payment (a purchase or a rebill), with its status after the
// refund, and the refund.
func refundedData(e domain.CheckoutRefunded) (wire.CheckoutRefundedData, resources) {
	p, r := paymentOf(e.Sale), e.Refund
	return wire.CheckoutRefundedData{
		IsRebill: p.IsRebill, Product: p.Product, Transaction: p.Transaction, Pricing: p.Pricing, Customer: p.Customer, Contact: p.Contact,
		Refund: wire.CheckoutRefund{AmountCents: r.AmountCents, FullyRefunded: r.FullyRefunded, RefundedAt: wire.At(r.RefundedAt)},
	}, saleResources(e.Sale, e.Transaction.SubscriptionID)
}

// cancelScheduledData maps a cancellation as it is asked for.
func cancelScheduledData(e domain.SubscriptionCancelScheduled) (wire.CheckoutSubscriptionCancelScheduledData, resources) {
	p, s := paymentOf(e.Sale), e.Subscription
	return wire.CheckoutSubscriptionCancelScheduledData{
		IsRebill: p.IsRebill, Product: p.Product, Transaction: p.Transaction, Pricing: p.Pricing, Customer: p.Customer, Contact: p.Contact,
		Subscription: wire.ScheduledCancellation{
			Id: s.ID, Status: wire.ScheduledCancellationStatus(s.Status), Processor: s.Processor, CancelAtPeriodEnd: s.CancelAtPeriodEnd,
			CurrentPeriodEnd: wire.At(s.CurrentPeriodEnd), ScheduledAt: wire.At(s.ScheduledAt),
		},
	}, saleResources(e.Sale, s.ID)
}

// subscriptionCancelledData maps the end of a subscription.
func subscriptionCancelledData(e domain.SubscriptionCancelled) (wire.CheckoutSubscriptionCancelledData, resources) {
	p, s := paymentOf(e.Sale), e.Subscription
	return wire.CheckoutSubscriptionCancelledData{
		IsRebill: p.IsRebill, Product: p.Product, Transaction: p.Transaction, Pricing: p.Pricing, Customer: p.Customer, Contact: p.Contact,
		Subscription: wire.EndedSubscription{
			Id: s.ID, Status: wire.EndedSubscriptionStatus(s.Status), Processor: s.Processor, CancelledAt: wire.At(s.CancelledAt),
		},
	}, saleResources(e.Sale, s.ID)
}

// paymentOf is the payment members of a sale.
func paymentOf(s domain.Sale) wire.CheckoutPaymentData {
	t := s.Transaction
	bumps := make([]wire.Bump, len(s.Pricing.Bumps))
	for i, b := range s.Pricing.Bumps {
		bumps[i] = wire.Bump{Id: b.ID, Index: b.Index, Name: b.Name, Amount: b.Amount}
	}
	return wire.CheckoutPaymentData{
		IsRebill: s.IsRebill,
		Product:  wire.CheckoutProduct{Id: s.Product.ID, Name: s.Product.Name, InternalName: s.Product.InternalName},
		Transaction: wire.CheckoutTransaction{Id: t.ID, TxnId: t.TxnID, Amount: t.Amount, Currency: t.Currency,
			Status: wire.TransactionStatus(t.Status), Processor: t.Processor, SubscriptionId: t.SubscriptionID},
		Pricing: wire.CheckoutPricing{TierIndex: s.Pricing.TierIndex, TierName: s.Pricing.TierName, PricingTierId: s.Pricing.PricingTierID,
			BumpIndices: wire.List(s.Pricing.BumpIndices), Bumps: bumps},
		Customer: wire.CheckoutCustomer{Email: s.Customer.Email, Name: s.Customer.Name, ContactId: s.Customer.ContactID},
		Contact:  wire.ContactSummary{ContactId: s.Contact.ContactID, Email: s.Contact.Email, FirstName: s.Contact.FirstName, LastName: s.Contact.LastName},
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

// The sample builders make realistic made-up payloads of the same generated types as real
// deliveries, beside their mappers (checkoutEvents pairs each with its event's mappers).

func purchasedSample(now time.Time) wire.CheckoutPaymentData {
	p := samplePayment(false, "succeeded")
	p.Activation = &wire.CheckoutActivation{Token: sampleToken, Url: "https://app.example.com/signup?token=" + sampleToken, ExpiresAt: wire.At(now.Add(7 * 24 * time.Hour))}
	return p
}

func rebilledSample(time.Time) wire.CheckoutPaymentData { return samplePayment(true, "succeeded") }

func refundedSample(now time.Time) wire.CheckoutRefundedData {
	p := samplePayment(false, "refunded")
	return wire.CheckoutRefundedData{
		IsRebill: p.IsRebill, Product: p.Product, Transaction: p.Transaction, Pricing: p.Pricing, Customer: p.Customer, Contact: p.Contact,
		Refund: wire.CheckoutRefund{AmountCents: 4900, FullyRefunded: true, RefundedAt: wire.At(now)},
	}
}

func cancelScheduledSample(now time.Time) wire.CheckoutSubscriptionCancelScheduledData {
	p := samplePayment(false, "succeeded")
	return wire.CheckoutSubscriptionCancelScheduledData{
		IsRebill: p.IsRebill, Product: p.Product, Transaction: p.Transaction, Pricing: p.Pricing, Customer: p.Customer, Contact: p.Contact,
		Subscription: wire.ScheduledCancellation{
			Id: "sub_sample", Status: "active", Processor: "stripe", CancelAtPeriodEnd: true,
			CurrentPeriodEnd: wire.At(now.Add(20 * 24 * time.Hour)), ScheduledAt: wire.At(now),
		},
	}
}

func subscriptionCancelledSample(now time.Time) wire.CheckoutSubscriptionCancelledData {
	p := samplePayment(false, "succeeded")
	return wire.CheckoutSubscriptionCancelledData{
		IsRebill: p.IsRebill, Product: p.Product, Transaction: p.Transaction, Pricing: p.Pricing, Customer: p.Customer, Contact: p.Contact,
		Subscription: wire.EndedSubscription{Id: "sub_sample", Status: "cancelled", Processor: "stripe", CancelledAt: wire.At(now)},
	}
}

var sampleContact = wire.ContactSummary{ContactId: "ct_sample", Email: "ada@example.com", FirstName: "Ada", LastName: "Lovelace"}

// sampleToken looks like an activation token (43 base64url characters) and is none.
const sampleToken = "c2FtcGxlLWFjdGl2YXRpb24tdG9rZW4tbm90LXJlYWw"

// samplePayment is a monthly plan paid with Stripe, without bumps.
func samplePayment(isRebill bool, status string) wire.CheckoutPaymentData {
	return wire.CheckoutPaymentData{
		IsRebill: isRebill,
		Product:  wire.CheckoutProduct{Id: "prod_sample", Name: "Pro Plan", InternalName: "pro-monthly"},
		Transaction: wire.CheckoutTransaction{Id: "txn_sample", TxnId: "ch_3Psample", Amount: 4900, Currency: "USD",
			Status: wire.TransactionStatus(status), Processor: "stripe", SubscriptionId: "sub_sample"},
		Pricing:  wire.CheckoutPricing{TierIndex: 0, TierName: "Monthly", PricingTierId: "tier_sample", BumpIndices: []int{}, Bumps: []wire.Bump{}},
		Customer: wire.CheckoutCustomer{Email: "ada@example.com", Name: "Ada Lovelace", ContactId: "ct_sample"},
		Contact:  sampleContact,
	}
}
