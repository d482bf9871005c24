package webhooks_test

import (
	"net/http"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// shape describes a JSON value: "string", "number", "boolean", "null", "array", or an object
// given as map[string]any of member shapes. It is how the tables of integration-api.md section 6
// are checked: every member present, each of its type, nothing more.
func shapeOf(v any) any {
	switch v := v.(type) {
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	case []any:
		return "array"
	case map[string]any:
		out := map[string]any{}
		for k, m := range v {
			out[k] = shapeOf(m)
		}
		return out
	}
	return "?"
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// sameShape compares shapes, treating the "any object" marker as matching every object.
func sameShape(t *testing.T, path string, got, want any) {
	t.Helper()
	if want == "object" {
		if _, ok := got.(map[string]any); !ok {
			t.Errorf("%s: got %v, want an object", path, got)
		}
		return
	}
	wm, wantObj := want.(map[string]any)
	gm, gotObj := got.(map[string]any)
	if wantObj != gotObj {
		t.Errorf("%s: got %v, want %v", path, got, want)
		return
	}
	if !wantObj {
		if got != want {
			t.Errorf("%s: got %v, want %v", path, got, want)
		}
		return
	}
	if !reflect.DeepEqual(keys(gm), keys(wm)) {
		t.Errorf("%s: members %v, want %v", path, keys(gm), keys(wm))
		return
	}
	for k := range wm {
		sameShape(t, path+"."+k, gm[k], wm[k])
	}
}

// form.submitted, from a real submission through the API, is exactly section 6's table.
func TestFormSubmittedPayload(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		company := svc.NewCustomField(t, acc.ID, "Company")
		formID, fields := svc.NewForm(t, acc.ID, "Newsletter", nil,
			servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email", "required": true},
			servicetest.Field{"label": "Name", "type": "text", "contactField": "builtin:fullName"},
			servicetest.Field{"label": "Company", "type": "text", "contactField": "custom:" + company},
			servicetest.Field{"label": "Seats", "type": "number"},
			servicetest.Field{"label": "Comment", "type": "textarea"})
		rcv := newReceiver(t)
		subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}})
		res := svc.API.Post(t, "/api/v1/forms/"+formID+"/submissions", acc.Key, map[string]any{"values": map[string]any{
			fields[0]: "Ada@Example.com", fields[1]: "Ada King Lovelace", fields[2]: "Analytical Engines", fields[3]: 3,
		}}).Expect(t, http.StatusCreated)
		submission := res.Object(t, "submission")

		env := decode(t, rcv.waitFor(t, 1, 5*time.Second)[0].body)
		sameShape(t, "envelope", shapeOf(env), map[string]any{"id": "string", "type": "string", "createdAt": "string", "data": "object"})
		data := env["data"].(map[string]any)
		sameShape(t, "data", shapeOf(data), map[string]any{
			"formId": "string", "formName": "string", "submissionId": "string", "submittedAt": "string",
			"submissionData": "object", "fields": "array",
			"contact": map[string]any{"contactId": "string", "email": "string", "firstName": "string", "lastName": "string", "phone": "string",
				"customFields": "object", "customFieldsLabeled": "array"},
		})
		if data["formId"] != formID || data["formName"] != "Newsletter" || data["submissionId"] != submission["id"] || data["submittedAt"] != submission["submittedAt"] {
			t.Fatalf("data = %v, submission = %v", data, submission)
		}
		wantData := map[string]any{"Email": "Ada@Example.com", "Name": "Ada King Lovelace", "Company": "Analytical Engines", "Seats": float64(3)}
		if !reflect.DeepEqual(data["submissionData"], wantData) {
			t.Fatalf("submissionData = %v", data["submissionData"])
		}
		entries := data["fields"].([]any)
		if len(entries) != 5 {
			t.Fatalf("fields = %v", entries)
		}
		for i, e := range entries {
			sameShape(t, "fields[]", shapeOf(e), map[string]any{"id": "string", "label": "string", "type": "string",
				"contactField": shapeOf(e.(map[string]any)["contactField"]), "value": shapeOf(e.(map[string]any)["value"])})
			if e.(map[string]any)["id"] != fields[i] {
				t.Errorf("fields[%d] = %v", i, e)
			}
		}
		if name := entries[1].(map[string]any); name["contactField"] != "builtin:fullName" || name["type"] != "text" || name["label"] != "Name" || name["value"] != "Ada King Lovelace" {
			t.Errorf("the Name entry = %v", name)
		}
		if comment := entries[4].(map[string]any); comment["value"] != nil || comment["contactField"] != nil {
			t.Errorf("an unanswered, unmapped field must carry null value and contactField: %v", comment)
		}
		contact := data["contact"].(map[string]any)
		if contact["contactId"] != submission["contactId"] || contact["email"] != "Ada@Example.com" || contact["firstName"] != "Ada" || contact["lastName"] != "King Lovelace" {
			t.Fatalf("contact = %v", contact)
		}
		if contact["customFields"].(map[string]any)[company] != "Analytical Engines" {
			t.Fatalf("customFields = %v", contact["customFields"])
		}
		labeled := contact["customFieldsLabeled"].([]any)
		if len(labeled) != 1 || !reflect.DeepEqual(labeled[0], map[string]any{"id": company, "label": "Company", "value": "Analytical Engines"}) {
			t.Fatalf("customFieldsLabeled = %v", labeled)
		}
	})
}

