package api_test

import (
	"encoding/base64"
	"net/http"
	"testing"

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
