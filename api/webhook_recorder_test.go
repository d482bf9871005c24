package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// received is one webhook request a recorder got.
type received struct {
	delivery string // X-Service-Delivery
	id, kind string // the envelope's id and type
	body     []byte
}

// recorder is a webhook receiver that keeps every request, answering each with the status its
// answer function gives (200 when nil).
type recorder struct {
	URL    string
	mu     sync.Mutex
	got    []received
	answer func() int
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	rec := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var env struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		}
		_ = json.Unmarshal(body, &env)
		rec.mu.Lock()
		rec.got = append(rec.got, received{delivery: r.Header.Get("X-Service-Delivery"), id: env.ID, kind: env.Type, body: body})
		answer := rec.answer
		rec.mu.Unlock()
		status := http.StatusOK
		if answer != nil {
			status = answer()
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	rec.URL = srv.URL
	return rec
}

// all returns what the receiver got so far.
func (r *recorder) all() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// waitFor waits until the receiver got at least n requests, and returns them.
func (r *recorder) waitFor(t *testing.T, n int) []received {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := r.all()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receiver got %d webhooks, want %d", len(got), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// decoded is a JSON value decoded, for comparing two encodings of one value.
func decoded(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}
