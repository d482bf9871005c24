package webhooks

// Queries are the readers of the webhook tables the APIs use: the subscriptions (the webhook
// projector's read model), the delivery log, and the sample payloads.
type Queries struct {
	Subscriptions *Subscriptions
	Deliveries    *Deliveries
	Samples       *Samples
}
