package domain

import (
	"fmt"
	"strings"
	"testing"
)

func ids(prefix string) func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("%s_%d", prefix, n) }
}

func TestProductCreateDefinesTiersAndBumpsWithStableIDsAndIndexes(t *testing.T) {
	account := AccountStream("acc_1")
	p := ProductStream("prod_1")
	err := p.Create(account, ProductSpec{Name: " Pro Plan ", InternalName: "pro", Forwarding: ForwardingSaaSSignup, ActivationBaseURL: "https://app.example.com/signup",
		Tiers: []PricingTierSpec{{Name: "Monthly", Amount: 4900, Currency: "USD", Interval: IntervalMonth}, {Name: "3 payments", Amount: 9900, Currency: "USD", Interval: IntervalSplit, Installments: 3}},
		Bumps: []BumpSpec{{Name: "Setup call", Amount: 19900}}}, ids("tier"), ids("bump"))
	if err != nil {
		t.Fatal(err)
	}
	created := p.Changes()[0].(ProductCreated)
	if created.Name != "Pro Plan" || created.Forwarding != ForwardingSaaSSignup || created.AccountID != "acc_1" {
		t.Fatalf("created %+v", created)
	}
	if tier, ok := p.Tier("tier_2"); !ok || tier.Index != 1 || tier.Installments != 3 || !tier.Recurring() {
		t.Fatalf("tier_2 = %+v, %v", tier, ok)
	}
	if bump, ok := p.Bump("bump_1"); !ok || bump.Index != 0 || bump.Amount != 19900 {
		t.Fatalf("bump_1 = %+v, %v", bump, ok)
	}
	// Replaying the event rebuilds the same product.
	again := ProductStream("prod_1")
	again.Replay(created)
	if !again.Exists() || len(again.Tiers()) != 2 || again.ActivationBaseURL() != "https://app.example.com/signup" {
		t.Fatalf("replayed %+v", again)
	}
}

func TestProductCreateRefusesBadDefinitions(t *testing.T) {
	tier := PricingTierSpec{Name: "Once", Amount: 100, Currency: "EUR", Interval: IntervalOneTime}
	cases := []struct {
		name string
		spec ProductSpec
		want string
	}{
		{"no name", ProductSpec{Tiers: []PricingTierSpec{tier}}, "name is required"},
		{"no tiers", ProductSpec{Name: "P"}, "pricingTiers: 1 to"},
		{"zero amount", ProductSpec{Name: "P", Tiers: []PricingTierSpec{{Name: "x", Currency: "EUR", Interval: IntervalOneTime}}}, "pricingTiers[0].amount"},
		{"unknown currency", ProductSpec{Name: "P", Tiers: []PricingTierSpec{{Name: "x", Amount: 1, Currency: "XYZ1", Interval: IntervalOneTime}}}, "pricingTiers[0].currency"},
		{"lower-case currency", ProductSpec{Name: "P", Tiers: []PricingTierSpec{{Name: "x", Amount: 1, Currency: "eur", Interval: IntervalOneTime}}}, "upper case"},
		{"no currency", ProductSpec{Name: "P", Tiers: []PricingTierSpec{{Name: "x", Amount: 1, Currency: "XXX", Interval: IntervalOneTime}}}, "pricingTiers[0].currency"},
		{"testing code", ProductSpec{Name: "P", Tiers: []PricingTierSpec{{Name: "x", Amount: 1, Currency: "XTS", Interval: IntervalOneTime}}}, "pricingTiers[0].currency"},
		{"gold", ProductSpec{Name: "P", Tiers: []PricingTierSpec{{Name: "x", Amount: 1, Currency: "XAU", Interval: IntervalOneTime}}}, "pricingTiers[0].currency"},
		{"withdrawn currency", ProductSpec{Name: "P", Tiers: []PricingTierSpec{{Name: "x", Amount: 1, Currency: "DEM", Interval: IntervalOneTime}}}, "pricingTiers[0].currency"},
		{"funds code", ProductSpec{Name: "P", Tiers: []PricingTierSpec{{Name: "x", Amount: 1, Currency: "USN", Interval: IntervalOneTime}}}, "pricingTiers[0].currency"},
		{"two currencies", ProductSpec{Name: "P", Tiers: []PricingTierSpec{tier, {Name: "y", Amount: 1, Currency: "USD", Interval: IntervalMonth}}}, "one currency"},
		{"bad interval", ProductSpec{Name: "P", Tiers: []PricingTierSpec{{Name: "x", Amount: 1, Currency: "EUR", Interval: "weekly"}}}, "one_time, month, year or split"},
		{"split without installments", ProductSpec{Name: "P", Tiers: []PricingTierSpec{{Name: "x", Amount: 1, Currency: "EUR", Interval: IntervalSplit}}}, "installments"},
		{"installments on monthly", ProductSpec{Name: "P", Tiers: []PricingTierSpec{{Name: "x", Amount: 1, Currency: "EUR", Interval: IntervalMonth, Installments: 3}}}, "only meaningful with interval split"},
		{"saas signup without url", ProductSpec{Name: "P", Forwarding: ForwardingSaaSSignup, Tiers: []PricingTierSpec{tier}}, "activationBaseUrl"},
		{"url without saas signup", ProductSpec{Name: "P", ActivationBaseURL: "https://a.example", Tiers: []PricingTierSpec{tier}}, "only meaningful"},
		{"unknown forwarding", ProductSpec{Name: "P", Forwarding: "zapier", Tiers: []PricingTierSpec{tier}}, "forwarding must be"},
		{"bump without amount", ProductSpec{Name: "P", Tiers: []PricingTierSpec{tier}, Bumps: []BumpSpec{{Name: "b"}}}, "bumps[0].amount"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := ProductStream("prod_1")
			err := p.Create(AccountStream("acc_1"), tc.spec, ids("tier"), ids("bump"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Create = %v, want an error containing %q", err, tc.want)
			}
			if len(p.Changes()) != 0 {
				t.Fatal("a refused product recorded an event")
			}
		})
	}
}
