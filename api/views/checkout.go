// Package views maps the read models to the generated wire types that both APIs answer alike:
// the checkout resources, whose schemas are the same in integration.yaml and operator.yaml (the
// operator's generated types are these, through api/wire/admin/overlay.yaml). Each API's own
// shapes are mapped in its views.go.
package views

import (
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections"
)

// PricingTier is a pricing tier; installments only on a split tier.
func PricingTier(t domain.PricingTier) wire.PricingTier {
	v := wire.PricingTier{Id: t.ID, Index: t.Index, Name: t.Name, Amount: t.Amount, Currency: t.Currency, Interval: wire.Interval(t.Interval)}
	if t.Interval == domain.IntervalSplit {
		v.Installments = &t.Installments
	}
	return v
}

// Bump is a bump offer of a product.
func Bump(b domain.Bump) wire.Bump {
	return wire.Bump{Id: b.ID, Index: b.Index, Name: b.Name, Amount: b.Amount}
}

// Customer is a checkout customer: the email as its first purchase spelt it, the name its
// latest purchase gave ("" when none did) and its contact.
func Customer(c projections.Customer) wire.Customer {
	return wire.Customer{Id: c.ID, Email: c.Email, Name: c.Name, ContactId: c.ContactID, CreatedAt: wire.At(c.CreatedAt)}
}

// Transaction is a payment, named as the transaction member of the checkout.* webhooks
// names it, plus what was bought and how much was refunded.
func Transaction(t projections.Transaction) wire.Transaction {
	return wire.Transaction{
		Id: t.ID, TxnId: t.TxnID, Amount: t.Amount, Currency: t.Currency, Status: wire.TransactionStatus(t.Status),
		Processor: t.Processor, SubscriptionId: orNull(t.SubscriptionID), IsRebill: t.Kind == projections.TransactionRebill,
		ProductId: t.ProductID, PricingTierId: t.PricingTierID, BumpIds: wire.List(t.BumpIDs),
		RefundedAmount: t.Refunded, PaidAt: wire.At(t.PaidAt),
	}
}

// Subscription is a subscription, named as the subscription member of the checkout.*
// webhooks names it; installments is null unless split, cancelledAt and completedAt are null
// until it ends so.
func Subscription(s projections.BillingSubscription) wire.Subscription {
	v := wire.Subscription{
		Id: s.ID, Status: wire.SubscriptionStatus(s.Status), Processor: s.Processor, CancelAtPeriodEnd: s.CancelAtPeriodEnd,
		CurrentPeriodEnd: wire.At(s.CurrentPeriodEnd), ProductId: s.ProductID, PricingTierId: s.PricingTierID,
		Interval: wire.SubscriptionInterval(s.Interval), Payments: s.Payments, Amount: s.Amount, Currency: s.Currency,
		StartedAt: wire.At(s.StartedAt),
	}
	if s.Interval == domain.IntervalSplit {
		v.Installments = &s.Installments
	}
	ended := wire.At(s.EndedAt)
	switch s.Status {
	case domain.SubscriptionStatusCancelled:
		v.CancelledAt = &ended
	case domain.SubscriptionStatusCompleted:
		v.CompletedAt = &ended
	}
	return v
}

// orNull shows an optional string that is not set as null rather than "".
func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
