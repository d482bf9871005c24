package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// feedPage reads one page of the event feed.
func feedPage(t *testing.T, svc *servicetest.Service, key, query string) ([]map[string]any, string) {
	t.Helper()
	res := svc.API.Get(t, "/api/v1/events"+query, key).Expect(t, http.StatusOK)
	next, ok := res.Body["nextCursor"].(string)
	if !ok || next == "" {
		t.Fatalf("GET /api/v1/events%s has no nextCursor: %s", query, res.Raw)
	}
	return res.List(t, "events"), next
}

// idsOf lists the envelope ids of a page.
func envelopeIDs(events []map[string]any) []string {
	ids := make([]string, len(events))
	for i, e := range events {
		ids[i] = e["id"].(string)
	}
	return ids
}

func TestEventFeedIsWhatWebhooksDeliver(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		rcv := newRecorder(t)
		webhookFor(t, svc, acc.ID, rcv.URL) // checkout.purchased only

		form, fields := svc.NewForm(t, acc.ID, "Signup", nil, servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"})
		svc.API.Post(t, "/api/v1/forms/"+form+"/submissions", acc.Key, map[string]any{"values": map[string]any{fields[0]: "form@example.com"}}).Expect(t, http.StatusCreated)
		first := buyDirect(t, svc, purchaseOf(acc.ID, pro, 1, "ada@example.com", "Ada"))
		second := buyDirect(t, svc, purchaseOf(acc.ID, pro, 0, "bob@example.com", "Bob"))
		otherPro := svc.NewProduct(t, other.ID, proPlan())
		theirs := buyDirect(t, svc, purchaseOf(other.ID, otherPro, 0, "theirs@example.com", ""))

		delivered := rcv.waitFor(t, 2)
		events, _ := feedPage(t, svc, acc.Key, "")
		if len(events) != 3 || events[0]["type"] != "form.submitted" || events[1]["type"] != "checkout.purchased" || events[2]["type"] != "checkout.purchased" {
			t.Fatalf("feed = %v, want the submission (no subscription matched it) and both purchases, oldest first", events)
		}
		// The envelopes are those the webhooks carried: the same id, type, createdAt and data,
		// the activation token included for a key that may read checkout data.
		for _, d := range delivered {
			var found map[string]any
			for _, e := range events {
				if e["id"] == d.id {
					found = e
				}
			}
			raw, _ := json.Marshal(found)
			if !reflect.DeepEqual(decoded(t, raw), decoded(t, d.body)) {
				t.Fatalf("feed envelope %s\nwebhook body    %s", raw, d.body)
			}
		}
		if !strings.Contains(string(mustJSON(t, events)), first.ActivationToken) || !strings.Contains(string(mustJSON(t, events)), second.ActivationToken) {
			t.Fatal("the feed hides the activation tokens from a key with checkout:read")
		}

		// Without checkout:read the token reads [redacted], and appears nowhere in the answer.
		eventsOnly := svc.NewKey(t, acc.ID, []string{"events:read"})
		res := svc.API.Get(t, "/api/v1/events", eventsOnly).Expect(t, http.StatusOK)
		if strings.Contains(string(res.Raw), first.ActivationToken) || strings.Contains(string(res.Raw), second.ActivationToken) {
			t.Fatalf("a key without checkout:read reads a token: %s", res.Raw)
		}
		redacted := res.List(t, "events")[1]["data"].(map[string]any)["activation"].(map[string]any)
		if redacted["token"] != "[redacted]" {
			t.Fatalf("activation = %v", redacted)
		}

		// types filters, with checkout.paid for checkout.purchased.
		paid, _ := feedPage(t, svc, acc.Key, "?types=checkout.paid")
		if got := envelopeIDs(paid); len(got) != 2 || got[0] != events[1]["id"] || got[1] != events[2]["id"] {
			t.Fatalf("types=checkout.paid = %v", got)
		}
		forms, _ := feedPage(t, svc, acc.Key, "?types="+url.QueryEscape("form.submitted,checkout.refunded"))
		if len(forms) != 1 || forms[0]["id"] != events[0]["id"] {
			t.Fatalf("types=form.submitted,checkout.refunded = %v", forms)
		}

		// Another account's events are not in the feed, and this account's not in theirs.
		theirFeed, _ := feedPage(t, svc, other.Key, "")
		if len(theirFeed) != 1 || theirFeed[0]["data"].(map[string]any)["transaction"].(map[string]any)["id"] != theirs.TransactionID {
			t.Fatalf("the other account's feed = %v", theirFeed)
		}

		// Scopes and bad input.
		svc.API.Get(t, "/api/v1/events", svc.NewKey(t, acc.ID, []string{"checkout:read", "webhooks:write"})).ExpectError(t, http.StatusForbidden)
		for _, q := range []string{"?types=checkout.bogus", "?types=", "?types=form.submitted,nope", "?after=bogus", "?after=eyJwIjoieCJ9", "?limit=0", "?limit=x"} {
			svc.API.Get(t, "/api/v1/events"+q, acc.Key).ExpectError(t, http.StatusBadRequest)
		}
	})
}

