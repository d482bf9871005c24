package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/service/servicetest"
)

func TestOperatorAuthentication(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		svc.Operator.Do(t, servicetest.Request{Method: http.MethodPost, Path: "/admin/v1/accounts", Token: "-", Body: map[string]any{"name": "x"}}).ExpectError(t, http.StatusUnauthorized)
		svc.Operator.Do(t, servicetest.Request{Method: http.MethodGet, Path: "/admin/v1/accounts/acc_x", Token: "wrong"}).ExpectError(t, http.StatusUnauthorized)
		// An API key is not an operator token.
		acc := svc.NewAccount(t)
		svc.Operator.Do(t, servicetest.Request{Method: http.MethodGet, Path: "/admin/v1/accounts/" + acc.ID, Token: acc.Key}).ExpectError(t, http.StatusUnauthorized)
		// The operator API does not answer on the API listener.
		svc.API.Do(t, servicetest.Request{Method: http.MethodGet, Path: "/admin/v1/accounts/" + acc.ID, Token: servicetest.AdminToken}).ExpectError(t, http.StatusNotFound)
	})
}

func TestOperatorAccountsAndKeys(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		res := svc.Operator.Post(t, "/admin/v1/accounts", "", map[string]any{"name": "  Acme Inc  "}).Expect(t, http.StatusCreated)
		account := res.Object(t, "account")
		id := account["id"].(string)
		if !strings.HasPrefix(id, "acc_") || account["name"] != "Acme Inc" || account["createdAt"] == nil {
			t.Fatalf("account = %v", account)
		}
		got := svc.Operator.Get(t, "/admin/v1/accounts/"+id, "").Expect(t, http.StatusOK).Object(t, "account")
		if got["name"] != "Acme Inc" {
			t.Fatalf("GET account = %v", got)
		}
		svc.Operator.Get(t, "/admin/v1/accounts/acc_nope", "").ExpectError(t, http.StatusNotFound)
		svc.Operator.Post(t, "/admin/v1/accounts", "", map[string]any{}).ExpectError(t, http.StatusBadRequest)
		svc.Operator.Post(t, "/admin/v1/accounts", "", map[string]any{"name": "   "}).ExpectError(t, http.StatusBadRequest)
		svc.Operator.Post(t, "/admin/v1/accounts", "", map[string]any{"name": strings.Repeat("n", 256)}).ExpectError(t, http.StatusBadRequest)

		key := svc.Operator.Post(t, "/admin/v1/accounts/"+id+"/api-keys", "", map[string]any{}).Expect(t, http.StatusCreated).Object(t, "apiKey")
		if len(servicetest.Strings(t, key["scopes"])) != len(domain.AllScopes) || key["key"] == nil || key["id"] == nil || key["createdAt"] == nil {
			t.Fatalf("default key = %v", key)
		}
		limited := svc.Operator.Post(t, "/admin/v1/accounts/"+id+"/api-keys", "", map[string]any{"name": "read only", "scopes": []string{"contacts:read", "contacts:read"}}).Expect(t, http.StatusCreated).Object(t, "apiKey")
		if !slices.Equal(servicetest.Strings(t, limited["scopes"]), []string{"contacts:read"}) || limited["name"] != "read only" {
			t.Fatalf("limited key = %v", limited)
		}
		svc.Operator.Post(t, "/admin/v1/accounts/"+id+"/api-keys", "", map[string]any{"scopes": []string{"contacts:admin"}}).ExpectError(t, http.StatusBadRequest)
		// An empty list is not "left out": it must not become a key that may do everything.
		if msg := svc.Operator.Post(t, "/admin/v1/accounts/"+id+"/api-keys", "", map[string]any{"scopes": []string{}}).ExpectError(t, http.StatusBadRequest); !strings.Contains(msg, "scopes") {
			t.Fatalf("empty scopes: %q", msg)
		}
		nullScopes := svc.Operator.Post(t, "/admin/v1/accounts/"+id+"/api-keys", "", `{"scopes": null}`).Expect(t, http.StatusCreated).Object(t, "apiKey")
		if len(servicetest.Strings(t, nullScopes["scopes"])) != len(domain.AllScopes) {
			t.Fatalf("scopes null = %v", nullScopes)
		}
		svc.Operator.Post(t, "/admin/v1/accounts/acc_nope/api-keys", "", map[string]any{}).ExpectError(t, http.StatusNotFound)
	})
}

