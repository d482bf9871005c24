package webhooks

// Queries are the readers of the webhook tables the APIs use: the subscriptions (the webhook
// projector's read model), the delivery log, and the sample payloads.
type Queries struct {
	Subscriptions *Subscriptions
	Deliveries    *Deliveries
	Samples       *Samples
	// Feed is the event feed of GET /api/v1/events.
	Feed *Feed
	// SelfService serves the integrator's own subscriptions: replays, test sends, the
	// subscription list with its status.
	SelfService *SelfService
}
