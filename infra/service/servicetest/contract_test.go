package servicetest

import (
	"net/http"
	"strings"
	"testing"
)

// The contract check finds what breaks the document, every fault of an answer at once, and
// lets through what conforms; without this test a check that passed everything would look
// like a service that conforms.
func TestContractCheckFindsEveryFault(t *testing.T) {
	c := IntegrationContract(t)
	contact := `{"id": "ct_a", "email": "a@example.com", "firstName": "", "lastName": "", "phone": "", "tagIds": [],
		"customFields": {}, "createdAt": "2026-11-23T10:15:30.123Z", "updatedAt": "2026-11-23T10:15:30.123Z"}`
	json := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	for _, tc := range []struct {
		name             string
		method, path     string
		requestBody      string
		status           int
		header           http.Header
		body             string
		wantFaults       int
		wantFaultsHaving []string
	}{
		{name: "a conforming answer", method: "GET", path: "/api/v1/contacts/ct_a", status: 200, header: json,
			body: `{"success": true, "contact": ` + contact + `}`},
		{name: "two faults of one body, both reported", method: "GET", path: "/api/v1/contacts/ct_a", status: 200, header: json,
			body:       `{"success": true, "contact": ` + strings.Replace(strings.Replace(contact, `"email": "a@example.com", `, "", 1), `"tagIds": []`, `"tagIds": "x"`, 1) + `}`,
			wantFaults: 2, wantFaultsHaving: []string{"email", "tagIds"}},
		{name: "a timestamp that is not one", method: "GET", path: "/api/v1/contacts/ct_a", status: 200, header: json,
			body:       `{"success": true, "contact": ` + strings.Replace(contact, `"createdAt": "2026-11-23T10:15:30.123Z"`, `"createdAt": "yesterday"`, 1) + `}`,
			wantFaults: 1, wantFaultsHaving: []string{"createdAt"}},
		{name: "a member the document does not name", method: "GET", path: "/api/v1/contacts/ct_a", status: 200, header: json,
			body: `{"success": true, "contact": ` + contact + `, "extra": 1}`, wantFaults: 1, wantFaultsHaving: []string{"extra"}},
		{name: "a status the operation does not list", method: "GET", path: "/api/v1/contacts", status: 500, header: json,
			body: `{"error": "internal error", "code": "internal"}`, wantFaults: 1, wantFaultsHaving: []string{"status"}},
		{name: "an error body with more than error", method: "GET", path: "/api/v1/contacts/ct_a", status: 404, header: json,
			body: `{"error": "not found", "code": 7}`, wantFaults: 1},
		{name: "an error body without its code", method: "GET", path: "/api/v1/contacts/ct_a", status: 404, header: json,
			body: `{"error": "not found"}`, wantFaults: 1, wantFaultsHaving: []string{"code"}},
		{name: "an error code answered with another status", method: "GET", path: "/api/v1/contacts/ct_a", status: 404, header: json,
			body: `{"error": "not found", "code": "forbidden"}`, wantFaults: 1, wantFaultsHaving: []string{"answered with 403"}},
		{name: "an error code of no list", method: "GET", path: "/api/v1/contacts/ct_a", status: 404, header: json,
			body: `{"error": "not found", "code": "gone"}`, wantFaults: 2, wantFaultsHaving: []string{"code", "not one of domain.ErrorCodes"}},
		{name: "an error naming the field at fault", method: "POST", path: "/api/v1/contacts", requestBody: `{"email": 1}`, status: 400, header: json,
			body: `{"error": "email: expected string, got number", "code": "invalid_request", "param": "email"}`},
		{name: "a success to a route the document lacks", method: "GET", path: "/api/v1/nowhere", status: 200, header: json,
			body: `{"success": true}`, wantFaults: 1, wantFaultsHaving: []string{"no operation"}},
		{name: "the JSON 404 of an unknown path", method: "GET", path: "/api/v1/nowhere", status: 404, header: json,
			body: `{"error": "not found", "code": "not_found"}`},
		{name: "a 429 of an unknown path, as the per-address limit answers it", method: "GET", path: "/api/v1/nowhere", status: 429,
			header: http.Header{"Content-Type": {"application/json"}, "Retry-After": {"3"}}, body: `{"error": "rate limit exceeded", "code": "rate_limited", "retryAfterSeconds": 3}`},
		{name: "a 429 of an unknown path without retryAfterSeconds", method: "GET", path: "/api/v1/nowhere", status: 429,
			header: http.Header{"Content-Type": {"application/json"}, "Retry-After": {"3"}}, body: `{"error": "rate limit exceeded", "code": "rate_limited"}`, wantFaults: 1},
		{name: "a 405 without Allow", method: "PUT", path: "/api/v1/contacts", status: 405, header: json,
			body: `{"error": "method not allowed", "code": "method_not_allowed"}`, wantFaults: 1, wantFaultsHaving: []string{"Allow"}},
		{name: "the 405 of a wrong method", method: "PUT", path: "/api/v1/contacts", status: 405,
			header: http.Header{"Content-Type": {"application/json"}, "Allow": {"GET, HEAD, POST"}}, body: `{"error": "method not allowed", "code": "method_not_allowed"}`},
		{name: "an invalid request that was answered 2xx", method: "POST", path: "/api/v1/contacts", requestBody: `{"firstName": "no email"}`,
			status: 200, header: json, body: `{"success": true, "contact": ` + contact + `, "created": true, "tags": {"requested": {"tagNames": [], "tagIds": []}, "applied": {"tagNames": [], "tagIds": []}}}`,
			wantFaults: 1, wantFaultsHaving: []string{"email"}},
		{name: "an invalid request that was refused", method: "POST", path: "/api/v1/contacts", requestBody: `{"firstName": "no email"}`,
			status: 400, header: json, body: `{"error": "email is required", "code": "invalid_request", "param": "email"}`},
		{name: "a limit beyond int64 is still a positive integer", method: "GET", path: "/api/v1/tags?limit=99999999999999999999", status: 200, header: json,
			body: `{"success": true, "tags": []}`},
		{name: "a HEAD answer with a status GET lists", method: "HEAD", path: "/api/v1/contacts/ct_a", status: 403},
		{name: "a HEAD answer with a status GET does not list", method: "HEAD", path: "/api/v1/tags", status: 404, wantFaults: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, "http://api.localhost"+tc.path, strings.NewReader(tc.requestBody))
			if err != nil {
				t.Fatal(err)
			}
			if tc.requestBody != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			faults := c.check(exchange{request: req, requestBody: []byte(tc.requestBody), status: tc.status, header: tc.header, body: []byte(tc.body)})
			if len(faults) != tc.wantFaults {
				t.Fatalf("%d faults, want %d: %q", len(faults), tc.wantFaults, faults)
			}
			for _, want := range tc.wantFaultsHaving {
				if !strings.Contains(strings.Join(faults, "\n"), want) {
					t.Errorf("no fault names %q: %q", want, faults)
				}
			}
		})
	}
}

