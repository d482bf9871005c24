package api_test

import (
	"net/http"
	"slices"
	"strings"
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
			{"a form value beyond a float64 is refused while decoding, named by its path",
				"/api/v1/forms/" + formID + "/submissions", `{"values": {"` + fields[0] + `": 1e400}}`, "values." + fields[0], "values." + fields[0] + ": expected number, got number 1e400"},
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

// A value of the wrong type inside an array is named by its JSON path with the element's index
// (decisions.md "Error codes": param is "its JSON path, e.g. email, tagIds[3], values.fld_x"), on
// both APIs: encoding/json names it without the index ("stages.name"), which is no path of the
// body, so a client could not tell which element is at fault; the validation errors of the same
// endpoints name the index already (stages[0].name is required).
func TestAWrongTypeInsideAnArrayIsNamedWithItsIndex(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		base := "/admin/v1/accounts/" + acc.ID
		for _, c := range []struct{ path, body, param string }{
			{base + "/crms", `{"name": "Sales", "stages": [{"name": "New"}, {"name": 7}]}`, "stages[1].name"},
			{base + "/products", `{"name": "P", "pricingTiers": [{"name": "M", "amount": 10.5, "currency": "USD", "interval": "month"}]}`, "pricingTiers[0].amount"},
			{base + "/forms", `{"name": "F", "fields": [{"label": "x", "type": "text", "required": "yes"}]}`, "fields[0].required"},
			{base + "/tags", `{"name": "T", "automations": [{"type": "campaign.enroll", "campaignId": 5}]}`, "automations[0].campaignId"},
			{base + "/api-keys", `{"scopes": ["contacts:read", 1]}`, "scopes[1]"},
		} {
			res := svc.Operator.Post(t, c.path, "", c.body)
			if res.Status != http.StatusBadRequest || res.Body["code"] != "invalid_request" || res.Body["param"] != c.param ||
				!strings.HasPrefix(res.Body["error"].(string), c.param+": expected ") {
				t.Errorf("POST %s %s: %d %s, want 400 invalid_request naming %s", c.path, c.body, res.Status, res.Raw, c.param)
			}
		}
		// The integration API, with decisions.md's own example.
		res := svc.API.Post(t, "/api/v1/contacts", acc.Key, `{"email": "a@example.com", "tagIds": ["tag_a", "tag_b", "tag_c", 4]}`)
		if res.Status != http.StatusBadRequest || res.Body["param"] != "tagIds[3]" || res.Body["error"] != "tagIds[3]: expected string, got number" {
			t.Errorf("tagIds with a number: %d %s, want param tagIds[3]", res.Status, res.Raw)
		}
	})
}

// Unknown members are ignored (integration-api.md "Everywhere"), and a member whose name differs
// from a known one only in case is unknown: integrators forward objects of other systems
// (FirstName, EMAIL), and encoding/json alone would read them as the known member, the later of
// the two winning, so an extra one could clear a field, turn an add of tags into a removal, or
// stand in for a required member. httpapi.decodeJSON matches names exactly, for both APIs.
func TestMembersDifferingOnlyInCaseAreUnknownAndIgnored(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		vip := svc.NewTag(t, acc.ID, "VIP")

		res := svc.API.Post(t, "/api/v1/contacts", acc.Key,
			`{"email": "ann@example.com", "firstName": "Ann", "FIRSTNAME": ""}`).Expect(t, http.StatusOK)
		if got := res.Object(t, "contact")["firstName"]; got != "Ann" {
			t.Errorf("firstName = %q after an upsert with firstName \"Ann\" and an unknown member FIRSTNAME; want \"Ann\"", got)
		}

		svc.API.Post(t, "/api/v1/contacts/tags", acc.Key, map[string]any{"email": "ann@example.com", "tagIds": []string{vip}}).Expect(t, http.StatusOK)
		res = svc.API.Post(t, "/api/v1/contacts/tags", acc.Key,
			`{"email": "ann@example.com", "tagIds": ["`+vip+`"], "ACTION": "remove"}`).Expect(t, http.StatusOK)
		if got := servicetest.Strings(t, res.Object(t, "contact")["tagIds"]); !slices.Equal(got, []string{vip}) {
			t.Errorf("tagIds = %v after an add (the default action) with an unknown member ACTION \"remove\"; want [%s]", got, vip)
		}

		// "EMAIL" is not "email": the required member is missing.
		res = svc.API.Post(t, "/api/v1/contacts", acc.Key, `{"EMAIL": "caps@example.com"}`)
		if res.Status != http.StatusBadRequest || res.Body["param"] != "email" {
			t.Errorf("an upsert with EMAIL only: %d %s, want 400 naming email", res.Status, res.Raw)
		}

		// The operator API decodes with the same decoder.
		res = svc.Operator.Post(t, "/admin/v1/accounts", "", `{"name": "Exact", "NAME": "Other"}`).Expect(t, http.StatusCreated)
		if got := res.Object(t, "account")["name"]; got != "Exact" {
			t.Errorf("account name = %q, want \"Exact\"", got)
		}
	})
}
