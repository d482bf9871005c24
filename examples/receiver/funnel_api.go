package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/funnelhq/funnel/client"
)

// funnelAPI is what the receiver asks of funnel's integration API, through the generated client
// (github.com/funnelhq/funnel/client): the billing interval of a pricing tier, and the SaaS signup
// activations (rule 8). The key needs the scopes checkout:read and checkout:write.
type funnelAPI struct {
	api *client.ClientWithResponses

	mu    sync.Mutex
	tiers map[string]client.Interval // by pricing tier id: a product and its tiers never change
}

// apiTimeout bounds each call: the service gives a delivery 10 seconds in all.
const apiTimeout = 4 * time.Second

// newFunnelAPI is the client of the API at baseURL, authenticated with the key, sending its
// requests through httpClient; host, when not empty, is sent as the Host header (a local service
// answers only on its API host).
func newFunnelAPI(baseURL, host, key string, httpClient client.HttpRequestDoer) (*funnelAPI, error) {
	opts := []client.ClientOption{client.WithAPIKey(key), client.WithHTTPClient(httpClient)}
	if host != "" {
		opts = append(opts, client.WithHost(host))
	}
	api, err := client.NewClientWithResponses(baseURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("funnel api: %w", err)
	}
	return &funnelAPI{api: api, tiers: map[string]client.Interval{}}, nil
}

// apiError is an answer of the API that is not a success, with its {"error", "code"} body.
type apiError struct {
	Operation string
	Status    int
	Code      client.ErrorCode // stable: what to switch on (the message may change)
	Message   string
}

// Error says which call failed, how, and why.
func (e *apiError) Error() string {
	return fmt.Sprintf("funnel api: %s answered %d: %s", e.Operation, e.Status, e.Message)
}

// codeOf is the code of an API error, "" for any other error (the service could not be reached)
// and for none.
func codeOf(err error) client.ErrorCode {
	var e *apiError
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// failed makes the error of an answer that is not a success, with the message of its
// {"error": "...", "code": "..."} body (every error answer of the API has one).
func failed(operation string, status int, body []byte) error {
	var e client.Error
	if err := json.Unmarshal(body, &e); err != nil || e.Error == "" {
		e.Error = fmt.Sprintf("%.200q", body)
	}
	return &apiError{Operation: operation, Status: status, Code: e.Code, Message: e.Error}
}

// interval is the billing interval of a product's pricing tier (one_time, month, year or split),
// asked of the API once per tier.
func (f *funnelAPI) interval(ctx context.Context, productID, pricingTierID string) (client.Interval, error) {
	f.mu.Lock()
	interval, ok := f.tiers[pricingTierID]
	f.mu.Unlock()
	if ok {
		return interval, nil
	}
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	res, err := f.api.GetProductWithResponse(ctx, productID)
	if err != nil {
		return "", fmt.Errorf("funnel api: get product %s: %w", productID, err)
	}
	if res.JSON200 == nil {
		return "", failed("get product "+productID, res.StatusCode(), res.Body)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, tier := range res.JSON200.Product.PricingTiers {
		f.tiers[tier.Id] = tier.Interval
	}
	if interval, ok := f.tiers[pricingTierID]; ok {
		return interval, nil
	}
	return "", fmt.Errorf("funnel api: product %s has no pricing tier %s", productID, pricingTierID)
}

// activation reads a SaaS signup activation by its token (GET /api/v1/checkout/activations/{token}).
func (f *funnelAPI) activation(ctx context.Context, token string) (client.Activation, error) {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	res, err := f.api.GetActivationWithResponse(ctx, token)
	if err != nil {
		return client.Activation{}, fmt.Errorf("funnel api: get activation: %w", err)
	}
	if res.JSON200 == nil {
		return client.Activation{}, failed("get activation", res.StatusCode(), res.Body)
	}
	return res.JSON200.Activation, nil
}

// complete marks an activation completed for the app's user
// (POST /api/v1/checkout/activations/{token}/complete with its externalUserId). Completing it
// again for the same user succeeds and changes nothing, so a retried delivery may call it again;
// for another user the API answers 409, for an expired activation 400.
func (f *funnelAPI) complete(ctx context.Context, token, userID string) (client.Activation, error) {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	res, err := f.api.CompleteActivationWithResponse(ctx, token, nil, client.CompleteActivationRequest{ExternalUserId: &userID})
	if err != nil {
		return client.Activation{}, fmt.Errorf("funnel api: complete activation: %w", err)
	}
	if res.JSON200 == nil {
		return client.Activation{}, failed("complete activation", res.StatusCode(), res.Body)
	}
	return res.JSON200.Activation, nil
}
