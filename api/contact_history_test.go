package api_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// An auditor sees everything that happened to a contact in one history, in log order: its own
// events and the leads, submissions and bookings of other streams that name it.
func TestContactHistoryAcrossStreams(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		crm := svc.NewCRM(t, acc.ID, "Sales", "New", "Won")
		formID, ff := svc.NewForm(t, acc.ID, "Signup", nil, servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"})
		eventTypeID, q := svc.NewEventType(t, acc.ID, "Call", 30, servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"})

		res := svc.API.Post(t, "/api/v1/crms/"+crm.ID+"/leads", acc.Key, map[string]any{"contactEmail": "audit@example.com", "firstName": "Audrey"}).Expect(t, http.StatusCreated)
		contactID := res.Object(t, "contact")["id"].(string)
		leadID := res.Object(t, "lead")["id"].(string)
		svc.API.Patch(t, "/api/v1/crms/"+crm.ID+"/leads/"+leadID, acc.Key, map[string]any{"stageId": crm.Stages[1]}).Expect(t, http.StatusOK)
		sub := svc.API.Post(t, "/api/v1/forms/"+formID+"/submissions", acc.Key, map[string]any{"values": map[string]any{ff[0]: "AUDIT@example.com"}}).Expect(t, http.StatusCreated).Object(t, "submission")
		booking := svc.API.Post(t, "/api/v1/scheduling/"+eventTypeID+"/bookings", acc.Key, map[string]any{"startTime": futureSlot(2), "answers": map[string]any{q[0]: "audit@example.com"}}).
			Expect(t, http.StatusCreated).Object(t, "booking")
		if sub["contactId"] != contactID || booking["contactId"] != contactID {
			t.Fatalf("the submission (%v) and the booking (%v) are not the contact's %s", sub["contactId"], booking["contactId"], contactID)
		}

		events := history(t, svc, acc.ID, contactID)
		var types []string
		streams := map[string]string{}
		last := 0.0
		for _, e := range events {
			types = append(types, e["type"].(string))
			streams[e["type"].(string)] = e["streamId"].(string)
			if pos := e["position"].(float64); pos <= last {
				t.Fatalf("history not in log order: %v", events)
			} else {
				last = pos
			}
			if e["metadata"].(map[string]any)["accountId"] != acc.ID {
				t.Fatalf("event of another account in the history: %v", e)
			}
		}
		want := "ContactCreated,LeadAssigned,LeadCreated,LeadMoved,FormSubmitted,BookingCreated"
		if strings.Join(types, ",") != want {
			t.Fatalf("history = %v, want %s", types, want)
		}
		if streams["ContactCreated"] != contactID || streams["LeadCreated"] != leadID || streams["LeadMoved"] != leadID ||
			streams["FormSubmitted"] != sub["id"] || streams["BookingCreated"] != eventTypeID {
			t.Fatalf("streams = %v", streams)
		}
		moved := events[3]["data"].(map[string]any)
		if moved["fromStageId"] != crm.Stages[0] || moved["toStageId"] != crm.Stages[1] {
			t.Fatalf("LeadMoved = %v", moved)
		}
		booked := events[5]["data"].(map[string]any)
		if booked["eventTypeName"] != "Call" || booked["contact"].(map[string]any)["firstName"] != "Audrey" {
			t.Fatalf("BookingCreated = %v", booked)
		}

		// Read newest first (the console's timeline), the history is the same events backwards,
		// each as the oldest-first read shows it: personal values opened alike.
		newest := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/history?order=newest&contactId="+contactID, "").Expect(t, http.StatusOK).List(t, "events")
		if len(newest) != len(events) {
			t.Fatalf("newest first: %d events, oldest first %d", len(newest), len(events))
		}
		for i, e := range newest {
			if want := events[len(events)-1-i]; !reflect.DeepEqual(e, want) {
				t.Fatalf("newest first, event %d = %v, want %v", i, e, want)
			}
		}
		if email := newest[len(newest)-1]["data"].(map[string]any)["email"]; email != "audit@example.com" {
			t.Fatalf("ContactCreated read newest first shows email %v", email)
		}
	})
}

