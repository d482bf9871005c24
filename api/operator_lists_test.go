package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// Every operator list pages like the integration API's (decisions.md "Lists"): limit (default 50,
// at most 200, clamped above; 0, negative or not an integer: 400) and cursor, the nextCursor of
// the previous page, absent on the last one. The GET routes are walked, so that a new list cannot
// escape: an answer with a list in it is a list. The history, which names its entity in the
// query, pages too, oldest first.
func TestOperatorListsPageLikeTheIntegrationAPI(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		admin := "/admin/v1/accounts/" + acc.ID
		// Two of everything the operator lists.
		svc.NewKey(t, acc.ID, nil)
		crm := svc.NewCRM(t, acc.ID, "Sales", "New")
		svc.NewCRM(t, acc.ID, "Support", "New")
		form, fields := svc.NewForm(t, acc.ID, "Signup", nil, servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"})
		svc.NewForm(t, acc.ID, "Survey", nil, servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"})
		eventType, questions := svc.NewEventType(t, acc.ID, "Call", 30, servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"})
		svc.NewEventType(t, acc.ID, "Demo", 30)
		product := svc.NewProduct(t, acc.ID, simpleProduct("Book"))
		svc.NewProduct(t, acc.ID, simpleProduct("Course"))
		for i, kind := range []string{"zapier", "zapier"} {
			svc.Operator.Post(t, admin+"/webhooks", "", map[string]any{"url": sink(t) + fmt.Sprint("/", i), "events": []string{"form.submitted"}, "kind": kind}).Expect(t, http.StatusCreated)
		}
		for i, name := range []string{"Company", "Plan"} {
			svc.NewCustomField(t, acc.ID, name)
			svc.NewTag(t, acc.ID, name)
			email := fmt.Sprintf("list-%d@example.com", i)
			svc.API.Post(t, "/api/v1/crms/"+crm.ID+"/leads", acc.Key, map[string]any{"contactEmail": email}).Expect(t, http.StatusCreated)
			svc.API.Post(t, "/api/v1/forms/"+form+"/submissions", acc.Key, map[string]any{"values": map[string]any{fields[0]: email}}).Expect(t, http.StatusCreated)
			svc.API.Post(t, "/api/v1/scheduling/"+eventType+"/bookings", acc.Key, map[string]any{"startTime": futureSlot(200 + i), "answers": map[string]any{questions[0]: email}}).Expect(t, http.StatusCreated)
		}
		contact := contactByEmail(t, svc, acc.Key, "list-0@example.com")["id"].(string)

		ids := map[string]string{"accountId": acc.ID, "crmId": crm.ID, "formId": form, "eventTypeId": eventType, "productId": product.ID, "contactId": contact}
		queries := map[string]string{"/admin/v1/accounts/{accountId}/history": "contactId=" + contact}
		var paths []string
		for _, route := range operatorRoutes(t, svc) {
			if route.method != http.MethodGet {
				continue
			}
			path := pathVariable.ReplaceAllStringFunc(route.template, func(v string) string {
				id, ok := ids[v[1:len(v)-1]]
				if !ok {
					t.Errorf("%s names %s: add one to this test", route.template, v)
				}
				return id
			})
			paths = append(paths, path+"?"+queries[route.template])
		}

		var lists []string
		for _, path := range paths {
			member, all := listIn(t, svc.Operator.Get(t, path+"&limit=200", "").Expect(t, http.StatusOK))
			if member == "" {
				continue // one resource, not a list
			}
			lists = append(lists, member)
			if len(all) < 2 {
				t.Errorf("%s lists %d %s: give this test two of them", path, len(all), member)
				continue
			}
			// A page at a time, following nextCursor: the same items, in the same order.
			var paged []any
			for cursor, pages := "", 0; ; pages++ {
				res := svc.Operator.Get(t, path+"&limit=1&cursor="+url.QueryEscape(cursor), "").Expect(t, http.StatusOK)
				_, page := listIn(t, res)
				if len(page) != 1 || pages > len(all) {
					t.Fatalf("%s, page %d of limit=1: %d %s", path, pages, len(page), member)
				}
				paged = append(paged, identity(page[0]))
				next, more := res.Body["nextCursor"].(string)
				if !more {
					break
				}
				cursor = next
			}
			var want []any
			for _, item := range all {
				want = append(want, identity(item))
			}
			if fmt.Sprint(paged) != fmt.Sprint(want) {
				t.Errorf("%s by pages of one: %v, want %v", path, paged, want)
			}
			if _, clamped := listIn(t, svc.Operator.Get(t, path+"&limit=100000", "").Expect(t, http.StatusOK)); len(clamped) != len(all) {
				t.Errorf("%s?limit=100000: %d %s, want %d", path, len(clamped), member, len(all))
			}
			for _, bad := range []string{"0", "-1", "abc", "1.5", ""} {
				if msg := svc.Operator.Get(t, path+"&limit="+bad, "").ExpectError(t, http.StatusBadRequest); !strings.Contains(msg, "limit") {
					t.Errorf("%s?limit=%s: %q", path, bad, msg)
				}
			}
			svc.Operator.Get(t, path+"&cursor=not-a-cursor", "").ExpectError(t, http.StatusBadRequest)
		}
		slices.Sort(lists)
		want := []string{"accounts", "apiKeys", "bookings", "contacts", "crms", "customFields", "deliveries", "eventTypes", "events", "forms", "leads", "products", "submissions", "tags", "webhooks"}
		if !slices.Equal(lists, want) {
			t.Errorf("lists walked: %v, want at least %v", lists, want)
		}
	})
}

// A long history pages by 50 by default and by 200 at most, oldest first, the cursor standing for
// the position of the page's last event: no answer holds thousands of events.
func TestOperatorHistoryOfALongStreamPages(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		contact := upsert(t, svc, acc.Key, map[string]any{"email": "long@example.com"}).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
		appendTagEvents(t, svc, acc.ID, contact, 449)
		path := "/admin/v1/accounts/" + acc.ID + "/history?contactId=" + contact

		first := svc.Operator.Get(t, path, "").Expect(t, http.StatusOK)
		if _, events := listIn(t, first); len(events) != 50 || first.Body["nextCursor"] == nil {
			t.Fatalf("default page: %d events, nextCursor %v", len(events), first.Body["nextCursor"])
		}
		var positions []float64
		pages := 0
		for cursor := ""; ; {
			res := svc.Operator.Get(t, path+"&limit=1000&cursor="+url.QueryEscape(cursor), "").Expect(t, http.StatusOK)
			pages++
			_, events := listIn(t, res)
			if len(events) > 200 {
				t.Fatalf("a page of %d events", len(events))
			}
			for _, e := range events {
				positions = append(positions, e["position"].(float64))
			}
			next, more := res.Body["nextCursor"].(string)
			if !more {
				break
			}
			cursor = next
		}
		if len(positions) != 450 || pages != 3 {
			t.Fatalf("%d events in %d pages", len(positions), pages)
		}
		for i := 1; i < len(positions); i++ {
			if positions[i] <= positions[i-1] {
				t.Fatalf("event %d at position %v after %v: not oldest first, or twice", i, positions[i], positions[i-1])
			}
		}

		// Newest first: the same events backwards, a page going on below the previous one.
		var backwards []float64
		for cursor := ""; ; {
			res := svc.Operator.Get(t, path+"&order=newest&limit=200&cursor="+url.QueryEscape(cursor), "").Expect(t, http.StatusOK)
			_, events := listIn(t, res)
			for _, e := range events {
				backwards = append(backwards, e["position"].(float64))
			}
			next, more := res.Body["nextCursor"].(string)
			if !more {
				break
			}
			cursor = next
		}
		slices.Reverse(backwards)
		if !slices.Equal(backwards, positions) {
			t.Errorf("newest first, reversed: %d events, want the %d of oldest first in the same order", len(backwards), len(positions))
		}
		svc.Operator.Get(t, path+"&order=sideways", "").ExpectError(t, http.StatusBadRequest)
	})
}

