package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/funnelhq/funnel/webhooks/verify"
)

// maxBody is the largest webhook body read; funnel's are a few kilobytes.
const maxBody = 1 << 20

// applyTimeout bounds the work on one delivery, API calls included, within the 10 seconds the
// service waits for an answer.
const applyTimeout = 8 * time.Second

// server is the receiver's HTTP side: POST /webhooks/funnel takes the deliveries, GET
// /entitlements shows what the store made of them, GET /healthz answers 200.
type server struct {
	secret    string        // the webhook's signing secret
	tolerance time.Duration // how far webhook-timestamp may be from now
	now       func() time.Time
	rules     *rules
	store     *store
	failFirst *failFirst
	log       *slog.Logger
}

// handler routes the receiver's requests.
func (s *server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /webhooks/funnel", s.receive)
	mux.HandleFunc("GET /entitlements", s.entitlements)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	return mux
}

// receive takes one delivery. It reads the raw body, checks both signatures and the timestamp
// (verify), and only then decodes it and applies it (rules). Any 2xx acknowledges the delivery;
// anything else makes the service retry it later, with the same ids and body.
func (s *server) receive(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "the body is over 1 MB or unreadable")
		return
	}
	// X-Service-Signature: the HMAC of the body alone.
	if err := verify.Service(s.secret, body, r.Header.Get("X-Service-Signature")); err != nil {
		s.log.Warn("refused a delivery: X-Service-Signature does not match", "delivery", r.Header.Get("X-Service-Delivery"))
		writeError(w, http.StatusUnauthorized, "X-Service-Signature does not match")
		return
	}
	// Standard Webhooks: the HMAC of id, timestamp and body, and the timestamp within tolerance. A
	// request recorded and replayed later carries its old timestamp, and a new timestamp breaks
	// the signature: a replay is refused here, and a repeat that gets through (the service's own
	// retry) is caught by the envelope id (rules).
	if err := verify.Standard(s.secret, r.Header, body, s.tolerance, s.now()); err != nil {
		msg := "webhook-signature does not match"
		if errors.Is(err, verify.ErrTimestamp) {
			msg = "webhook-timestamp is missing or more than " + s.tolerance.String() + " away: a replay?"
		}
		s.log.Warn("refused a delivery", "delivery", r.Header.Get("webhook-id"), "reason", msg)
		writeError(w, http.StatusUnauthorized, msg)
		return
	}
	if s.failFirst.fails(r.Header.Get("X-Service-Delivery")) {
		s.log.Info("failed an attempt on purpose (-fail-first)", "delivery", r.Header.Get("X-Service-Delivery"), "event", r.Header.Get("X-Service-Event"))
		writeError(w, http.StatusServiceUnavailable, "failing this attempt on purpose (-fail-first)")
		return
	}
	// The service waits 10 seconds for an answer: give up on the API calls of a signup before.
	ctx, cancel := context.WithTimeout(r.Context(), applyTimeout)
	defer cancel()
	applied, err := s.rules.apply(ctx, body)
	if errors.Is(err, errMalformed) {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err != nil {
		s.log.Error("a delivery could not be applied; the service will retry it", "delivery", r.Header.Get("X-Service-Delivery"),
			"event", r.Header.Get("X-Service-Event"), "error", err)
		writeError(w, http.StatusServiceUnavailable, "not applied, retry later")
		return
	}
	s.log.Info("delivery", "delivery", r.Header.Get("X-Service-Delivery"), "event", r.Header.Get("X-Service-Event"), "applied", applied)
	writeJSON(w, http.StatusOK, map[string]bool{"applied": applied})
}

// entitlements answers GET /entitlements?email=: the buyer's active plans, the ended ones, its
// app user and activations, and its synced contact.
func (s *server) entitlements(w http.ResponseWriter, r *http.Request) {
	email := emailKey(r.URL.Query().Get("email"))
	if email == "" {
		writeError(w, http.StatusBadRequest, "email is required")
		return
	}
	view, err := s.store.buyer(r.Context(), email)
	if errors.Is(err, errUnknownBuyer) {
		writeError(w, http.StatusNotFound, "no buyer or contact with this email")
		return
	}
	if err != nil {
		s.log.Error("read entitlements", "error", err)
		writeError(w, http.StatusInternalServerError, "the store could not be read")
		return
	}
	writeJSON(w, http.StatusOK, view)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the status is sent: a client gone away is nobody to tell
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// failFirst is a demo aid (-fail-first N): it fails the first N attempts of every delivery with
// 503, to show the service's retries, and that a delivery applied late is still applied once and
// in order. It counts attempts by X-Service-Delivery in memory, one entry per delivery for as long
// as the process runs: not for production.
type failFirst struct {
	n        int
	mu       sync.Mutex
	attempts map[string]int
}

// newFailFirst fails the first n attempts of each delivery; nil (none) for n = 0.
func newFailFirst(n int) *failFirst {
	if n <= 0 {
		return nil
	}
	return &failFirst{n: n, attempts: map[string]int{}}
}

// fails counts an attempt of the delivery and tells whether to fail it.
func (f *failFirst) fails(deliveryID string) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts[deliveryID]++
	return f.attempts[deliveryID] <= f.n
}