// Each CRM, forms and scheduling endpoint needs its scope (integration-api.md section 5).
func TestScopesOfCRMFormsAndScheduling(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		crm := svc.NewCRM(t, acc.ID, "Sales", "New", "Won")
		lead := svc.API.Post(t, "/api/v1/crms/"+crm.ID+"/leads", acc.Key, map[string]any{"contactEmail": "scope@example.com"}).Expect(t, http.StatusCreated).Object(t, "lead")["id"].(string)
		formID, ff := svc.NewForm(t, acc.ID, "Form", nil, servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"})
		eventTypeID, _ := svc.NewEventType(t, acc.ID, "Call", 30)
		endpoints := []struct {
			scope, method, path string
			body                any
			status              int
		}{
			{"crm:read", http.MethodGet, "/api/v1/crms", nil, http.StatusOK},
			{"crm:read", http.MethodGet, "/api/v1/crms/" + crm.ID + "/stages", nil, http.StatusOK},
			{"crm:write", http.MethodPost, "/api/v1/crms/" + crm.ID + "/leads", map[string]any{"contactEmail": "scope@example.com"}, http.StatusCreated},
			{"crm:write", http.MethodPatch, "/api/v1/crms/" + crm.ID + "/leads/" + lead, map[string]any{"stageId": crm.Stages[1]}, http.StatusOK},
			{"forms:read", http.MethodGet, "/api/v1/forms", nil, http.StatusOK},
			{"forms:read", http.MethodGet, "/api/v1/forms/" + formID, nil, http.StatusOK},
			{"forms:write", http.MethodPost, "/api/v1/forms/" + formID + "/submissions", map[string]any{"values": map[string]any{ff[0]: "scope@example.com"}}, http.StatusCreated},
			{"scheduling:read", http.MethodGet, "/api/v1/scheduling/event-types", nil, http.StatusOK},
			{"scheduling:read", http.MethodGet, "/api/v1/scheduling/event-types/" + eventTypeID, nil, http.StatusOK},
			{"scheduling:write", http.MethodPost, "/api/v1/scheduling/" + eventTypeID + "/bookings", map[string]any{"startTime": futureSlot(4)}, http.StatusCreated},
		}
		all := []string{"crm:read", "crm:write", "forms:read", "forms:write", "scheduling:read", "scheduling:write", "contacts:write", "tags:write"}
		for _, ep := range endpoints {
			t.Run(ep.method+" "+ep.path, func(t *testing.T) {
				var others []string
				for _, s := range all {
					if s != ep.scope {
						others = append(others, s)
					}
				}
				without := svc.NewKey(t, acc.ID, others)
				msg := svc.API.Do(t, servicetest.Request{Method: ep.method, Path: ep.path, Token: without, Body: ep.body}).ExpectError(t, http.StatusForbidden)
				if !strings.Contains(msg, ep.scope) {
					t.Fatalf("403 message %q does not name %s", msg, ep.scope)
				}
				with := svc.NewKey(t, acc.ID, []string{ep.scope})
				svc.API.Do(t, servicetest.Request{Method: ep.method, Path: ep.path, Token: with, Body: ep.body}).Expect(t, ep.status)
			})
		}
		// Only the keys with the scope wrote: two leads (one per create), one submission, one booking.
		if leads := leadsOf(t, svc, acc.ID, crm.ID, ""); len(leads) != 2 {
			t.Fatalf("%d leads", len(leads))
		}
		if subs := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/forms/"+formID+"/submissions", "").Expect(t, http.StatusOK).List(t, "submissions"); len(subs) != 1 {
			t.Fatalf("%d submissions", len(subs))
		}
		if b := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/event-types/"+eventTypeID+"/bookings", "").Expect(t, http.StatusOK).List(t, "bookings"); len(b) != 1 {
			t.Fatalf("%d bookings", len(b))
		}
		// Unauthenticated requests are refused before anything else.
		svc.API.Do(t, servicetest.Request{Method: http.MethodGet, Path: "/api/v1/crms", Token: "-"}).ExpectError(t, http.StatusUnauthorized)
		svc.API.Do(t, servicetest.Request{Method: http.MethodPost, Path: "/api/v1/forms/" + formID + "/submissions", Token: "fnl_wrong", Body: map[string]any{}}).ExpectError(t, http.StatusUnauthorized)
	})
}

// A wrong method on a known path is 405 on both listeners; an unknown path is 404.
func TestMethodNotAllowed(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		for _, r := range []servicetest.Request{
			{Method: http.MethodDelete, Path: "/api/v1/contacts"},
			{Method: http.MethodPut, Path: "/api/v1/contacts/ct_x/tags"},
			{Method: http.MethodDelete, Path: "/api/v1/crms/crm_x/leads"},
			{Method: http.MethodPost, Path: "/api/v1/crms/crm_x/leads/lead_x"},
			{Method: http.MethodPost, Path: "/api/v1/forms"},
			{Method: http.MethodDelete, Path: "/api/v1/scheduling/event-types/evt_x"},
		} {
			r.Token = acc.Key
			svc.API.Do(t, r).ExpectError(t, http.StatusMethodNotAllowed)
		}
		for _, r := range []servicetest.Request{
			{Method: http.MethodPut, Path: "/admin/v1/accounts"},
			{Method: http.MethodDelete, Path: "/admin/v1/accounts/" + acc.ID + "/crms"},
			{Method: http.MethodPatch, Path: "/admin/v1/accounts/" + acc.ID + "/tags"},
		} {
			svc.Operator.Do(t, r).ExpectError(t, http.StatusMethodNotAllowed)
		}
		// /contacts/tags is not a contact id: GET and PUT there are wrong methods, not lookups.
		for _, method := range []string{http.MethodGet, http.MethodPut} {
			res := svc.API.Do(t, servicetest.Request{Method: method, Path: "/api/v1/contacts/tags", Token: acc.Key})
			res.ExpectError(t, http.StatusMethodNotAllowed)
			if allow := res.Header.Get("Allow"); allow != http.MethodPost {
				t.Errorf("%s /api/v1/contacts/tags: Allow %q, want POST", method, allow)
			}
		}
		svc.API.Get(t, "/api/v1/crms/crm_x/leads/lead_x/more", acc.Key).ExpectError(t, http.StatusNotFound)
		svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/nothing", "").ExpectError(t, http.StatusNotFound)
	})
}
