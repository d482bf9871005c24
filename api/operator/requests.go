package operator

import (
	"github.com/funnelhq/funnel/api/wire/admin"
	"github.com/funnelhq/funnel/domain"
)

// The mappings below turn the generated request types of the operator API (api/wire/admin) into
// what the commands take. A member left out is its zero value, as the contract's defaults say;
// a list left out stays nil and an empty one empty, where a command tells them apart.

// fieldSpecs are the form fields or booking questions an operator defines.
func fieldSpecs(in []admin.FieldSpec) []domain.FieldSpec {
	return each(in, func(f admin.FieldSpec) domain.FieldSpec {
		return domain.FieldSpec{Label: f.Label, Type: string(f.Type), ContactField: value(f.ContactField), Required: value(f.Required)}
	})
}

// automations are what applying a tag does.
func automations(in *[]admin.Automation) []domain.Automation {
	if in == nil {
		return nil
	}
	return each(*in, func(a admin.Automation) domain.Automation {
		return domain.Automation{
			Type: string(a.Type), Subject: value(a.Subject), Body: value(a.Body), CampaignID: value(a.CampaignId),
			CRMID: value(a.CrmId), StageID: value(a.StageId),
		}
	})
}

// scopes are the scopes an API key is issued with: nil when left out or null (every scope).
func scopes(in *[]admin.Scope) []string {
	if in == nil {
		return nil
	}
	return each(*in, func(s admin.Scope) string { return string(s) })
}

// productSpec is the product an operator defines.
func productSpec(req admin.CreateProductRequest) domain.ProductSpec {
	spec := domain.ProductSpec{
		Name: req.Name, InternalName: value(req.InternalName), Forwarding: string(value(req.Forwarding)),
		ActivationBaseURL: value(req.ActivationBaseUrl),
	}
	for _, t := range req.PricingTiers {
		spec.Tiers = append(spec.Tiers, domain.PricingTierSpec{
			Name: t.Name, Amount: t.Amount, Currency: t.Currency, Interval: string(t.Interval), Installments: value(t.Installments),
		})
	}
	for _, b := range value(req.Bumps) {
		spec.Bumps = append(spec.Bumps, domain.BumpSpec{Name: b.Name, Amount: b.Amount})
	}
	return spec
}

// value is what an optional member holds: its zero value when left out.
func value[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}
