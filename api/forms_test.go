package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/infra/service/servicetest"
)

func TestFormsListAndGet(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		company := svc.NewCustomField(t, acc.ID, "Company")
		signup, fields := svc.NewForm(t, acc.ID, "Signup", nil,
			servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email", "required": true},
			servicetest.Field{"label": "Company", "type": "text", "contactField": "custom:" + company},
			servicetest.Field{"label": "Message", "type": "textarea"},
		)
		contact, _ := svc.NewForm(t, acc.ID, "Contact us", nil, servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"})
		foreign, _ := svc.NewForm(t, other.ID, "Theirs", nil, servicetest.Field{"label": "X", "type": "text"})

		forms := svc.API.Get(t, "/api/v1/forms", acc.Key).Expect(t, http.StatusOK).List(t, "forms")
		if len(forms) != 2 || forms[0]["id"] != signup || forms[1]["id"] != contact {
			t.Fatalf("forms = %v (creation order, this account only)", forms)
		}
		got := svc.API.Get(t, "/api/v1/forms/"+signup, acc.Key).Expect(t, http.StatusOK).Object(t, "form")
		if got["name"] != "Signup" || got["createdAt"] == nil {
			t.Fatalf("form = %v", got)
		}
		fs := got["fields"].([]any)
		want := []map[string]any{
			{"id": fields[0], "label": "Email", "type": "email", "contactField": "builtin:email", "required": true},
			{"id": fields[1], "label": "Company", "type": "text", "contactField": "custom:" + company, "required": false},
			{"id": fields[2], "label": "Message", "type": "textarea", "contactField": nil, "required": false},
		}
		for i, w := range want {
			f := fs[i].(map[string]any)
			for k, v := range w {
				if f[k] != v {
					t.Fatalf("field %d %s = %v, want %v (field %v)", i, k, f[k], v, f)
				}
			}
		}
		page := svc.API.Get(t, "/api/v1/forms?limit=1", acc.Key).Expect(t, http.StatusOK)
		next := svc.API.Get(t, "/api/v1/forms?limit=1&cursor="+page.Body["nextCursor"].(string), acc.Key).Expect(t, http.StatusOK)
		if l := next.List(t, "forms"); len(l) != 1 || l[0]["id"] != contact {
			t.Fatalf("second page = %v", l)
		}
		svc.API.Get(t, "/api/v1/forms/"+foreign, acc.Key).ExpectError(t, http.StatusForbidden)
		svc.API.Get(t, "/api/v1/forms/form_doesnotexist", acc.Key).ExpectError(t, http.StatusNotFound)
		svc.API.Get(t, "/api/v1/forms?limit=x", acc.Key).ExpectError(t, http.StatusBadRequest)
	})
}

