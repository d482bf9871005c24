package webhooks

// Events is every outbound event type (integration-api.md section 6), in the contract's order:
// for each, its name, the subscription filters that apply to it, its made-up sample and the
// domain events it comes from, with the mapper that makes its payload. Everything else derives
// from this table: what the projector reads from the log, the envelope of each delivery, filter
// matching, the samples, the types a subscription may name and their legacy aliases.
//
// To add an outbound event, add one entry here (with its payload type, its mapper and its sample
// builder). The compiler checks that the sample and every mapper of an entry
// make the same payload type.
var Events = newCatalogue(
	define("form.submitted", []filter{byForm}, formSubmittedSample, from(formSubmittedData)),
	define("scheduling.booked", []filter{byEventType}, bookedSample, from(bookedData)),
	// The purchase keeps its activation token sealed: its mapper opens it (fromSealed), and the
	// delivery of a payload with a token is stored sealed in the outbox (secretCarrier).
	define("checkout.purchased", paymentFilters, purchasedSample, fromSealed(purchasedData)).alsoKnownAs("checkout.paid"),
	define("checkout.rebilled", paymentFilters, rebilledSample, from(rebilledData)),
	define("checkout.refunded", paymentFilters, refundedSample, from(refundedData)),
	define("checkout.subscription_cancel_scheduled", []filter{byProduct}, cancelScheduledSample, from(cancelScheduledData)),
	define("checkout.subscription_cancelled", []filter{byProduct}, subscriptionCancelledSample, from(subscriptionCancelledData)),
)

// paymentFilters apply to the events of one payment: the checkout, its pricing option, its bumps.
var paymentFilters = []filter{byProduct, byPricingTier, byBump}
