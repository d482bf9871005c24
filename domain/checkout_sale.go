package domain

import "strings"

// Sale is what every checkout event reports about the payment it concerns: the product, the
// transaction, the pricing bought, the customer and the contact. Its members are named as the
// checkout.* webhook payloads name them (integration-api.md section 6), so that each webhook is
// built from its one domain event alone, as form.submitted is built from FormSubmitted.
type Sale struct {
	// IsRebill tells whether the payment is a renewal (checkout.rebilled) rather than a first
	// purchase; a refund or a cancellation reports the payment it concerns. (Sales recorded
	// before it was added decode as false: only their CheckoutRebilled events are rebills, which
	// the webhooks know by the event's type.)
	IsRebill    bool            `json:"isRebill"`
	Product     SaleProduct     `json:"product"`
	Transaction SaleTransaction `json:"transaction"`
	Pricing     SalePricing     `json:"pricing"`
	Customer    SaleCustomer    `json:"customer"`
	Contact     SaleContact     `json:"contact"`
}

// SaleProduct names the product bought.
type SaleProduct struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	InternalName string `json:"internalName"`
}

// SaleTransaction is a payment as the webhooks show it. SubscriptionID is "" for one-time tiers.
type SaleTransaction struct {
	ID             string `json:"id"`
	TxnID          string `json:"txnId"` // the processor's id of the payment
	Amount         int64  `json:"amount"`
	Currency       string `json:"currency"`
	Status         string `json:"status"`
	Processor      string `json:"processor"`
	SubscriptionID string `json:"subscriptionId"`
}

// SalePricing is the pricing tier and the bumps bought.
type SalePricing struct {
	TierIndex     int    `json:"tierIndex"`
	TierName      string `json:"tierName"`
	PricingTierID string `json:"pricingTierId"`
	BumpIndices   []int  `json:"bumpIndices"`
	Bumps         []Bump `json:"bumps"`
}

// SaleCustomer is the buyer.
type SaleCustomer struct {
	Email     string `json:"email"`
	Name      string `json:"name"`
	ContactID string `json:"contactId"`
}

// SaleContact is the buyer's contact at the time of the purchase.
type SaleContact struct {
	ContactID string `json:"contactId"`
	Email     string `json:"email"`
	FirstName string `json:"firstName"`
	LastName  string `json:"lastName"`
}

// NewSaleContact is the part of a contact snapshot that checkout events carry.
func NewSaleContact(c ContactSnapshot) SaleContact {
	return SaleContact{ContactID: c.ContactID, Email: c.Email, FirstName: c.FirstName, LastName: c.LastName}
}

// pricingOf describes a tier and bumps of a product as a sale.
func pricingOf(tier PricingTier, bumps []Bump) SalePricing {
	p := SalePricing{TierIndex: tier.Index, TierName: tier.Name, PricingTierID: tier.ID, BumpIndices: []int{}, Bumps: []Bump{}}
	for _, b := range bumps {
		p.BumpIndices = append(p.BumpIndices, b.Index)
		p.Bumps = append(p.Bumps, b)
	}
	return p
}

// BuyerProfile is the contact profile a purchase writes: the buyer's name (at most 255
// characters, as the customer keeps it) split into first and last name as builtin:fullName splits
// it. No name leaves the contact's name as it is.
func BuyerProfile(name string) (ContactProfile, error) {
	if err := checkLength("name", name, MaxNameLength); err != nil {
		return ContactProfile{}, err
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return ContactProfile{}, nil
	}
	first, last := splitFullName(name)
	profile := ContactProfile{FirstName: &first, LastName: &last}
	return profile, profile.Validate()
}
