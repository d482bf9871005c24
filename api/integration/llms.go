package integration

import (
	_ "embed"
	"net/http"
)

// llmsFull is the machine-readable reference of the integration API (GET /llms-full.txt).
//
//go:embed llms-full.txt
var llmsFull []byte

func serveLLMs(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	// The status is sent: an error here can only be a client gone away, nobody to tell.
	_, _ = w.Write(llmsFull)
}
