package api_test

import (
	"net/http"
	"testing"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// The handlers decode request bodies into their generated types (api/wire); where a plain
// generated type could not make a refusal, api/wire/overlay.yaml and httpapi.DecodeChecked keep
// it. Each case is one of those refusals, with the answer the API has always given.
func TestRequestBodiesRefusedAsTheirOverlaysSay(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		field := svc.NewCustomField(t, acc.ID, "Serial")
		svc.NewTag(t, acc.ID, "VIP")
		contact := svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "body@example.com"}).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
		formID, fields := svc.NewForm(t, acc.ID, "Survey", nil, servicetest.Field{"label": "Age", "type": "number"})
		calendar, _ := svc.NewEventType(t, acc.ID, "Call", 30)
		sub := svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, map[string]any{"url": sink(t), "event": "form.submitted"}).
			Expect(t, http.StatusCreated).Object(t, "subscription")["id"].(string)

		for _, c := range []struct {
			what, path, body, param, message string
		}{
			{"a required member left out is refused before the command looks at the rest",
				"/api/v1/contacts", `{"customFields": {"cf_nope": "x"}}`, "email", "email is required"},
			{"a custom field's object is refused before a member of the wrong type met first",
				"/api/v1/contacts", `{"tagIds": "x", "email": "a@example.com", "customFields": {"` + field + `": [1]}}`, "customFields", "customFields: values must be strings, numbers or booleans"},
			{"the by-id tag route still refuses an email that is no string, though it ignores it",
				"/api/v1/contacts/" + contact + "/tags", `{"tagNames": ["VIP"], "email": 5}`, "email", "email: expected string, got number"},
			{"a start time that is no string is a member of the wrong type, in the order met",
				"/api/v1/scheduling/" + calendar + "/bookings", `{"timezone": 5, "startTime": 5}`, "timezone", "timezone: expected string, got number"},
			{"a bad start time names its format",
				"/api/v1/scheduling/" + calendar + "/bookings", `{"startTime": "tomorrow"}`, "startTime", "startTime must be an RFC 3339 timestamp, such as 2030-01-31T09:30:00Z"},
			{"a form value beyond a float64 is refused while decoding",
				"/api/v1/forms/" + formID + "/submissions", `{"values": {"` + fields[0] + `": 1e400}}`, "values", "values: expected number, got number 1e400"},
			{"a replay's since that is no string is a member of the wrong type",
				"/api/v1/webhooks/subscriptions/" + sub + "/replay", `{"since": 5}`, "since", "since: expected string, got number"},
			{"a kind that is no string is refused on the integration API too",
				"/api/v1/webhooks/subscriptions", `{"url": "https://example.com/hook", "event": "form.submitted", "kind": 5}`, "kind", "kind: expected string, got number"},
		} {
			res := svc.API.Do(t, servicetest.Request{Method: http.MethodPost, Path: c.path, Token: acc.Key, Body: c.body})
			if res.Status != http.StatusBadRequest || res.Body["param"] != c.param || res.Body["error"] != c.message {
				t.Errorf("%s: %d %s, want 400 %q naming %s", c.what, res.Status, res.Raw, c.message, c.param)
			}
		}

		// A custom field's number keeps every digit: it is stored as the JSON text it came as.
		written := svc.API.Post(t, "/api/v1/contacts", acc.Key, `{"email": "body@example.com", "customFields": {"`+field+`": 12345678901234567890.5}}`).
			Expect(t, http.StatusOK).Object(t, "contact")
		if got := written["customFields"].(map[string]any)[field]; got != "12345678901234567890.5" {
			t.Errorf("custom field = %v, want the number's text as sent", got)
		}
	})
}