func TestOperatorCatalogue(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		base := "/admin/v1/accounts/" + acc.ID
		field := svc.Operator.Post(t, base+"/custom-fields", "", map[string]any{"name": "Company"}).Expect(t, http.StatusCreated).Object(t, "customField")
		if !strings.HasPrefix(field["id"].(string), "cf_") || field["name"] != "Company" {
			t.Fatalf("custom field = %v", field)
		}
		svc.Operator.Post(t, base+"/custom-fields", "", map[string]any{"name": " company "}).ExpectError(t, http.StatusConflict)
		svc.Operator.Post(t, base+"/custom-fields", "", map[string]any{"name": ""}).ExpectError(t, http.StatusBadRequest)
		if fields := svc.Operator.Get(t, base+"/custom-fields", "").Expect(t, http.StatusOK).List(t, "customFields"); len(fields) != 1 {
			t.Fatalf("custom fields = %v", fields)
		}

		tag := svc.Operator.Post(t, base+"/tags", "", map[string]any{"name": "Buyer", "order": 3, "automations": []map[string]any{
			{"type": "email.send", "subject": "Thanks", "body": "Receipt attached"},
			{"type": "campaign.enroll", "campaignId": "upsell"},
		}}).Expect(t, http.StatusCreated).Object(t, "tag")
		if tag["name"] != "Buyer" || tag["order"] != float64(3) || len(tag["automations"].([]any)) != 2 || tag["createdAt"] == nil {
			t.Fatalf("tag = %v", tag)
		}
		svc.Operator.Post(t, base+"/tags", "", map[string]any{"name": "  BUYER"}).ExpectError(t, http.StatusConflict)
		for name, body := range map[string]map[string]any{
			"no name":            {"name": ""},
			"unknown automation": {"name": "X1", "automations": []map[string]any{{"type": "sms.send"}}},
			"email without body": {"name": "X2", "automations": []map[string]any{{"type": "email.send", "subject": "s"}}},
			"campaign without":   {"name": "X3", "automations": []map[string]any{{"type": "campaign.enroll"}}},
			"order not a number": {"name": "X4", "order": "first"},
		} {
			t.Run(name, func(t *testing.T) {
				svc.Operator.Post(t, base+"/tags", "", body).ExpectError(t, http.StatusBadRequest)
			})
		}
		tags := svc.Operator.Get(t, base+"/tags", "").Expect(t, http.StatusOK).List(t, "tags")
		if len(tags) != 1 || len(tags[0]["automations"].([]any)) != 2 {
			t.Fatalf("operator tag list = %v", tags)
		}
		svc.Operator.Post(t, "/admin/v1/accounts/acc_nope/tags", "", map[string]any{"name": "X"}).ExpectError(t, http.StatusNotFound)
		svc.Operator.Post(t, "/admin/v1/accounts/acc_nope/custom-fields", "", map[string]any{"name": "X"}).ExpectError(t, http.StatusNotFound)
	})
}

