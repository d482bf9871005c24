// Package openapi holds the OpenAPI 3.1 documents of the integration API (/api/v1) and of the
// operator API (/admin/v1), and /llms-full.txt, all embedded in the binary. The YAML files are
// the sources, written by hand but for their lists of outbound events (the event enums, the
// oneOf of webhook bodies), which `make generate` writes from the table of outbound events
// (webhooks/events.go); integration.json, operator.json and llms-full.txt are generated from them
// (and from the prose of llms-full.txt.tmpl) by `make generate`, and the tests check that they
// are up to date and that every answer of the service conforms to the documents.
package openapi

import (
	_ "embed"
	"net/http"
)

//go:generate go run ./internal/gendocs

//go:embed integration.json
var integration []byte

//go:embed operator.json
var operator []byte

//go:embed llms-full.txt
var llmsFull []byte

// Integration is the OpenAPI document of the integration API, as JSON.
func Integration() []byte { return integration }

// Operator is the OpenAPI document of the operator API, as JSON.
func Operator() []byte { return operator }

// LLMsFull is /llms-full.txt: the integration document as plain text, with the rules a machine
// reader needs.
func LLMsFull() []byte { return llmsFull }

// Serve answers GET with content of that type. The documents need no credentials: integrators'
// tools fetch them before they have any, and they hold no secret.
func Serve(contentType string, content []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		// The status is sent: an error here can only be a client gone away, nobody to tell.
		_, _ = w.Write(content)
	}
}