func TestEventFeedPagesWhileWritesGoOn(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		var want []string
		buy := func(n int) {
			for range n {
				res := buyDirect(t, svc, purchaseOf(acc.ID, pro, 0, "buyer@example.com", ""))
				want = append(want, res.TransactionID)
			}
		}
		transactionOf := func(e map[string]any) string {
			return e["data"].(map[string]any)["transaction"].(map[string]any)["id"].(string)
		}
		// An empty feed has a cursor too, which then returns what comes after.
		none, cursor := feedPage(t, svc, acc.Key, "")
		if len(none) != 0 {
			t.Fatalf("a new account's feed = %v", none)
		}
		buy(5)
		var got []string
		for round := 0; round < 20; round++ {
			page, next := feedPage(t, svc, acc.Key, "?limit=2&after="+cursor)
			for _, e := range page {
				got = append(got, transactionOf(e))
			}
			cursor = next
			if round < 3 {
				buy(1) // writes go on between the pages
			}
			if len(page) == 0 && round >= 3 {
				break
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("paged through %v, want every purchase once, in order: %v", got, want)
		}
		// Polling at the end returns nothing, and the same cursor, until something happens.
		empty, again := feedPage(t, svc, acc.Key, "?after="+cursor)
		if len(empty) != 0 || again != cursor {
			t.Fatalf("a poll at the end = %v, cursor %q (was %q)", empty, again, cursor)
		}
		buy(1)
		last, _ := feedPage(t, svc, acc.Key, "?after="+cursor)
		if len(last) != 1 || transactionOf(last[0]) != want[len(want)-1] {
			t.Fatalf("the poll after a purchase = %v", last)
		}
	})
}

// A bad limit or cursor of the feed is a 400 invalid_request whose param names the query
// parameter at fault (decisions.md "Error codes"), as every other list's does: limit, and the
// cursor's parameter as it was sent, after or the cursor every list takes.
func TestEventFeedErrorsNameTheParameterAtFault(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		// The convention of every other list:
		if p := svc.API.Get(t, "/api/v1/webhooks/subscriptions?limit=0", acc.Key).Expect(t, http.StatusBadRequest).Body["param"]; p != "limit" {
			t.Fatalf("subscriptions ?limit=0 param = %v", p)
		}
		for _, c := range []struct{ query, param string }{
			{"?limit=0", "limit"}, {"?limit=-3", "limit"}, {"?limit=abc", "limit"}, {"?after=bogus", "after"},
			{"?cursor=bogus", "cursor"}, {"?after=bogus&cursor=bogus", "after"}, {"?after=&cursor=bogus", "cursor"},
			{"?after=eyJwIjoieCJ9" /* {"p":"x"} */, "after"},
		} {
			res := svc.API.Get(t, "/api/v1/events"+c.query, acc.Key).Expect(t, http.StatusBadRequest)
			if res.Body["param"] != c.param || res.Body["code"] != "invalid_request" {
				t.Errorf("GET /api/v1/events%s -> %s, want invalid_request with param %q", c.query, res.Raw, c.param)
			}
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
