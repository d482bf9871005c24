package api_test

import (
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// A cursor that no page of a list handed out (JSON null, another list's cursor, a cursor with a
// member missing) is a 400 invalid_request naming its parameter, never read as the start of the
// list or some page of it (paging.ErrBadCursor, decisions.md "Lists").
func TestListsRefuseCursorsTheyDidNotHandOut(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		admin := "/admin/v1/accounts/" + acc.ID
		hook := webhookFor(t, svc, acc.ID, sink(t))
		_, feedCursor := feedPage(t, svc, acc.Key, "") // {"p":N}
		enc := func(json string) string { return base64.RawURLEncoding.EncodeToString([]byte(json)) }
		null, deliveryCursor := enc(`null`), enc(`{"c":1,"i":"x"}`) // the self-service delivery log's shape

		for _, c := range []struct {
			path, param string
			operator    bool
		}{
			{"/api/v1/events?after=" + null, "after", false},
			{"/api/v1/events?after=" + deliveryCursor, "after", false},
			{"/api/v1/events?cursor=" + null, "cursor", false},
			{"/api/v1/events?after=" + enc(`{}`), "after", false},
			{"/api/v1/events?after=" + enc(`{"p":null}`), "after", false},
			{"/api/v1/webhooks/subscriptions/" + hook + "/deliveries?cursor=" + null, "cursor", false},
			{"/api/v1/webhooks/subscriptions/" + hook + "/deliveries?cursor=" + feedCursor, "cursor", false},
			{"/api/v1/webhooks/subscriptions/" + hook + "/deliveries?cursor=" + enc(`{"c":1}`), "cursor", false},
			{"/api/v1/webhooks/subscriptions?cursor=" + null, "cursor", false},
			{"/api/v1/contacts?cursor=" + null, "cursor", false},
			{"/api/v1/contacts?cursor=" + feedCursor, "cursor", false},
			{"/api/v1/tags?cursor=" + enc(`{"o":1,"n":"a"}`), "cursor", false},
			{"/api/v1/tags?cursor=" + cursorOf("/api/v1/tags", acc.ID, `{"o":1,"n":"a"}`), "cursor", false}, // named, a member missing
			{"/api/v1/tags?cursor=" + cursorOf("/api/v1/tags", acc.ID, `null`), "cursor", false},
			{"/api/v1/tags?cursor=" + null, "cursor", false},
			{admin + "/webhook-deliveries?cursor=" + feedCursor, "cursor", true},
			{admin + "/webhook-deliveries?cursor=" + null, "cursor", true},
			{admin + "/api-keys?cursor=" + feedCursor, "cursor", true},
		} {
			var res servicetest.Response
			if c.operator {
				res = svc.Operator.Get(t, c.path, "")
			} else {
				res = svc.API.Get(t, c.path, acc.Key)
			}
			if res.Status != http.StatusBadRequest || res.Body["code"] != "invalid_request" || res.Body["param"] != c.param {
				t.Errorf("GET %s: %d %s, want 400 invalid_request naming %s", c.path, res.Status, res.Raw, c.param)
			}
		}
		// The cursors the lists hand out still read.
		feedPage(t, svc, acc.Key, "?after="+feedCursor)
		svc.API.Get(t, "/api/v1/events?cursor="+feedCursor, acc.Key).Expect(t, http.StatusOK)
	})
}

