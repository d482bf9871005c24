package domain

import (
	"fmt"
	"net/url"
	"strings"
)

// Checkout forwarding: what a purchase hands over besides its webhooks.
const (
	ForwardingNone       = "none"
	ForwardingSaaSSignup = "saas_signup" // each first purchase issues a SaaS signup activation
)

// Pricing intervals of a tier: one payment, a subscription renewed monthly or yearly, or a split
// payment of a fixed number of installments (renewed monthly until the last one).
const (
	IntervalOneTime = "one_time"
	IntervalMonth   = "month"
	IntervalYear    = "year"
	IntervalSplit   = "split"
)

// Limits of a product's definition.
const (
	maxPricingTiers    = 20
	maxBumps           = 20
	maxInstallments    = 36
	maxAmountMinor     = 100_000_000_00 // 100 million in major units: far above any checkout, far below overflow
	maxActivationURLen = 2048
)

// Product is a checkout: what a buyer pays for, at one of its pricing tiers, with optional bumps
// (order-form add-ons). Its definition never changes once created, so purchases can quote it.
type Product struct {
	id                string
	exists            bool
	accountID         string
	name              string
	internalName      string
	forwarding        string
	activationBaseURL string
	tiers             []PricingTier
	bumps             []Bump
	changes
}

// PricingTier is one way to pay for a product. Index is its position (stable: tiers are never
// reordered) and ID its stable id, both of which webhooks carry.
type PricingTier struct {
	ID           string `json:"id"`
	Index        int    `json:"index"`
	Name         string `json:"name"`
	Amount       int64  `json:"amount"`   // minor units of Currency
	Currency     string `json:"currency"` // ISO 4217, upper case
	Interval     string `json:"interval"`
	Installments int    `json:"installments,omitempty"` // split only: how many payments in all
}

// Recurring tells whether a purchase at this tier opens a subscription that rebills.
func (t PricingTier) Recurring() bool { return t.Interval != IntervalOneTime }

// Bump is an add-on offered on the order form, bought with the product.
type Bump struct {
	ID     string `json:"id"`
	Index  int    `json:"index"`
	Name   string `json:"name"`
	Amount int64  `json:"amount"` // minor units of the product's currency
}

// ProductSpec is what a new product asks for.
type ProductSpec struct {
	Name              string
	InternalName      string
	Forwarding        string // "" is none
	ActivationBaseURL string // required with saas_signup: the signup page that receives ?token=
	Tiers             []PricingTierSpec
	Bumps             []BumpSpec
}

// PricingTierSpec is a pricing tier to define.
type PricingTierSpec struct {
	Name         string
	Amount       int64
	Currency     string
	Interval     string
	Installments int
}

// BumpSpec is a bump to define.
type BumpSpec struct {
	Name   string
	Amount int64
}

// ProductStream returns an empty product to load stream id into.
func ProductStream(id string) *Product { return &Product{id: id} }

// StreamID is the product id.
func (p *Product) StreamID() string { return p.id }

// Exists tells whether the product was created.
func (p *Product) Exists() bool { return p.exists }

// AccountID is the account the product belongs to.
func (p *Product) AccountID() string { return p.accountID }

// Name is the product's public name.
func (p *Product) Name() string { return p.name }

// InternalName is the operator's name for the product ("" when none was given).
func (p *Product) InternalName() string { return p.internalName }

// Forwarding is none or saas_signup.
func (p *Product) Forwarding() string { return p.forwarding }

// ActivationBaseURL is the signup page of a saas_signup product.
func (p *Product) ActivationBaseURL() string { return p.activationBaseURL }

// Tiers are the pricing tiers, by index.
func (p *Product) Tiers() []PricingTier { return p.tiers }

// Bumps are the bumps, by index.
func (p *Product) Bumps() []Bump { return p.bumps }

// Tier returns the pricing tier of an id.
func (p *Product) Tier(id string) (PricingTier, bool) {
	for _, t := range p.tiers {
		if t.ID == id {
			return t, true
		}
	}
	return PricingTier{}, false
}

// Bump returns the bump of an id.
func (p *Product) Bump(id string) (Bump, bool) {
	for _, b := range p.bumps {
		if b.ID == id {
			return b, true
		}
	}
	return Bump{}, false
}

// Create defines the product. newTierID and newBumpID name its tiers and bumps.
func (p *Product) Create(account *Account, spec ProductSpec, newTierID, newBumpID func() string) error {
	name, internal := strings.TrimSpace(spec.Name), strings.TrimSpace(spec.InternalName)
	if err := requireName("name", name); err != nil {
		return err
	}
	if err := checkLength("internalName", internal, MaxNameLength); err != nil {
		return err
	}
	forwarding, base, err := checkForwarding(spec.Forwarding, spec.ActivationBaseURL)
	if err != nil {
		return err
	}
	tiers, err := definePricingTiers(spec.Tiers, newTierID)
	if err != nil {
		return err
	}
	bumps, err := defineBumps(spec.Bumps, newBumpID)
	if err != nil {
		return err
	}
	p.record(ProductCreated{ProductID: p.id, AccountID: account.StreamID(), Name: name, InternalName: internal,
		Forwarding: forwarding, ActivationBaseURL: base, PricingTiers: tiers, Bumps: bumps})
	return nil
}