func TestOperatorCreateForm(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		tag := svc.NewTag(t, acc.ID, "Signed up")
		foreignTag := svc.NewTag(t, other.ID, "Theirs")
		foreignField := svc.NewCustomField(t, other.ID, "Theirs")
		base := "/admin/v1/accounts/" + acc.ID + "/forms"
		email := map[string]any{"label": "Email", "type": "email", "contactField": "builtin:email", "required": true}

		form := svc.Operator.Post(t, base, "", map[string]any{"name": "Signup", "fields": []any{email}, "tagIds": []string{tag}}).Expect(t, http.StatusCreated).Object(t, "form")
		field := form["fields"].([]any)[0].(map[string]any)
		if !strings.HasPrefix(form["id"].(string), "form_") || !strings.HasPrefix(field["id"].(string), "fld_") || field["required"] != true ||
			!slices.Equal(servicetest.Strings(t, form["tagIds"]), []string{tag}) {
			t.Fatalf("form = %v", form)
		}
		cases := []struct {
			name string
			body map[string]any
			want string
		}{
			{"no name", map[string]any{"fields": []any{email}}, "name"},
			{"no fields", map[string]any{"name": "X"}, "fields"},
			{"unknown type", map[string]any{"name": "X", "fields": []any{map[string]any{"label": "A", "type": "color"}}}, "type"},
			{"no label", map[string]any{"name": "X", "fields": []any{map[string]any{"type": "text"}}}, "label"},
			{"unknown contactField", map[string]any{"name": "X", "fields": []any{map[string]any{"label": "A", "type": "text", "contactField": "builtin:age"}}}, "contactField"},
			{"custom field of another account", map[string]any{"name": "X", "fields": []any{map[string]any{"label": "A", "type": "text", "contactField": "custom:" + foreignField}}}, "contactField"},
			{"unknown tag", map[string]any{"name": "X", "fields": []any{email}, "tagIds": []string{"tag_nope", foreignTag}}, "tag_nope"},
			{"required not a boolean", map[string]any{"name": "X", "fields": []any{map[string]any{"label": "A", "type": "text", "required": "yes"}}}, "required"},
			{"two fields fill the email", map[string]any{"name": "X", "fields": []any{email, map[string]any{"label": "Work email", "type": "email", "contactField": "builtin:email"}}}, "Work email"},
			{"full name and first name", map[string]any{"name": "X", "fields": []any{email,
				map[string]any{"label": "Name", "type": "text", "contactField": "builtin:fullName"},
				map[string]any{"label": "First name", "type": "text", "contactField": "builtin:firstName"}}}, "builtin:firstName"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				msg := svc.Operator.Post(t, base, "", tc.body).ExpectError(t, http.StatusBadRequest)
				if !strings.Contains(msg, tc.want) {
					t.Fatalf("message %q does not mention %q", msg, tc.want)
				}
			})
		}
		if forms := svc.Operator.Get(t, base, "").Expect(t, http.StatusOK).List(t, "forms"); len(forms) != 1 {
			t.Fatalf("refused forms were created: %v", forms)
		}
		svc.Operator.Post(t, "/admin/v1/accounts/acc_nope/forms", "", map[string]any{"name": "X", "fields": []any{email}}).ExpectError(t, http.StatusNotFound)
		svc.Operator.Do(t, servicetest.Request{Method: http.MethodDelete, Path: base}).ExpectError(t, http.StatusMethodNotAllowed)
	})
}

