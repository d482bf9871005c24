// Package client is the Go client of funnel's integration API (/api/v1), generated from its
// OpenAPI 3.1 document (api/openapi/integration.json, served at GET /api/v1/openapi.json) by
// oapi-codegen. Import it as github.com/funnelhq/funnel/client.
//
// ClientWithResponses has one method per operation of the document, named after its operationId
// (ListContactsWithResponse, GetActivationWithResponse, CompleteActivationWithResponse, ...); each
// answer carries the decoded body of its status (JSON200, JSON404, ...), the raw Body and the
// HTTPResponse. Authenticate with WithAPIKey:
//
//	c, err := client.NewClientWithResponses("https://api.example.com", client.WithAPIKey(key))
//	res, err := c.ListContactsWithResponse(ctx, &client.ListContactsParams{Email: &email})
//	if err == nil && res.JSON200 != nil { ... res.JSON200.Contacts ... }
//	if res.JSON404 != nil { log.Print(res.JSON404.Code, res.JSON404.Error) } // every error body is {"error", "code", "param"?}
//
// The types of the document's webhooks section decode what funnel sends: unmarshal a delivery's
// body into WebhookEvent and call ValueByDiscriminator for the typed event (CheckoutPurchasedEvent,
// FormSubmittedEvent, ...). Verify the delivery's signatures first, with
// github.com/funnelhq/funnel/webhooks/verify; examples/receiver does both.
//
// The methods follow the document, so a change of the document can change a signature: since
// 2026-11-27 EraseContact and EraseContactWithResponse take no EraseContactParams (the erasure
// never took an Idempotency-Key; a retry is a 404, which means the erasure was recorded).
//
// Do not edit client.gen.go: change api/openapi/integration.yaml and run `make generate`.
package client

//go:generate go tool oapi-codegen -config oapi-codegen.yaml -o client.gen.go ../api/openapi/integration.json