// Many lists page by a bare position (contacts, customers, leads, CRMs, forms, event types,
// stages): cursors of one shape, which each of them would read as a page of its own, silently
// skipping rows. A cursor names its list (its path), and no other list takes it, the same list
// of another parent included; a cursor handed out before cursors named their lists (a bare
// position) is refused too, so that a client paging across the deploy starts again rather than
// reads a wrong page (integration-api.md "Lists").
func TestListsRefuseAnotherListsCursorOfTheSameShape(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		crm := svc.NewCRM(t, acc.ID, "Sales", "New", "Won")
		other := svc.NewCRM(t, acc.ID, "Support", "Open", "Closed")
		for _, email := range []string{"c1@example.com", "c2@example.com"} {
			svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": email}).Expect(t, http.StatusOK)
		}
		nextOf := func(path string) string {
			t.Helper()
			res := svc.API.Get(t, path, acc.Key).Expect(t, http.StatusOK)
			c, ok := res.Body["nextCursor"].(string)
			if !ok {
				t.Fatalf("GET %s handed out no cursor: %s", path, res.Raw)
			}
			return c
		}
		contacts := nextOf("/api/v1/contacts?limit=1")
		crms := nextOf("/api/v1/crms?limit=1")
		stages := nextOf("/api/v1/crms/" + crm.ID + "/stages?limit=1")
		bare := base64.RawURLEncoding.EncodeToString([]byte(`1`)) // a position, as cursors were
		for _, path := range []string{
			"/api/v1/customers?cursor=" + contacts,
			"/api/v1/crms/" + crm.ID + "/leads?cursor=" + contacts,
			"/api/v1/forms?cursor=" + crms,
			"/api/v1/scheduling/event-types?cursor=" + stages,
			"/api/v1/contacts?cursor=" + crms,
			"/api/v1/crms/" + other.ID + "/stages?cursor=" + stages,
			"/api/v1/contacts?cursor=" + bare,
			"/api/v1/crms?cursor=" + bare,
		} {
			res := svc.API.Get(t, path, acc.Key)
			if res.Status != http.StatusBadRequest || res.Body["code"] != "invalid_request" || res.Body["param"] != "cursor" {
				t.Errorf("GET %s (a cursor this list did not hand out): %d %s, want 400 invalid_request naming cursor", path, res.Status, res.Raw)
			}
		}
		// Each list still reads its own: the next page is the rest of the list.
		if list := svc.API.Get(t, "/api/v1/contacts?cursor="+contacts, acc.Key).Expect(t, http.StatusOK).List(t, "contacts"); len(list) != 1 {
			t.Errorf("the second page of contacts = %v, want the one other contact", list)
		}
		if list := svc.API.Get(t, "/api/v1/crms/"+crm.ID+"/stages?cursor="+stages, acc.Key).Expect(t, http.StatusOK).List(t, "stages"); len(list) != 1 {
			t.Errorf("the second page of stages = %v, want Won", list)
		}
		svc.API.Get(t, "/api/v1/crms?cursor="+crms, acc.Key).Expect(t, http.StatusOK)
	})
}

// cursorOf is the cursor the list at path would hand out to accountID for the sort key key
// (JSON), its name and key as paging.NameCursor writes them: a test of what a list does with a
// key it reads.
func cursorOf(path, accountID, key string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(`{"list":"` + httpapi.ListName(path, accountID, nil) + `","key":` + key + `}`))
}

// A list is chosen by more than its path: the account a key acts for (the integration API's
// paths do not name it), and the query (a history's entity and order, a filter). A cursor of
// another contact's history, of the other order, or of another account's contacts was read as
// a page of this list, and silently skipped its rows.
func TestACursorBelongsToItsAccountAndQuery(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc, other := svc.NewAccount(t), svc.NewAccount(t)
		ids := map[string]string{}
		for _, email := range []string{"a@example.com", "b@example.com"} {
			ids[email] = svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": email}).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
			svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": email, "firstName": "Later"}).Expect(t, http.StatusOK)
			svc.API.Post(t, "/api/v1/contacts", other.Key, map[string]any{"email": email}).Expect(t, http.StatusOK)
		}
		history := "/admin/v1/accounts/" + acc.ID + "/history?limit=1&contactId="
		b := svc.Operator.Get(t, history+ids["b@example.com"], "").Expect(t, http.StatusOK).Body["nextCursor"].(string)
		contacts := svc.API.Get(t, "/api/v1/contacts?limit=1", acc.Key).Expect(t, http.StatusOK).Body["nextCursor"].(string)
		for _, c := range []struct {
			client *servicetest.Client
			path   string
			token  string
		}{
			{svc.Operator, history + ids["a@example.com"] + "&cursor=" + b, ""},
			{svc.Operator, history + ids["b@example.com"] + "&order=newest&cursor=" + b, ""},
			{svc.API, "/api/v1/contacts?limit=1&cursor=" + contacts, other.Key},
		} {
			res := c.client.Do(t, servicetest.Request{Method: http.MethodGet, Path: c.path, Token: c.token})
			if res.Status != http.StatusBadRequest || res.Body["param"] != "cursor" {
				t.Errorf("GET %s: %d %s, want 400 naming cursor", c.path, res.Status, res.Raw)
			}
		}
		// With its own query, each reads on: B's history from its second event, the rest of the
		// account's contacts.
		if events := svc.Operator.Get(t, history+ids["b@example.com"]+"&cursor="+b, "").Expect(t, http.StatusOK).List(t, "events"); len(events) != 1 {
			t.Errorf("B's history after its first event = %v, want one event", events)
		}
		svc.API.Get(t, "/api/v1/contacts?limit=1&cursor="+contacts, acc.Key).Expect(t, http.StatusOK)
	})
}