func TestSubmitForm(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		company := svc.NewCustomField(t, acc.ID, "Company")
		tag := svc.NewTag(t, acc.ID, "Signed up")
		formID, f := svc.NewForm(t, acc.ID, "Signup", []string{tag},
			servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email", "required": true},
			servicetest.Field{"label": "Name", "type": "text", "contactField": "builtin:fullName"},
			servicetest.Field{"label": "Company", "type": "text", "contactField": "custom:" + company},
			servicetest.Field{"label": "Seats", "type": "number"},
			servicetest.Field{"label": "Terms", "type": "checkbox", "required": true},
			servicetest.Field{"label": "Start", "type": "date"},
		)
		email, name, comp, seats, terms, start := f[0], f[1], f[2], f[3], f[4], f[5]
		path := "/api/v1/forms/" + formID + "/submissions"

		res := svc.API.Post(t, path, acc.Key, map[string]any{"values": map[string]any{
			email: " Grace@Example.com ", name: "Grace Brewster Hopper", comp: "Navy", seats: 3, terms: true, start: "2030-01-31",
		}}).Expect(t, http.StatusCreated)
		sub := res.Object(t, "submission")
		if res.Body["success"] != true || !strings.HasPrefix(sub["id"].(string), "fsub_") || sub["formId"] != formID || sub["submittedAt"] == nil {
			t.Fatalf("submission = %s", res.Raw)
		}
		contactID, _ := sub["contactId"].(string)
		c := svc.API.Get(t, "/api/v1/contacts/"+contactID, acc.Key).Expect(t, http.StatusOK).Object(t, "contact")
		if c["email"] != "Grace@Example.com" || c["firstName"] != "Grace" || c["lastName"] != "Brewster Hopper" ||
			c["customFields"].(map[string]any)[company] != "Navy" || !slices.Equal(servicetest.Strings(t, c["tagIds"]), []string{tag}) {
			t.Fatalf("contact = %v", c)
		}
		subs := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/forms/"+formID+"/submissions", "").Expect(t, http.StatusOK).List(t, "submissions")
		if len(subs) != 1 || subs[0]["id"] != sub["id"] {
			t.Fatalf("submissions = %v", subs)
		}
		// The answer is the submission as it is kept (it is built from the write, not read back).
		for _, k := range []string{"formId", "contactId", "submittedAt"} {
			if subs[0][k] != sub[k] {
				t.Errorf("%s: answered %v, kept %v", k, sub[k], subs[0][k])
			}
		}
		values := subs[0]["values"].(map[string]any)
		if values[seats] != float64(3) || values[terms] != true || values[email] != "Grace@Example.com" || values[start] != "2030-01-31" {
			t.Fatalf("stored values = %v", values)
		}
		// The submission is in the contact's history, with the contact as it was.
		var submitted map[string]any
		for _, e := range history(t, svc, acc.ID, contactID) {
			if e["type"] == "FormSubmitted" {
				submitted = e["data"].(map[string]any)
			}
		}
		if submitted == nil || submitted["formName"] != "Signup" || submitted["contact"].(map[string]any)["lastName"] != "Brewster Hopper" {
			t.Fatalf("FormSubmitted = %v", submitted)
		}
		labeled := submitted["contact"].(map[string]any)["customFieldsLabeled"].([]any)
		if len(labeled) != 1 || labeled[0].(map[string]any)["label"] != "Company" {
			t.Fatalf("customFieldsLabeled = %v", labeled)
		}

		// A form without an email field records the submission without a contact.
		anon, af := svc.NewForm(t, acc.ID, "Feedback", []string{tag}, servicetest.Field{"label": "Comment", "type": "textarea", "required": true})
		anonSub := svc.API.Post(t, "/api/v1/forms/"+anon+"/submissions", acc.Key, map[string]any{"values": map[string]any{af[0]: "Nice"}}).Expect(t, http.StatusCreated).Object(t, "submission")
		if v, has := anonSub["contactId"]; !has || v != nil {
			t.Fatalf("anonymous submission = %v, want contactId null", anonSub)
		}

		foreign, ff := svc.NewForm(t, other.ID, "Theirs", nil, servicetest.Field{"label": "X", "type": "text"})
		ok := map[string]any{email: "refused@example.com", terms: true}
		with := func(extra map[string]any) map[string]any {
			v := map[string]any{}
			for k, x := range ok {
				v[k] = x
			}
			for k, x := range extra {
				if x == nil {
					delete(v, k)
				} else {
					v[k] = x
				}
			}
			return map[string]any{"values": v}
		}
		cases := []struct {
			name   string
			path   string
			body   any
			status int
			want   string
		}{
			{"unknown field", path, with(map[string]any{"fld_nope": "x"}), http.StatusBadRequest, "fld_nope"},
			{"required field missing", path, with(map[string]any{email: nil}), http.StatusBadRequest, email},
			{"required checkbox unticked", path, with(map[string]any{terms: false}), http.StatusBadRequest, terms},
			{"no values", path, map[string]any{}, http.StatusBadRequest, email},
			{"invalid email", path, with(map[string]any{email: "not an email"}), http.StatusBadRequest, email},
			{"number not a number", path, with(map[string]any{seats: "many"}), http.StatusBadRequest, seats},
			{"checkbox not a boolean", path, with(map[string]any{terms: "yes"}), http.StatusBadRequest, terms},
			{"date not a date", path, with(map[string]any{start: "next week"}), http.StatusBadRequest, start},
			{"text not a string", path, with(map[string]any{comp: []string{"a"}}), http.StatusBadRequest, comp},
			{"name too long for the contact", path, with(map[string]any{name: strings.Repeat("n", 300)}), http.StatusBadRequest, "firstName"},
			{"values not an object", path, map[string]any{"values": []string{"x"}}, http.StatusBadRequest, "values"},
			{"malformed JSON", path, `{"values": {`, http.StatusBadRequest, "JSON"},
			{"form of another account", "/api/v1/forms/" + foreign + "/submissions", map[string]any{"values": map[string]any{ff[0]: "x"}}, http.StatusForbidden, "another account"},
			{"unknown form", "/api/v1/forms/form_doesnotexist/submissions", with(nil), http.StatusNotFound, "form"},
			{"not a form id", "/api/v1/forms/" + contactID + "/submissions", with(nil), http.StatusNotFound, "form"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				msg := svc.API.Post(t, tc.path, acc.Key, tc.body).ExpectError(t, tc.status)
				if !strings.Contains(msg, tc.want) {
					t.Fatalf("message %q does not mention %q", msg, tc.want)
				}
			})
		}
		if c := contactByEmail(t, svc, acc.Key, "refused@example.com"); c != nil {
			t.Fatalf("a refused submission created a contact: %v", c)
		}
		if subs := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/forms/"+formID+"/submissions", "").Expect(t, http.StatusOK).List(t, "submissions"); len(subs) != 1 {
			t.Fatalf("refused submissions were recorded: %d", len(subs))
		}
		if subs := svc.Operator.Get(t, "/admin/v1/accounts/"+other.ID+"/forms/"+foreign+"/submissions", "").Expect(t, http.StatusOK).List(t, "submissions"); len(subs) != 0 {
			t.Fatalf("another account's form got submissions: %v", subs)
		}
		svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/forms/"+foreign+"/submissions", "").ExpectError(t, http.StatusForbidden)
	})
}

