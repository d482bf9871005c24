package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/funnelhq/funnel/domain"
)

// TestRequest asks for one sample event to be sent to a subscription now.
type TestRequest struct {
	AccountID, SubscriptionID, Type string
	// CanRead tells whether the caller holds a scope: samples are built from the account's own
	// events only for a caller that may read their data (Samples.For).
	CanRead func(domain.Scope) bool
}

// Test sends one sample envelope of a type, as GET /api/v1/webhooks/events/:eventName builds it,
// to the subscription's URL now, signed like any delivery (under a delivery id of its own), and
// returns the attempt whatever the receiver answered. It records nothing: no delivery, no
// attempt, no change of the subscription's state. A disabled subscription may be tested, to
// check its receiver before enabling it.
func (s *SelfService) Test(ctx context.Context, req TestRequest) (Attempt, error) {
	sub, err := s.usable(ctx, req.AccountID, req.SubscriptionID)
	if err != nil {
		return Attempt{}, err
	}
	samples, err := s.samples.For(ctx, req.AccountID, req.Type, req.CanRead)
	if err != nil {
		return Attempt{}, err
	}
	body, err := json.Marshal(samples[0])
	if err != nil {
		return Attempt{}, fmt.Errorf("webhooks: encode the test event: %w", err)
	}
	return s.dispatcher.sendNow(ctx, sub, samples[0].Type, body)
}

// sendNow makes one attempt of body to a subscription outside the outbox: the target, the SSRF
// checks, the signing and the timeout of a delivery, nothing recorded.
func (d *Dispatcher) sendNow(ctx context.Context, sub Subscription, eventType string, body []byte) (Attempt, error) {
	c := claimed{
		id: "dlv_test_" + uuid.Must(uuid.NewV7()).String(), accountID: sub.AccountID, subscriptionID: sub.ID, eventType: eventType, body: body,
		leaseEnds: time.Now().Add(d.lease), outsideOutbox: true,
	}
	batch := []claimed{c}
	if err := d.attachSubscriptions(ctx, batch); err != nil {
		return Attempt{}, err
	}
	c = batch[0]
	if c.notOpened != "" {
		return Attempt{At: d.cfg.Now().UTC(), Error: c.notOpened}, nil
	}
	c.subscriptionStatus = "active" // a disabled subscription may be tested
	o := d.send(c)
	return Attempt{At: o.at.UTC(), StatusCode: o.status, Error: o.err, DurationMs: o.took.Milliseconds()}, nil
}
