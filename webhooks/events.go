package webhooks

import "slices"

// Events is every outbound event type (integration-api.md section 6), in the contract's order:
// for each, its name, the scope that reads its data, the subscription filters that apply to it,
// its made-up sample and the domain events it comes from, with the mapper that makes its
// payload. Each entry stands beside its mapper and sample: formEvents and schedulingEvents in
// payloads.go, checkoutEvents in checkout.go. Everything else derives from this table: what the
// projector reads from the log, the envelope of each delivery, filter matching, the samples, the
// types a subscription may name and their legacy aliases, and, through `make generate`, the
// event enums, the oneOf of webhook bodies and the webhooks of the OpenAPI documents and
// /llms-full.txt (api/openapi/internal/gendocs).
//
// To add an outbound event: its payload schema, its envelope schema (<Name>Event, its name in
// CamelCase, such as CheckoutSubscriptionPausedEvent) and its webhook in integration.yaml,
// `make generate` (the payload's Go type appears in api/wire), then one entry in the list of its
// area with its mapper and its sample builder, and `make generate` again. A new area adds its
// list here. The compiler checks that the sample and every mapper of an entry make the same
// payload type; the tests, that it is the type the document's schema generates.
var Events = newCatalogue(slices.Concat(formEvents, schedulingEvents, checkoutEvents)...)
