package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// pageSizes are the limits a client pages with: below, at and past the sizes a list's statement
// reads (sqldb.TextLimit reads up to the next of a few sizes and keeps the page's own).
var pageSizes = []int{1, 2, 4, 5, 6, 9, 10, 11, 13, 14, 25, 199, 200}

// A list read with any limit gives pages of exactly that many (the last one fewer), and paging
// to the end gives every row once, in the list's order: contacts (newest first), tags (by name),
// the operator's delivery log (in the events' order) and the event feed, whose statements read
// more rows than a page holds.
func TestEveryPageSizeGivesEveryRowOnceInOrder(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		hook := webhookFor(t, svc, acc.ID, newRecorder(t).URL)
		const n = 13
		for i := range n {
			upsert(t, svc, acc.Key, map[string]any{"email": fmt.Sprintf("size%02d@example.com", i)}).Expect(t, http.StatusOK)
			svc.NewTag(t, acc.ID, fmt.Sprintf("Size %02d", n-i))
			buyDirect(t, svc, purchaseOf(acc.ID, pro, 0, "buyer@example.com", ""))
		}
		idOf := func(row map[string]any) string { return row["id"].(string) }
		get := func(path string) servicetest.Response {
			if strings.HasPrefix(path, "/admin/") {
				return svc.Operator.Get(t, path, "").Expect(t, http.StatusOK)
			}
			return svc.API.Get(t, path, acc.Key).Expect(t, http.StatusOK)
		}
		deliveries := "/admin/v1/accounts/" + acc.ID + "/webhook-deliveries?webhookId=" + hook
		for range 200 { // the outbox is written by a relayed projection
			if len(get(deliveries+"&limit=200").List(t, "deliveries")) >= n {
				break
			}
			time.Sleep(25 * time.Millisecond)
		}
		for _, list := range []struct{ path, key string }{
			{"/api/v1/contacts?", "contacts"}, {"/api/v1/tags?", "tags"}, {deliveries + "&", "deliveries"},
		} {
			var want []string
			for _, row := range get(list.path+"limit=200").List(t, list.key) {
				want = append(want, idOf(row))
			}
			if len(want) < n { // the contacts hold the buyer too
				t.Fatalf("%s holds %d rows, want %d or more", list.path, len(want), n)
			}
			for _, size := range pageSizes {
				var got []string
				query := fmt.Sprintf("limit=%d", size)
				for pages := 0; ; pages++ {
					res := get(list.path + query)
					rows := res.List(t, list.key)
					for _, row := range rows {
						got = append(got, idOf(row))
					}
					next, more := res.Body["nextCursor"].(string)
					if more && len(rows) != size || !more && len(rows) > size || pages > len(want) {
						t.Fatalf("%s with limit %d: a page of %d rows, next cursor %q", list.path, size, len(rows), next)
					}
					if !more {
						break
					}
					query = fmt.Sprintf("limit=%d&cursor=%s", size, url.QueryEscape(next))
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s paged with limit %d: %v, want %v", list.path, size, got, want)
				}
			}
		}

		// The feed's cursor is always set; its end is a page with nothing.
		transactionOf := func(e map[string]any) string {
			return e["data"].(map[string]any)["transaction"].(map[string]any)["id"].(string)
		}
		var want []string
		for _, e := range feedPageWithin(t, svc, acc.Key, "?types=checkout.purchased&limit=200", n) {
			want = append(want, transactionOf(e))
		}
		for _, size := range pageSizes {
			var got []string
			cursor := ""
			for pages := 0; ; pages++ {
				events, next := feedPage(t, svc, acc.Key, fmt.Sprintf("?types=checkout.purchased&limit=%d&after=%s", size, url.QueryEscape(cursor)))
				if len(events) > size || pages > n {
					t.Fatalf("the feed with limit %d: a page of %d events", size, len(events))
				}
				if len(events) == 0 {
					break
				}
				for _, e := range events {
					got = append(got, transactionOf(e))
				}
				cursor = next
			}
			if !slices.Equal(got, want) {
				t.Fatalf("the feed paged with limit %d: %v, want %v", size, got, want)
			}
		}
	})
}

// feedPageWithin reads a page of the feed until it holds n events: the feed shows an event once
// every transaction that may commit one before it has ended.
func feedPageWithin(t *testing.T, svc *servicetest.Service, key, query string, n int) []map[string]any {
	t.Helper()
	for range 100 {
		if events, _ := feedPage(t, svc, key, query); len(events) >= n {
			return events
		}
	}
	t.Fatalf("the feed %s never held %d events", query, n)
	return nil
}