// A webhook body is checked against the document's webhook of its type, headers included.
func TestContractCheckOfWebhooks(t *testing.T) {
	c := IntegrationContract(t)
	header := func(event string) http.Header {
		return http.Header{"Content-Type": {"application/json"}, "X-Service-Event": {event}, "X-Service-Delivery": {"dlv_a"},
			"X-Service-Signature": {strings.Repeat("ab", 32)}, "Webhook-Id": {"dlv_a"}, "Webhook-Timestamp": {"1700000000"},
			"Webhook-Signature": {"v1,c2lnbmF0dXJl"}}
	}
	booked := `{"id": "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "type": "scheduling.booked", "createdAt": "2026-11-23T10:15:30.123Z",
		"data": {"eventTypeId": "evt_a", "eventTypeName": "Call", "bookingId": "bkg_a", "when": "2026-11-24T10:00:00.000Z",
		"meetingUrl": null, "attendee": {"contactFields": {}, "answers": {}}, "contact": {"contactId": "", "email": "", "firstName": "", "lastName": ""}}}`
	if faults := c.webhookFaults(header("scheduling.booked"), []byte(booked)); len(faults) != 0 {
		t.Errorf("a conforming delivery: %q", faults)
	}
	if faults := c.webhookFaults(header("form.submitted"), []byte(booked)); len(faults) == 0 {
		t.Error("a booking sent as form.submitted passed")
	}
	noSignature := header("scheduling.booked")
	noSignature.Del("X-Service-Signature")
	broken := strings.Replace(booked, `"bookingId": "bkg_a", `, "", 1)
	if faults := c.webhookFaults(noSignature, []byte(broken)); len(faults) != 2 {
		t.Errorf("a delivery without its signature and bookingId: %q, want 2 faults", faults)
	}
}
