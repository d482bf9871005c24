package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// An email with an invisible or direction-changing character looks like another contact's email
// (ada@example.com with a zero-width space inside it) or reads otherwise than it is (U+202E). It
// is refused with 400 naming the member, wherever an email enters, and nothing is recorded. The
// email filters of lists and the history match exactly: such an email finds nothing but what
// holds those very characters.
func TestEmailsWithInvisibleOrBidiCharactersAreRefusedEverywhere(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		upsert(t, svc, acc.Key, map[string]any{"email": "ada@example.com"}).Expect(t, http.StatusOK)
		svc.NewTag(t, acc.ID, "VIP")
		crm := svc.NewCRM(t, acc.ID, "Sales", "New")
		form, fields := svc.NewForm(t, acc.ID, "Signup", nil, servicetest.Field{"label": "Email", "type": "text", "contactField": "builtin:email"})
		calendar, questions := svc.NewEventType(t, acc.ID, "Call", 30, servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"})
		product := svc.NewProduct(t, acc.ID, simpleProduct("Book"))
		historyBefore := len(history(t, svc, acc.ID, contactByEmail(t, svc, acc.Key, "ada@example.com")["id"].(string)))

		for i, r := range []rune{'\u200B', '\u202E', '\u2066', '\uFEFF', '\u00AD', '\u2060', '\u061C', '\uFE0F', '\U000E0041', '\u00A0'} {
			email := "ada" + string(r) + "@example.com"
			want := func(member string) string {
				return fmt.Sprintf("%s must not contain invisible or direction-changing characters (%U)", member, r)
			}
			for _, c := range []struct {
				client *servicetest.Client
				path   string
				token  string
				body   map[string]any
				member string
			}{
				{svc.API, "/api/v1/contacts", acc.Key, map[string]any{"email": email}, "email"},
				{svc.API, "/api/v1/contacts/tags", acc.Key, map[string]any{"email": email, "tagNames": []string{"VIP"}, "action": "add"}, "email"},
				{svc.API, "/api/v1/crms/" + crm.ID + "/leads", acc.Key, map[string]any{"contactEmail": email}, "contactEmail"},
				{svc.API, "/api/v1/forms/" + form + "/submissions", acc.Key, map[string]any{"values": map[string]any{fields[0]: email}}, "values." + fields[0]},
				{svc.API, "/api/v1/scheduling/" + calendar + "/bookings", acc.Key, map[string]any{"startTime": futureSlot(100 + i), "answers": map[string]any{questions[0]: email}}, "answers." + questions[0]},
				{svc.Operator, "/admin/v1/accounts/" + acc.ID + "/checkout/purchases", "", map[string]any{"productId": product.ID, "pricingTierId": product.TierIDs[0], "email": email}, "email"},
			} {
				if got := c.client.Post(t, c.path, c.token, c.body).ExpectError(t, http.StatusBadRequest); got != want(c.member) {
					t.Errorf("POST %s with %+q: %q, want %q", c.path, email, got, want(c.member))
				}
			}
			// The filters match exactly: the look-alike finds neither ada@example.com nor anything else.
			if list := svc.API.Get(t, "/api/v1/contacts?email="+url.QueryEscape(email), acc.Key).Expect(t, http.StatusOK).List(t, "contacts"); len(list) != 0 {
				t.Errorf("contacts?email=%+q found %v", email, list)
			}
			if list := svc.API.Get(t, "/api/v1/customers?email="+url.QueryEscape(email), acc.Key).Expect(t, http.StatusOK).List(t, "customers"); len(list) != 0 {
				t.Errorf("customers?email=%+q found %v", email, list)
			}
			svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/history?email="+url.QueryEscape(email), "").ExpectError(t, http.StatusNotFound)
		}

		// Nothing was recorded: one contact, unchanged, no lead, no submission, no booking, no customer.
		if list := svc.API.Get(t, "/api/v1/contacts", acc.Key).Expect(t, http.StatusOK).List(t, "contacts"); len(list) != 1 || list[0]["email"] != "ada@example.com" {
			t.Fatalf("contacts = %v", list)
		}
		if n := len(history(t, svc, acc.ID, contactByEmail(t, svc, acc.Key, "ada@example.com")["id"].(string))); n != historyBefore {
			t.Fatalf("the history of ada@example.com grew from %d to %d events", historyBefore, n)
		}
		if list := leadsOf(t, svc, acc.ID, crm.ID, ""); len(list) != 0 {
			t.Fatalf("leads = %v", list)
		}
		if list := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/forms/"+form+"/submissions", "").Expect(t, http.StatusOK).List(t, "submissions"); len(list) != 0 {
			t.Fatalf("submissions = %v", list)
		}
		if list := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/event-types/"+calendar+"/bookings", "").Expect(t, http.StatusOK).List(t, "bookings"); len(list) != 0 {
			t.Fatalf("bookings = %v", list)
		}
		if list := svc.API.Get(t, "/api/v1/customers", acc.Key).Expect(t, http.StatusOK).List(t, "customers"); len(list) != 0 {
			t.Fatalf("customers = %v", list)
		}
	})
}
