//go:build unix

package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
	"github.com/funnelhq/funnel/webhooks/verify"
)

// TestWebhooksSurviveACrash is the durability test of issue 4, against the real binary in both
// storage modes: form submissions are acknowledged while the receiver is down, the service is
// killed with kill -9 while it retries, the receiver comes up, the service restarts on the same
// database, and every submission's webhook arrives, signed, with the same delivery id and the
// same body bytes on every attempt that reached the receiver.
func TestWebhooksSurviveACrash(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binary")
	}
	bin := buildBinary(t)
	env := []string{"FUNNEL_WEBHOOK_ALLOW_PRIVATE=true", "FUNNEL_WEBHOOK_BACKOFF_BASE=100ms", "FUNNEL_WEBHOOK_BACKOFF_CAP=2s"}
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		dbURL := sqldbtest.URL(t, dialect)
		receiverAddr := freeAddr(t) // nothing listens there yet: every attempt is refused

		srv := startServer(t, bin, dbURL, env...)
		fx := setUpAccount(t, srv)
		formID, emailField := newSignupForm(t, srv, fx.accountID)
		status, raw, err := srv.do(context.Background(), http.MethodPost, srv.opURL+"/admin/v1/accounts/"+fx.accountID+"/webhooks", "", operatorToken,
			map[string]any{"url": "http://" + receiverAddr + "/hooks", "events": []string{"form.submitted"}})
		var hook struct {
			Webhook struct{ Secret string } `json:"webhook"`
		}
		if err != nil || status != http.StatusCreated || json.Unmarshal(raw, &hook) != nil {
			t.Fatalf("subscribe: %d %v %s", status, err, raw)
		}

		const submissions = 40
		submitted := submitForms(t, srv, fx.key, formID, emailField, submissions)
		// Killed while it retries: once the log shows a refused attempt of every delivery.
		waitUntil(t, 30*time.Second, "every delivery has a refused attempt", func() bool {
			status, raw, err := srv.do(context.Background(), http.MethodGet, srv.opURL+"/admin/v1/accounts/"+fx.accountID+"/webhook-deliveries?limit=200", "", operatorToken, nil)
			var res struct{ Deliveries []struct{ Attempts []any } }
			if err != nil || status != http.StatusOK || json.Unmarshal(raw, &res) != nil || len(res.Deliveries) < submissions {
				return false
			}
			for _, d := range res.Deliveries {
				if len(d.Attempts) == 0 {
					return false
				}
			}
			return true
		})
		srv.kill(t)

		rcv := listenOn(t, receiverAddr)
		srv = startServer(t, bin, dbURL, env...)
		rcv.waitForAll(t, submitted, 45*time.Second)
		for id, attempts := range rcv.byDelivery() {
			for _, a := range attempts {
				if !bytes.Equal(a.body, attempts[0].body) {
					t.Errorf("delivery %s: the body changed between attempts", id)
				}
				if err := verify.Service(hook.Webhook.Secret, a.body, a.header.Get("X-Service-Signature")); err != nil {
					t.Errorf("delivery %s: %v", id, err)
				}
			}
		}
		srv.stop(t)
	})
}

func newSignupForm(t *testing.T, srv *server, accountID string) (string, string) {
	t.Helper()
	status, raw, err := srv.do(context.Background(), http.MethodPost, srv.opURL+"/admin/v1/accounts/"+accountID+"/forms", "", operatorToken,
		map[string]any{"name": "Signup", "fields": []map[string]any{{"label": "Email", "type": "email", "contactField": "builtin:email", "required": true}}})
	var res struct {
		Form struct {
			ID     string
			Fields []struct{ ID string }
		}
	}
	if err != nil || status != http.StatusCreated || json.Unmarshal(raw, &res) != nil || len(res.Form.Fields) != 1 {
		t.Fatalf("create form: %d %v %s", status, err, raw)
	}
	return res.Form.ID, res.Form.Fields[0].ID
}

// submitForms submits n forms from 8 clients and returns the acknowledged submission ids.
func submitForms(t *testing.T, srv *server, key, formID, field string, n int) map[string]bool {
	t.Helper()
	var mu sync.Mutex
	ids := map[string]bool{}
	var wg sync.WaitGroup
	for c := 0; c < 8; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := c; i < n; i += 8 {
				status, raw, err := srv.do(context.Background(), http.MethodPost, srv.apiURL+"/api/v1/forms/"+formID+"/submissions", apiHost, key,
					map[string]any{"values": map[string]any{field: fmt.Sprintf("crash%d@example.com", i)}})
				var res struct{ Submission struct{ ID string } }
				if err != nil || status != http.StatusCreated || json.Unmarshal(raw, &res) != nil {
					t.Errorf("submit %d: %d %v %s", i, status, err, raw)
					return
				}
				mu.Lock()
				ids[res.Submission.ID] = true
				mu.Unlock()
			}
		}(c)
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return ids
}

type hookRequest struct {
	header http.Header
	body   []byte
}

// hookReceiver is the webhook target, started late on the address the subscription names.
type hookReceiver struct {
	mu   sync.Mutex
	got  map[string][]hookRequest // by X-Service-Delivery
	subs map[string]bool          // submission ids received
}

func listenOn(t *testing.T, addr string) *hookReceiver {
	t.Helper()
	r := &hookReceiver{got: map[string][]hookRequest{}, subs: map[string]bool{}}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("receiver on %s: %v", addr, err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		servicetest.CheckWebhook(t, req.Header, body)
		var env struct {
			Data struct{ SubmissionID string } `json:"data"`
		}
		_ = json.Unmarshal(body, &env)
		r.mu.Lock()
		id := req.Header.Get("X-Service-Delivery")
		r.got[id] = append(r.got[id], hookRequest{header: req.Header.Clone(), body: body})
		r.subs[env.Data.SubmissionID] = true
		r.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return r
}

func (r *hookReceiver) waitForAll(t *testing.T, want map[string]bool, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r.mu.Lock()
		missing := 0
		for id := range want {
			if !r.subs[id] {
				missing++
			}
		}
		deliveries := len(r.got)
		r.mu.Unlock()
		if missing == 0 {
			if deliveries != len(want) {
				t.Fatalf("%d submissions arrived under %d delivery ids", len(want), deliveries)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d acknowledged submissions never reached the receiver", missing, len(want))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *hookReceiver) byDelivery() map[string][]hookRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]hookRequest{}
	for k, v := range r.got {
		out[k] = append([]hookRequest(nil), v...)
	}
	return out
}
