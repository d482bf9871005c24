package service_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// An operator reads from the log when the listeners started and stopped, and one line per
// request between: method, route template (never the raw path with its ids), status, duration,
// the account it acted for and the request id.
func TestServeLogsListenersAndRequests(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		core, logs := observer.New(zap.InfoLevel)
		cfg := service.Defaults()
		cfg.DatabaseURL = sqldbtest.URL(t, d)
		cfg.SecretKey = servicetest.SecretKey(cfg.DatabaseURL)
		cfg.Addr, cfg.AdminAddr, cfg.AdminToken = "127.0.0.1:0", "127.0.0.1:0", "operator-token"
		a, err := service.Open(context.Background(), cfg, zap.New(core))
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		ln, err := a.Listen()
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		served := make(chan error, 1)
		go func() { served <- a.Serve(ctx, ln) }()
		select {
		case <-a.Ready():
		case <-time.After(30 * time.Second):
			t.Fatal("service did not become ready")
		}

		operator := "http://" + ln.Operator.Addr().String()
		var account struct{ Account struct{ ID string } }
		call(t, http.MethodPost, operator+"/admin/v1/accounts", "", cfg.AdminToken, "req-create", `{"name": "Logged"}`, http.StatusCreated, &account)
		accountID := account.Account.ID
		var key struct{ APIKey struct{ Key string } }
		call(t, http.MethodPost, operator+"/admin/v1/accounts/"+accountID+"/api-keys", "", cfg.AdminToken, "req-key", `{}`, http.StatusCreated, &key)
		call(t, http.MethodGet, "http://"+ln.API.Addr().String()+"/api/v1/contacts/ct_missing", cfg.APIHost, key.APIKey.Key, "req-read", "", http.StatusNotFound, nil)
		call(t, http.MethodGet, "http://"+ln.API.Addr().String()+"/api/v1/nowhere/ct_missing", cfg.APIHost, key.APIKey.Key, "req-unknown", "", http.StatusNotFound, nil)
		call(t, http.MethodGet, operator+"/admin/v1/accounts/"+accountID, "", "not-the-token", "req-refused", "", http.StatusUnauthorized, nil)

		stop()
		if err := <-served; err != nil {
			t.Fatalf("Serve: %v", err)
		}

		entries := logs.All()
		serving := slices.IndexFunc(entries, func(e observer.LoggedEntry) bool { return e.Message == "serving" })
		firstRequest := slices.IndexFunc(entries, func(e observer.LoggedEntry) bool { return e.Message == "request" })
		if serving < 0 || serving > firstRequest ||
			entries[serving].ContextMap()["api"] != ln.API.Addr().String() || entries[serving].ContextMap()["operator"] != ln.Operator.Addr().String() {
			t.Fatalf("want a serving line with both addresses before the requests; lines: %v", entries)
		}
		last := entries[len(entries)-1]
		if last.Message != "stopped" || last.Level != zapcore.InfoLevel ||
			last.ContextMap()["api"] != ln.API.Addr().String() || last.ContextMap()["operator"] != ln.Operator.Addr().String() {
			t.Fatalf("last line = %s %v, want stopped with both addresses", last.Message, last.ContextMap())
		}

		for _, want := range []map[string]any{
			{"requestId": "req-create", "listener": "operator", "method": "POST", "route": "/admin/v1/accounts", "status": int64(201)},
			{"requestId": "req-key", "listener": "operator", "method": "POST", "route": "/admin/v1/accounts/{accountId}/api-keys", "status": int64(201), "accountId": accountID},
			{"requestId": "req-read", "listener": "api", "method": "GET", "route": "/api/v1/contacts/{contactId}", "status": int64(404), "accountId": accountID},
			{"requestId": "req-unknown", "listener": "api", "method": "GET", "route": "unmatched", "status": int64(404), "accountId": nil},
			// Refused before it proved a claim to any account: logged without one.
			{"requestId": "req-refused", "listener": "operator", "method": "GET", "route": "/admin/v1/accounts/{accountId}", "status": int64(401), "accountId": nil},
		} {
			lines := logs.FilterMessage("request").FilterField(zap.String("requestId", want["requestId"].(string))).All()
			if len(lines) != 1 || lines[0].Level != zapcore.InfoLevel {
				t.Fatalf("%d access lines for %s, want 1 at info", len(lines), want["requestId"])
			}
			got := lines[0].ContextMap()
			for field, value := range want {
				if got[field] != value {
					t.Errorf("%s: %s = %v, want %v (line %v)", want["requestId"], field, got[field], value, got)
				}
			}
			if took, ok := got["duration"].(time.Duration); !ok || took <= 0 {
				t.Errorf("%s: duration = %v", want["requestId"], got["duration"])
			}
		}
		for _, e := range entries {
			for field, value := range e.ContextMap() {
				if s, ok := value.(string); ok && strings.Contains(s, "ct_missing") {
					t.Errorf("line %q shows the raw path in %s: %s", e.Message, field, s)
				}
			}
		}
	})
}

// call sends one request and decodes its JSON answer into out (when not nil).
func call(t *testing.T, method, url, host, token, requestID, body string, status int, out any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Request-Id", requestID)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var raw bytes.Buffer
	if _, err := raw.ReadFrom(res.Body); err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d: %s", method, url, res.StatusCode, status, raw.String())
	}
	if out != nil {
		if err := json.Unmarshal(raw.Bytes(), out); err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
	}
}
