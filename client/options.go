package client

import (
	"context"
	"net/http"
)

// WithAPIKey authenticates every request with the API key (Authorization: Bearer KEY). Each
// operation needs one scope of the key; a key without it answers 403.
func WithAPIKey(key string) ClientOption {
	return WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+key)
		return nil
	})
}

// WithHost sends every request with this Host header whatever the server URL names. The API
// answers only on its API host (FUNNEL_API_HOST), so a client that reaches a local service by
// its address needs it: NewClientWithResponses("http://127.0.0.1:8080", WithHost("api.localhost")).
func WithHost(host string) ClientOption {
	return WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Host = host
		return nil
	})
}