// scheduling.booked, from a real booking through the API, is exactly section 6's table.
func TestSchedulingBookedPayload(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		calendarID, questions := svc.NewEventType(t, acc.ID, "Discovery call", 45,
			servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email", "required": true},
			servicetest.Field{"label": "First name", "type": "text", "contactField": "builtin:firstName"},
			servicetest.Field{"label": "Topic", "type": "text"})
		rcv := newReceiver(t)
		subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"scheduling.booked"}})
		start := time.Now().Add(72 * time.Hour).UTC().Truncate(time.Minute)
		res := svc.API.Post(t, "/api/v1/scheduling/"+calendarID+"/bookings", acc.Key, map[string]any{
			"startTime": start.Format(time.RFC3339), "timezone": "Europe/Paris",
			"answers": map[string]any{questions[0]: "grace@example.com", questions[1]: "Grace", questions[2]: "Compilers"},
		}).Expect(t, http.StatusCreated)
		booking := res.Object(t, "booking")

		env := decode(t, rcv.waitFor(t, 1, 5*time.Second)[0].body)
		if env["type"] != "scheduling.booked" {
			t.Fatalf("type = %v", env["type"])
		}
		data := env["data"].(map[string]any)
		sameShape(t, "data", shapeOf(data), map[string]any{
			"eventTypeId": "string", "eventTypeName": "string", "bookingId": "string", "when": "string", "meetingUrl": "string",
			"attendee": map[string]any{"contactFields": "object", "answers": "object"},
			"contact":  map[string]any{"contactId": "string", "email": "string", "firstName": "string", "lastName": "string"},
		})
		if data["eventTypeId"] != calendarID || data["eventTypeName"] != "Discovery call" || data["bookingId"] != booking["id"] ||
			data["when"] != start.Format("2006-01-02T15:04:05.000Z") || data["meetingUrl"] != booking["meetingUrl"] {
			t.Fatalf("data = %v, booking = %v", data, booking)
		}
		attendee := data["attendee"].(map[string]any)
		if !reflect.DeepEqual(attendee["contactFields"], map[string]any{"builtin:email": "grace@example.com", "builtin:firstName": "Grace"}) {
			t.Fatalf("contactFields = %v", attendee["contactFields"])
		}
		if !reflect.DeepEqual(attendee["answers"], map[string]any{questions[0]: "grace@example.com", questions[1]: "Grace", questions[2]: "Compilers"}) {
			t.Fatalf("answers = %v", attendee["answers"])
		}
		contact := data["contact"].(map[string]any)
		if contact["contactId"] != booking["contactId"] || contact["email"] != "grace@example.com" || contact["firstName"] != "Grace" {
			t.Fatalf("contact = %v", contact)
		}
	})
}

// A calendar without a meeting URL: scheduling.booked shows meetingUrl as null, as the
// scheduling API shows the booking (not "").
func TestSchedulingBookedWithoutMeetingURL(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		calendar := svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/event-types", "", map[string]any{
			"name": "Phone call", "durationMinutes": 15,
			"questions": []servicetest.Field{{"label": "Email", "type": "email", "contactField": "builtin:email", "required": true}},
		}).Expect(t, http.StatusCreated).Object(t, "eventType")
		question := calendar["questions"].([]any)[0].(map[string]any)["id"].(string)
		rcv := newReceiver(t)
		subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"scheduling.booked"}})
		start := time.Now().Add(72 * time.Hour).UTC().Truncate(time.Minute)
		booking := svc.API.Post(t, "/api/v1/scheduling/"+calendar["id"].(string)+"/bookings", acc.Key, map[string]any{
			"startTime": start.Format(time.RFC3339), "timezone": "UTC", "answers": map[string]any{question: "lin@example.com"},
		}).Expect(t, http.StatusCreated).Object(t, "booking")

		data := decode(t, rcv.waitFor(t, 1, 5*time.Second)[0].body)["data"].(map[string]any)
		url, present := data["meetingUrl"]
		if !present || url != nil {
			t.Fatalf("meetingUrl of a calendar without one = %#v (present: %v), want null", url, present)
		}
		if url, present := booking["meetingUrl"]; !present || url != nil {
			t.Fatalf("the API shows the booking's meetingUrl as %#v, want null", url)
		}
	})
}