// The field mapping of integration-api.md section 2, row by row: each contactField lands on
// its contact field.
func TestFieldMapping(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		company := svc.NewCustomField(t, acc.ID, "Company")
		rows := []struct {
			name         string
			contactField string
			value        string
			want         map[string]any // contact members
		}{
			{"builtin:email", "builtin:email", "Mapped.Email@Example.com", map[string]any{"email": "Mapped.Email@Example.com"}},
			{"builtin:firstName", "builtin:firstName", "Ada", map[string]any{"firstName": "Ada", "lastName": ""}},
			{"builtin:lastName", "builtin:lastName", "Lovelace", map[string]any{"firstName": "", "lastName": "Lovelace"}},
			{"builtin:fullName, one word", "builtin:fullName", "Cher", map[string]any{"firstName": "Cher", "lastName": ""}},
			{"builtin:fullName, several words", "builtin:fullName", "  Ada King  Lovelace ", map[string]any{"firstName": "Ada", "lastName": "King  Lovelace"}},
			{"builtin:fullName, a tab", "builtin:fullName", "Jean\tClaude", map[string]any{"firstName": "Jean", "lastName": "Claude"}},
			{"builtin:fullName, a no-break space", "builtin:fullName", "Jean\u00a0Claude Van Damme", map[string]any{"firstName": "Jean", "lastName": "Claude Van Damme"}},
			{"builtin:phone", "builtin:phone", "+44 20 7946 0000", map[string]any{"phone": "+44 20 7946 0000"}},
			{"custom:{id}", "custom:" + company, "Analytical Engines Ltd", map[string]any{"customFields": map[string]any{company: "Analytical Engines Ltd"}}},
		}
		for i, row := range rows {
			t.Run(row.name, func(t *testing.T) {
				fields := []servicetest.Field{{"label": "Email", "type": "email", "contactField": "builtin:email"}}
				emailValue := "mapping" + string(rune('a'+i)) + "@example.com"
				if row.contactField == "builtin:email" {
					emailValue = row.value
				} else {
					fields = append(fields, servicetest.Field{"label": "Mapped", "type": "text", "contactField": row.contactField})
				}
				formID, ids := svc.NewForm(t, acc.ID, "Mapping "+row.name, nil, fields...)
				values := map[string]any{ids[0]: emailValue}
				if len(ids) > 1 {
					values[ids[1]] = row.value
				}
				sub := svc.API.Post(t, "/api/v1/forms/"+formID+"/submissions", acc.Key, map[string]any{"values": values}).Expect(t, http.StatusCreated).Object(t, "submission")
				c := svc.API.Get(t, "/api/v1/contacts/"+sub["contactId"].(string), acc.Key).Expect(t, http.StatusOK).Object(t, "contact")
				for k, want := range row.want {
					if wm, ok := want.(map[string]any); ok {
						got := c[k].(map[string]any)
						for id, v := range wm {
							if got[id] != v {
								t.Fatalf("contact %s[%s] = %v, want %v", k, id, got[id], v)
							}
						}
						continue
					}
					if c[k] != want {
						t.Fatalf("contact %s = %q, want %q (contact %v)", k, c[k], want, c)
					}
				}
			})
		}

		// Booking questions use the same mapping.
		eventTypeID, q := svc.NewEventType(t, acc.ID, "Mapping call", 15,
			servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email", "required": true},
			servicetest.Field{"label": "Name", "type": "text", "contactField": "builtin:fullName"},
			servicetest.Field{"label": "Phone", "type": "phone", "contactField": "builtin:phone"},
			servicetest.Field{"label": "Company", "type": "text", "contactField": "custom:" + company},
		)
		booking := svc.API.Post(t, "/api/v1/scheduling/"+eventTypeID+"/bookings", acc.Key, map[string]any{
			"startTime": futureSlot(0), "answers": map[string]any{q[0]: "booker@example.com", q[1]: "Alan Mathison Turing", q[2]: "+44 161", q[3]: "Bletchley"},
		}).Expect(t, http.StatusCreated).Object(t, "booking")
		c := svc.API.Get(t, "/api/v1/contacts/"+booking["contactId"].(string), acc.Key).Expect(t, http.StatusOK).Object(t, "contact")
		if c["email"] != "booker@example.com" || c["firstName"] != "Alan" || c["lastName"] != "Mathison Turing" || c["phone"] != "+44 161" ||
			c["customFields"].(map[string]any)[company] != "Bletchley" {
			t.Fatalf("contact from booking answers = %v", c)
		}
	})
}

