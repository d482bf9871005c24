package api_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// leadsOf lists the leads of a CRM through the operator API, of one contact when contactID is set.
func leadsOf(t *testing.T, svc *servicetest.Service, accountID, crmID, contactID string) []map[string]any {
	t.Helper()
	path := "/admin/v1/accounts/" + accountID + "/crms/" + crmID + "/leads?limit=200"
	if contactID != "" {
		path += "&contactId=" + url.QueryEscape(contactID)
	}
	return svc.Operator.Get(t, path, "").Expect(t, http.StatusOK).List(t, "leads")
}

// history returns the event log's history of a contact (operator API), oldest first.
func history(t *testing.T, svc *servicetest.Service, accountID, contactID string) []map[string]any {
	t.Helper()
	return svc.Operator.Get(t, "/admin/v1/accounts/"+accountID+"/history?contactId="+url.QueryEscape(contactID), "").Expect(t, http.StatusOK).List(t, "events")
}

// countTypes counts the events of each type in a history.
func countTypes(events []map[string]any) map[string]int {
	counts := map[string]int{}
	for _, e := range events {
		counts[e["type"].(string)]++
	}
	return counts
}

// contactByEmail returns the account's contact with that email, or nil when there is none.
func contactByEmail(t *testing.T, svc *servicetest.Service, key, email string) map[string]any {
	t.Helper()
	list := svc.API.Get(t, "/api/v1/contacts?email="+url.QueryEscape(email), key).Expect(t, http.StatusOK).List(t, "contacts")
	switch len(list) {
	case 0:
		return nil
	case 1:
		return list[0]
	}
	t.Fatalf("%d contacts for %s", len(list), email)
	return nil
}

// moveTo is a crm.move tag automation.
func moveTo(crmID, stageID string) map[string]any {
	return map[string]any{"type": "crm.move", "crmId": crmID, "stageId": stageID}
}

// operatorRoute is a route of the operator API: a method and a path template.
type operatorRoute struct{ method, template string }

// pathVariable matches the variables of a route's path template, such as {accountId}.
var pathVariable = regexp.MustCompile(`\{(\w+)\}`)

// operatorRoutes walks the operator router and returns the routes of /admin/v1/accounts, one per
// method: every route but the OpenAPI document, which needs no token and names no account.
func operatorRoutes(t *testing.T, svc *servicetest.Service) []operatorRoute {
	t.Helper()
	var routes []operatorRoute
	err := svc.App.OperatorRouter().Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		template, err := route.GetPathTemplate()
		methods, merr := route.GetMethods()
		if err == nil && merr == nil && strings.HasPrefix(template, "/admin/v1/accounts") {
			for _, m := range methods {
				routes = append(routes, operatorRoute{m, template})
			}
		}
		return nil
	})
	if err != nil || len(routes) < 30 {
		t.Fatalf("walked %d operator routes: %v", len(routes), err)
	}
	return routes
}

// sink returns the URL of a receiver that answers 200 to every webhook.
func sink(t *testing.T) string {
	receiver := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(receiver.Close)
	return receiver.URL
}