// The history comes straight from the event log: every event of the entity, oldest first,
// with its position, version and metadata.
func TestOperatorHistory(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		svc.NewTag(t, acc.ID, "Lead")
		id := upsert(t, svc, acc.Key, map[string]any{"email": "Hist@Example.com", "firstName": "H"}).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
		svc.API.Do(t, servicetest.Request{Method: http.MethodPost, Path: "/api/v1/contacts/tags", Token: acc.Key, Headers: map[string]string{"X-Request-Id": "req-tag-1"},
			Body: map[string]any{"email": "hist@example.com", "tagNames": []string{"Lead"}}}).Expect(t, http.StatusOK)
		upsert(t, svc, acc.Key, map[string]any{"email": "hist@example.com", "firstName": "Hedy"}).Expect(t, http.StatusOK)
		// A correlation id is kept as sent when it is a sane label, else the request id serves.
		correlations := []string{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", strings.Repeat("c", 129), "two words", "caf\u00e9"}
		for i, correlation := range correlations {
			svc.API.Do(t, servicetest.Request{Method: http.MethodPost, Path: "/api/v1/contacts", Token: acc.Key,
				Headers: map[string]string{"X-Request-Id": fmt.Sprintf("req-corr-%d", i), "X-Correlation-Id": correlation},
				Body:    map[string]any{"email": "hist@example.com", "lastName": fmt.Sprintf("Lamarr %d", i)}}).Expect(t, http.StatusOK)
		}

		byID := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/history?contactId="+id, "").Expect(t, http.StatusOK).List(t, "events")
		var types []string
		lastPos := 0.0
		for i, e := range byID {
			types = append(types, e["type"].(string))
			if pos := e["position"].(float64); pos <= lastPos {
				t.Fatalf("positions not increasing: %v", byID)
			} else {
				lastPos = pos
			}
			if e["version"] != float64(i+1) || e["streamId"] != id || e["occurredAt"] == nil {
				t.Fatalf("event %d = %v", i, e)
			}
			meta := e["metadata"].(map[string]any)
			if meta["accountId"] != acc.ID || !strings.HasPrefix(meta["actor"].(string), "key:") || meta["requestId"] == "" {
				t.Fatalf("metadata = %v", meta)
			}
		}
		if !slices.Equal(types, []string{"ContactCreated", "TagApplied", "ContactUpdated", "ContactUpdated", "ContactUpdated", "ContactUpdated", "ContactUpdated"}) {
			t.Fatalf("history = %v", types)
		}
		for i, want := range []string{correlations[0], "req-corr-1", "req-corr-2", "req-corr-3"} {
			if meta := byID[3+i]["metadata"].(map[string]any); meta["correlationId"] != want {
				t.Fatalf("correlation id %q was kept as %v", correlations[i], meta["correlationId"])
			}
		}
		if byID[1]["metadata"].(map[string]any)["requestId"] != "req-tag-1" {
			t.Fatalf("requestId not carried into the event: %v", byID[1]["metadata"])
		}
		byEmail := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/history?email=HIST@example.com", "").Expect(t, http.StatusOK).List(t, "events")
		if len(byEmail) != len(byID) {
			t.Fatalf("history by email has %d events, by id %d", len(byEmail), len(byID))
		}
		svc.Operator.Get(t, "/admin/v1/accounts/"+other.ID+"/history?contactId="+id, "").ExpectError(t, http.StatusForbidden)
		svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/history", "").ExpectError(t, http.StatusBadRequest)
		svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/history?contactId="+id+"&email=x@example.com", "").ExpectError(t, http.StatusBadRequest)
		svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/history?email=nobody@example.com", "").ExpectError(t, http.StatusNotFound)
	})
}

func TestOperatorHealthAndMetrics(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		svc.Operator.Get(t, "/healthz", "-").Expect(t, http.StatusOK)
		svc.Operator.Get(t, "/readyz", "-").Expect(t, http.StatusOK)
		acc := svc.NewAccount(t)
		upsert(t, svc, acc.Key, map[string]any{"email": "metrics@example.com"}).Expect(t, http.StatusOK)
		metrics := string(svc.Operator.Get(t, "/metrics", "-").Expect(t, http.StatusOK).Raw)
		for _, name := range []string{
			`funnel_http_requests_total{listener="api",method="POST",route="/api/v1/contacts",status="200"}`,
			"funnel_events_appended_total", "funnel_projection_lag_seconds_bucket", `funnel_commands_total{command="UpsertContact",outcome="ok"}`,
			`funnel_projection_position{projection="contacts"}`,
		} {
			if !strings.Contains(metrics, name) {
				t.Errorf("metrics lack %s", name)
			}
		}
		svc.Operator.Get(t, "/admin/v1/nothing", "").ExpectError(t, http.StatusNotFound)
		svc.Operator.Delete(t, "/admin/v1/accounts", "").ExpectError(t, http.StatusMethodNotAllowed)
	})
}
