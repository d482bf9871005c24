package operator

import (
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/api/wire/admin"
	"github.com/funnelhq/funnel/domain"
)

// The mappings below turn the generated request types of the operator API (api/wire/admin) into
// what the commands take. A member left out is its zero value, as the contract's defaults say;
// a list left out stays nil and an empty one empty, where a command tells them apart.

// fieldSpecs are the form fields or booking questions an operator defines.
func fieldSpecs(in []admin.FieldSpec) []domain.FieldSpec {
	return each(in, func(f admin.FieldSpec) domain.FieldSpec {
		return domain.FieldSpec{Label: f.Label, Type: string(f.Type), ContactField: wire.Value(f.ContactField), Required: wire.Value(f.Required)}
	})
}

// automations are what applying a tag does.
func automations(in *[]admin.Automation) []domain.Automation {
	if in == nil {
		return nil
	}
	return each(*in, func(a admin.Automation) domain.Automation {
		return domain.Automation{
			Type: string(a.Type), Subject: wire.Value(a.Subject), Body: wire.Value(a.Body), CampaignID: wire.Value(a.CampaignId),
			CRMID: wire.Value(a.CrmId), StageID: wire.Value(a.StageId),
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
		Name: req.Name, InternalName: wire.Value(req.InternalName), Forwarding: string(wire.Value(req.Forwarding)),
		ActivationBaseURL: wire.Value(req.ActivationBaseUrl),
	}
	for _, t := range req.PricingTiers {
		spec.Tiers = append(spec.Tiers, domain.PricingTierSpec{
			Name: t.Name, Amount: t.Amount, Currency: t.Currency, Interval: string(t.Interval), Installments: wire.Value(t.Installments),
		})
	}
	for _, b := range wire.Value(req.Bumps) {
		spec.Bumps = append(spec.Bumps, domain.BumpSpec{Name: b.Name, Amount: b.Amount})
	}
	return spec
}