func checkForwarding(forwarding, base string) (string, string, error) {
	switch forwarding {
	case "", ForwardingNone:
		if strings.TrimSpace(base) != "" {
			return "", "", InvalidField("activationBaseUrl", "activationBaseUrl is only meaningful with forwarding saas_signup")
		}
		return ForwardingNone, "", nil
	case ForwardingSaaSSignup:
		base = strings.TrimSpace(base)
		u, err := url.Parse(base)
		if base == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(base) > maxActivationURLen {
			return "", "", InvalidField("activationBaseUrl", "activationBaseUrl: forwarding saas_signup needs the absolute http(s) URL of the signup page (at most %d characters)", maxActivationURLen)
		}
		return ForwardingSaaSSignup, base, nil
	}
	return "", "", InvalidField("forwarding", "forwarding must be none or saas_signup")
}

func definePricingTiers(specs []PricingTierSpec, newID func() string) ([]PricingTier, error) {
	if len(specs) == 0 || len(specs) > maxPricingTiers {
		return nil, InvalidField("pricingTiers", "pricingTiers: 1 to %d pricing tiers are required", maxPricingTiers)
	}
	tiers := make([]PricingTier, len(specs))
	var productCurrency string
	for i, s := range specs {
		name := strings.TrimSpace(s.Name)
		if err := requireName(fieldAt("pricingTiers", i, "name"), name); err != nil {
			return nil, err
		}
		if err := checkAmount(fieldAt("pricingTiers", i, "amount"), s.Amount); err != nil {
			return nil, err
		}
		if !isoCurrencies[s.Currency] {
			return nil, InvalidField(fieldAt("pricingTiers", i, "currency"), "%s must be a current ISO 4217 currency code in upper case, such as USD", fieldAt("pricingTiers", i, "currency"))
		}
		if productCurrency == "" {
			productCurrency = s.Currency
		} else if s.Currency != productCurrency {
			return nil, InvalidField(fieldAt("pricingTiers", i, "currency"), "pricingTiers: every tier of a product has one currency (%s)", productCurrency)
		}
		switch s.Interval {
		case IntervalOneTime, IntervalMonth, IntervalYear:
			if s.Installments != 0 {
				return nil, InvalidField(fieldAt("pricingTiers", i, "installments"), "%s is only meaningful with interval split", fieldAt("pricingTiers", i, "installments"))
			}
		case IntervalSplit:
			if s.Installments < 2 || s.Installments > maxInstallments {
				return nil, InvalidField(fieldAt("pricingTiers", i, "installments"), "%s: a split tier has 2 to %d installments", fieldAt("pricingTiers", i, "installments"), maxInstallments)
			}
		default:
			return nil, InvalidField(fieldAt("pricingTiers", i, "interval"), "%s must be one_time, month, year or split", fieldAt("pricingTiers", i, "interval"))
		}
		tiers[i] = PricingTier{ID: newID(), Index: i, Name: name, Amount: s.Amount, Currency: s.Currency, Interval: s.Interval, Installments: s.Installments}
	}
	return tiers, nil
}

func defineBumps(specs []BumpSpec, newID func() string) ([]Bump, error) {
	if len(specs) > maxBumps {
		return nil, InvalidField("bumps", "bumps: at most %d bumps", maxBumps)
	}
	bumps := make([]Bump, len(specs))
	for i, s := range specs {
		name := strings.TrimSpace(s.Name)
		if err := requireName(fieldAt("bumps", i, "name"), name); err != nil {
			return nil, err
		}
		if err := checkAmount(fieldAt("bumps", i, "amount"), s.Amount); err != nil {
			return nil, err
		}
		bumps[i] = Bump{ID: newID(), Index: i, Name: name, Amount: s.Amount}
	}
	return bumps, nil
}

// checkAmount requires a positive amount in minor units, within reason.
func checkAmount(field string, amount int64) error {
	if amount <= 0 || amount > maxAmountMinor {
		return InvalidField(field, "%s must be a positive amount in minor units (at most %d)", field, int64(maxAmountMinor))
	}
	return nil
}

// Replay applies one event of the product's stream.
func (p *Product) Replay(e Event) { p.when(e) }

func (p *Product) record(e Event) {
	p.when(e)
	p.pending = append(p.pending, e)
}

func (p *Product) when(e Event) {
	if e, ok := e.(ProductCreated); ok {
		p.exists, p.accountID, p.name, p.internalName = true, e.AccountID, e.Name, e.InternalName
		p.forwarding, p.activationBaseURL, p.tiers, p.bumps = e.Forwarding, e.ActivationBaseURL, e.PricingTiers, e.Bumps
	}
}

