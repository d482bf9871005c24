package api_test

import (
	"net/http"
	"regexp"
	"slices"
	"testing"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// HEAD answers like GET, without a body: same status and headers, for every GET route of both
// listeners and whatever the answer (200, 401, 403, 404, 405). Where GET is allowed, a 405
// lists HEAD in Allow.
func TestHEADAnswersLikeGET(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		crm := svc.NewCRM(t, acc.ID, "Sales", "New")
		form, _ := svc.NewForm(t, acc.ID, "Signup", nil, servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"})
		eventType, _ := svc.NewEventType(t, acc.ID, "Call", 30)
		contact := upsert(t, svc, acc.Key, map[string]any{"email": "head@example.com"}).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
		formsOnly := svc.NewKey(t, acc.ID, []string{"forms:read"})

		// Every GET route of the API host, with the ids of this account's resources.
		ids := map[string]string{"contactId": contact, "crmId": crm.ID, "formId": form, "eventTypeId": eventType, "eventName": "contact.created"}
		variable := regexp.MustCompile(`\{(\w+)\}`)
		var paths []string
		err := svc.App.APIRouter().Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
			path, err := route.GetPathTemplate()
			methods, merr := route.GetMethods()
			if err == nil && merr == nil && slices.Contains(methods, http.MethodGet) {
				paths = append(paths, variable.ReplaceAllStringFunc(path, func(v string) string { return ids[v[1:len(v)-1]] }))
			}
			return nil
		})
		if err != nil || len(paths) < 10 {
			t.Fatalf("walked %d GET routes: %v", len(paths), err)
		}

		type call struct {
			client *servicetest.Client
			path   string
			token  string
		}
		var calls []call
		for _, p := range paths {
			calls = append(calls, call{svc.API, p, acc.Key}) // 200
		}
		calls = append(calls,
			call{svc.API, "/healthz", "-"},
			call{svc.API, "/readyz", "-"},
			call{svc.API, "/api/v1/contacts", "-"},                      // 401
			call{svc.API, "/api/v1/contacts", formsOnly},                // 403
			call{svc.API, "/api/v1/contacts/ct_nope", acc.Key},          // 404
			call{svc.API, "/api/v1/nowhere", acc.Key},                   // 404, no route
			call{svc.API, "/api/v1/contacts/tags", acc.Key},             // 405: POST only
			call{svc.API, "/api/v1/crms/" + crm.ID + "/leads", acc.Key}, // 405: POST only
			call{svc.Operator, "/healthz", "-"},
			call{svc.Operator, "/readyz", "-"},
			call{svc.Operator, "/admin/v1/accounts/" + acc.ID, ""},
			call{svc.Operator, "/admin/v1/accounts/" + acc.ID + "/tags", ""},
			call{svc.Operator, "/admin/v1/accounts/" + acc.ID + "/crms/" + crm.ID + "/leads", ""},
			call{svc.Operator, "/admin/v1/accounts/" + acc.ID + "/history?contactId=" + contact, ""},
			call{svc.Operator, "/admin/v1/accounts/" + acc.ID + "/webhooks", ""},
			call{svc.Operator, "/admin/v1/accounts/" + acc.ID, "-"},                    // 401
			call{svc.Operator, "/admin/v1/accounts/acc_nope", ""},                      // 404
			call{svc.Operator, "/admin/v1/accounts", ""},                               // 405: POST only
			call{svc.Operator, "/admin/v1/accounts/" + acc.ID + "/api-keys/key_x", ""}, // 405: DELETE only
		)
		statuses := map[int]bool{}
		for _, c := range calls {
			get := c.client.Do(t, servicetest.Request{Method: http.MethodGet, Path: c.path, Token: c.token})
			head := c.client.Do(t, servicetest.Request{Method: http.MethodHead, Path: c.path, Token: c.token})
			statuses[get.Status] = true
			if head.Status != get.Status || len(head.Raw) != 0 {
				t.Errorf("HEAD %s: %d with %d bytes, GET: %d", c.path, head.Status, len(head.Raw), get.Status)
			}
			for _, h := range []string{"Content-Type", "Content-Length", "WWW-Authenticate", "Allow"} {
				if head.Header.Get(h) != get.Header.Get(h) {
					t.Errorf("HEAD %s: %s %q, GET: %q", c.path, h, head.Header.Get(h), get.Header.Get(h))
				}
			}
		}
		for _, s := range []int{200, 401, 403, 404, 405} {
			if !statuses[s] {
				t.Errorf("no call answered %d", s)
			}
		}

		// /metrics changes between two requests: the same status and type, no body.
		get := svc.Operator.Get(t, "/metrics", "-")
		head := svc.Operator.Do(t, servicetest.Request{Method: http.MethodHead, Path: "/metrics", Token: "-"})
		if head.Status != http.StatusOK || get.Status != http.StatusOK || len(head.Raw) != 0 || head.Header.Get("Content-Type") != get.Header.Get("Content-Type") {
			t.Errorf("HEAD /metrics: %d %q, GET: %d %q", head.Status, head.Header.Get("Content-Type"), get.Status, get.Header.Get("Content-Type"))
		}

		// Allow names HEAD wherever GET is allowed, and only there.
		for _, c := range []struct {
			client *servicetest.Client
			method string
			path   string
			allow  string
		}{
			{svc.API, http.MethodDelete, "/api/v1/contacts", "GET, HEAD, POST"},
			{svc.API, http.MethodPut, "/api/v1/tags", "GET, HEAD"},
			{svc.Operator, http.MethodPost, "/healthz", "GET, HEAD"},
			{svc.API, http.MethodHead, "/api/v1/contacts/tags", "POST"},
			{svc.Operator, http.MethodPut, "/admin/v1/accounts/" + acc.ID + "/webhooks", "GET, HEAD, POST"},
			{svc.Operator, http.MethodHead, "/admin/v1/accounts/" + acc.ID + "/checkout/purchases", "POST"},
		} {
			token := acc.Key
			if c.client == svc.Operator {
				token = ""
			}
			res := c.client.Do(t, servicetest.Request{Method: c.method, Path: c.path, Token: token})
			if res.Status != http.StatusMethodNotAllowed || res.Header.Get("Allow") != c.allow {
				t.Errorf("%s %s: %d, Allow %q, want 405 with %q", c.method, c.path, res.Status, res.Header.Get("Allow"), c.allow)
			}
		}
	})
}