// appendTagEvents records n more events on a contact's stream, straight in the log (as n tag
// changes would), and waits for the read models.
func appendTagEvents(t *testing.T, svc *servicetest.Service, accountID, contactID string, n int) {
	t.Helper()
	events := make([]domain.Event, n)
	for i := range events {
		events[i] = domain.TagApplied{ContactID: contactID, TagID: fmt.Sprintf("tag_long%d", i), TagName: "Long"}
	}
	pos, err := svc.App.Store().Append(t.Context(), domain.Metadata{AccountID: accountID, Actor: "test"},
		domain.StreamAppend{StreamID: contactID, ExpectedVersion: domain.AnyVersion, Events: events})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.App.ReadModels().WaitReadModels(t.Context(), pos); err != nil {
		t.Fatal(err)
	}
}

// listIn returns the member of a list answer that holds the list, and its items ("" when the
// answer holds no list).
func listIn(t *testing.T, res servicetest.Response) (string, []map[string]any) {
	t.Helper()
	for member, v := range res.Body {
		if _, ok := v.([]any); ok {
			return member, res.List(t, member)
		}
	}
	return "", nil
}

// identity is what tells the items of a list apart: an id, or a history event's position.
func identity(item map[string]any) any {
	if id, ok := item["id"]; ok {
		return id
	}
	return item["position"]
}