// ProductCreated defines a checkout: its pricing tiers and bumps, with their stable ids.
type ProductCreated struct {
	ProductID         string        `json:"productId"`
	AccountID         string        `json:"accountId"`
	Name              string        `json:"name"`
	InternalName      string        `json:"internalName"`
	Forwarding        string        `json:"forwarding"`
	ActivationBaseURL string        `json:"activationBaseUrl"`
	PricingTiers      []PricingTier `json:"pricingTiers"`
	Bumps             []Bump        `json:"bumps"`
}

func (ProductCreated) EventType() string { return "ProductCreated" }

func init() {
	register(ProductCreated{}, 1, nil)
}

// fieldAt names a member of one element of a list in a request, as in pricingTiers[1].amount.
func fieldAt(list string, i int, member string) string {
	return fmt.Sprintf("%s[%d].%s", list, i, member)
}

// isoCurrencies is ISO 4217's list of current codes (Table A.1, which holds the funds codes of
// Table A.2 too, as SIX publishes it in 2026, 178 codes: with XCG, ZWG and XAD, after ANG, BGN,
// CUC, HRK, SLL and ZWL were withdrawn), each with whether a price can be paid in it. A code not in it is
// refused: a withdrawn one (Table A.3: the Deutsche Mark, the lira, the ECU, …), which
// golang.org/x/text/currency still parses, or none at all. Listed but not payable: no currency
// (XXX), the testing code (XTS), precious metals, units of account of bonds and funds, and the
// funds codes (BOV, USN, …), units of account beside a country's currency that no card is
// charged in. When ISO amends the list, amend this table.
var isoCurrencies = map[string]bool{
	"AED": true, "AFN": true, "ALL": true, "AMD": true, "AOA": true, "ARS": true, "AUD": true,
	"AWG": true, "AZN": true,
	"BAM": true, "BBD": true, "BDT": true, "BHD": true, "BIF": true, "BMD": true, "BND": true,
	"BOB": true, "BRL": true, "BSD": true, "BTN": true, "BWP": true, "BYN": true, "BZD": true,
	"CAD": true, "CDF": true, "CHF": true, "CLP": true, "CNY": true, "COP": true, "CRC": true,
	"CUP": true, "CVE": true, "CZK": true,
	"DJF": true, "DKK": true, "DOP": true, "DZD": true,
	"EGP": true, "ERN": true, "ETB": true, "EUR": true,
	"FJD": true, "FKP": true,
	"GBP": true, "GEL": true, "GHS": true, "GIP": true, "GMD": true, "GNF": true, "GTQ": true,
	"GYD": true,
	"HKD": true, "HNL": true, "HTG": true, "HUF": true,
	"IDR": true, "ILS": true, "INR": true, "IQD": true, "IRR": true, "ISK": true,
	"JMD": true, "JOD": true, "JPY": true,
	"KES": true, "KGS": true, "KHR": true, "KMF": true, "KPW": true, "KRW": true, "KWD": true,
	"KYD": true, "KZT": true,
	"LAK": true, "LBP": true, "LKR": true, "LRD": true, "LSL": true, "LYD": true,
	"MAD": true, "MDL": true, "MGA": true, "MKD": true, "MMK": true, "MNT": true, "MOP": true,
	"MRU": true, "MUR": true, "MVR": true, "MWK": true, "MXN": true, "MYR": true, "MZN": true,
	"NAD": true, "NGN": true, "NIO": true, "NOK": true, "NPR": true, "NZD": true,
	"OMR": true,
	"PAB": true, "PEN": true, "PGK": true, "PHP": true, "PKR": true, "PLN": true, "PYG": true,
	"QAR": true,
	"RON": true, "RSD": true, "RUB": true, "RWF": true,
	"SAR": true, "SBD": true, "SCR": true, "SDG": true, "SEK": true, "SGD": true, "SHP": true,
	"SLE": true, "SOS": true, "SRD": true, "SSP": true, "STN": true, "SVC": true, "SYP": true,
	"SZL": true,
	"THB": true, "TJS": true, "TMT": true, "TND": true, "TOP": true, "TRY": true, "TTD": true,
	"TWD": true, "TZS": true,
	"UAH": true, "UGX": true, "USD": true, "UYU": true, "UZS": true,
	"VED": true, "VES": true, "VND": true, "VUV": true,
	"WST": true,
	"XAF": true, "XCD": true, "XCG": true, "XOF": true, "XPF": true,
	"YER": true,
	"ZAR": true, "ZMW": true, "ZWG": true,
	// Funds codes.
	"BOV": false, "CHE": false, "CHW": false, "CLF": false, "COU": false, "MXV": false, "USN": false,
	"UYI": false, "UYW": false,
	// No currency, testing, precious metals, bond units, special drawing rights and other units.
	"XXX": false, "XTS": false, "XAU": false, "XAG": false, "XPD": false, "XPT": false, "XBA": false,
	"XBB": false, "XBC": false, "XBD": false, "XDR": false, "XSU": false, "XUA": false,
	"XAD": false, // the Arab Monetary Fund's accounting dinar, a fund (2024)
}