// A submission resumed under its Idempotency-Key from the result an earlier release kept (its
// ids and position, but not yet its time) answers the submission as it is kept, not a zero time.
func TestSubmissionResumedFromAnOlderKeptResult(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		formID, f := svc.NewForm(t, acc.ID, "Signup", nil, servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email", "required": true})
		path := "/api/v1/forms/" + formID + "/submissions"
		body := map[string]any{"values": map[string]any{f[0]: "resumed@example.com"}}
		kept := svc.API.Post(t, path, acc.Key, body).Expect(t, http.StatusCreated).Object(t, "submission")
		head, err := svc.App.Store().Head(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		older, err := json.Marshal(map[string]any{"SubmissionID": kept["id"], "ContactID": kept["contactId"], "Position": head})
		if err != nil {
			t.Fatal(err)
		}
		// What the HTTP layer hands the commands when it resumes a request (httpapi.perform).
		idem := &commands.Idempotent{ID: "idem_resumed", Earlier: []commands.Outcome{{Command: "SubmitForm", Result: older}}}
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodPost, "http://api.localhost"+path, bytes.NewReader(raw)).
			WithContext(commands.WithIdempotency(context.Background(), idem))
		req.Header.Set("Authorization", "Bearer "+acc.Key)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		svc.App.APIHandler().ServeHTTP(rec, req)
		var answer struct {
			Submission map[string]any `json:"submission"`
		}
		if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &answer) != nil {
			t.Fatalf("resumed: %d %s", rec.Code, rec.Body)
		}
		for _, k := range []string{"id", "formId", "contactId", "submittedAt"} {
			if answer.Submission[k] != kept[k] {
				t.Errorf("%s: resumed %v, kept %v", k, answer.Submission[k], kept[k])
			}
		}
	})
}

