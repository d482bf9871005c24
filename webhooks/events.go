package webhooks

import "github.com/funnelhq/funnel/domain"

// Events is every outbound event type (integration-api.md section 6), in the contract's order:
// for each, its name, the scope that reads its data, the subscription filters that apply to it,
// its made-up sample and the domain events it comes from, with the mapper that makes its
// payload. Everything else derives from this table: what the projector reads from the log, the
// envelope of each delivery, filter matching, the samples, the types a subscription may name and
// their legacy aliases, and, through `make generate`, the event enums, the oneOf of webhook
// bodies and the webhooks of the OpenAPI documents and /llms-full.txt (api/openapi/internal/gendocs).
//
// To add an outbound event: its payload schema and its envelope schema (<Name>Event, its name
// in CamelCase, such as CheckoutSubscriptionPausedEvent) and its webhook in integration.yaml,
// `make generate` (the payload's Go type appears in api/wire), then one entry here with its
// mapper and its sample builder, and `make generate` again. The compiler checks that the sample
// and every mapper of an entry make the same payload type; the tests, that it is the type the
// document's schema generates.
var Events = newCatalogue(
	define("form.submitted", domain.ScopeFormsRead, []filter{byForm}, formSubmittedSample, fromChecked(formSubmittedData)),
	define("scheduling.booked", domain.ScopeSchedulingRead, []filter{byEventType}, bookedSample, fromChecked(bookedData)),
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
)

// paymentFilters apply to the events of one payment: the checkout, its pricing option, its bumps.
var paymentFilters = []filter{byProduct, byPricingTier, byBump}