// A number answered with "NaN", "Inf" or "-Infinity" (text a float parser takes, JSON has no
// such number) is a 400 naming the answer, as any other answer that is no number.
func TestANumberAnswerMustBeFinite(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		formID, f := svc.NewForm(t, acc.ID, "Seats", nil,
			servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"},
			servicetest.Field{"label": "Seats", "type": "number"},
		)
		for _, v := range []string{"NaN", "Inf", "-Infinity", "1e999"} {
			res := svc.API.Post(t, "/api/v1/forms/"+formID+"/submissions", acc.Key, map[string]any{"values": map[string]any{f[0]: "nan@example.com", f[1]: v}})
			res.ExpectError(t, http.StatusBadRequest)
			if res.Body["code"] != "invalid_request" || res.Body["param"] != "values."+f[1] {
				t.Errorf("number %q: %s, want invalid_request with param values.%s", v, res.Raw, f[1])
			}
		}
		callID, q := svc.NewEventType(t, acc.ID, "Call", 60,
			servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"},
			servicetest.Field{"label": "Team size", "type": "number"})
		start := time.Now().UTC().Add(30 * 24 * time.Hour).Truncate(time.Hour).Format(time.RFC3339)
		res := svc.API.Post(t, "/api/v1/scheduling/"+callID+"/bookings", acc.Key, map[string]any{"startTime": start, "answers": map[string]any{q[0]: "nanb@example.com", q[1]: "NaN"}})
		res.ExpectError(t, http.StatusBadRequest)
		if res.Body["param"] != "answers."+q[1] {
			t.Errorf("booking: %s, want param answers.%s", res.Raw, q[1])
		}
	})
}

// A field mapped to builtin:email must hold an email (decisions.md): a number or checkbox field
// never does, so such a mapping is refused when the form is defined.
func TestOnlyATextFieldMapsToTheEmail(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		for _, typ := range []string{"number", "checkbox"} {
			res := svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/forms", "", map[string]any{"name": "N " + typ, "fields": []any{
				map[string]any{"label": "Email", "type": "email"},
				map[string]any{"label": "Ticket", "type": typ, "contactField": "builtin:email"}}})
			res.ExpectError(t, http.StatusBadRequest)
			if res.Body["param"] != "fields[1].contactField" {
				t.Errorf("a %s field mapped to builtin:email: %s, want param fields[1].contactField", typ, res.Raw)
			}
		}
	})
}

// An answer too long for the contact field it fills is refused naming the answer
// (values.<fieldId>), the member the request has, not the contact's field.
func TestAMappedAnswerTooLongNamesTheAnswer(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		formID, f := svc.NewForm(t, acc.ID, "Signup", nil,
			servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email", "required": true},
			servicetest.Field{"label": "Name", "type": "text", "contactField": "builtin:fullName"},
			servicetest.Field{"label": "Phone", "type": "phone", "contactField": "builtin:phone"},
		)
		path := "/api/v1/forms/" + formID + "/submissions"
		for _, c := range []struct {
			field, value string
		}{{f[2], strings.Repeat("1", 60)}, {f[1], strings.Repeat("n", 300)}, {f[1], "Ada " + strings.Repeat("n", 300)}} {
			res := svc.API.Post(t, path, acc.Key, map[string]any{"values": map[string]any{f[0]: "p@example.com", c.field: c.value}})
			res.ExpectError(t, http.StatusBadRequest)
			if res.Body["param"] != "values."+c.field {
				t.Errorf("%.20s…: %s, want param values.%s", c.value, res.Raw, c.field)
			}
		}
		callID, q := svc.NewEventType(t, acc.ID, "Call", 60,
			servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"},
			servicetest.Field{"label": "Phone", "type": "phone", "contactField": "builtin:phone"})
		start := time.Now().UTC().Add(30 * 24 * time.Hour).Truncate(time.Hour).Format(time.RFC3339)
		res := svc.API.Post(t, "/api/v1/scheduling/"+callID+"/bookings", acc.Key, map[string]any{"startTime": start, "answers": map[string]any{q[0]: "b@example.com", q[1]: strings.Repeat("1", 60)}})
		res.ExpectError(t, http.StatusBadRequest)
		if res.Body["param"] != "answers."+q[1] {
			t.Errorf("booking: %s, want param answers.%s", res.Raw, q[1])
		}
	})
}
