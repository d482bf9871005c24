package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// Every integration GET that names a resource in its path answers another account's id 403 and
// an id that exists nowhere 404, with the messages the read side's look-ups give ("form belongs
// to another account", "form not found"; a contact's 404 says only "not found"). The routes are
// walked, so that a new one cannot escape.
func TestIntegrationReadsAnswerAnotherAccountsIDs403AndUnknownIDs404(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		contact := svc.API.Post(t, "/api/v1/contacts", other.Key, map[string]any{"email": "owner@example.com"}).Expect(t, http.StatusOK).Object(t, "contact")
		crm := svc.NewCRM(t, other.ID, "Sales", "New")
		form, _ := svc.NewForm(t, other.ID, "Signup", nil, servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"})
		eventType, _ := svc.NewEventType(t, other.ID, "Call", 30)
		product := svc.NewProduct(t, other.ID, proPlan())
		sale := buy(t, svc, other.ID, map[string]any{"productId": product.ID, "pricingTierId": product.TierIDs[1], "email": "owner@example.com"})
		lead := svc.API.Post(t, "/api/v1/crms/"+crm.ID+"/leads", other.Key, map[string]any{"contactEmail": "owner@example.com"}).Expect(t, http.StatusCreated).Object(t, "lead")
		hook := webhookFor(t, svc, other.ID, sink(t))

		// Each variable: another account's id, and what its messages call it ("" for a resource
		// whose refusal comes from a command, whose messages other tests check).
		theirs := map[string]struct{ id, forbidden, notFound string }{
			"contactId":   {contact["id"].(string), "contact belongs to another account", "not found"},
			"crmId":       {crm.ID, "crm belongs to another account", "crm not found"},
			"formId":      {form, "form belongs to another account", "form not found"},
			"eventTypeId": {eventType, "event type belongs to another account", "event type not found"},
			"productId":   {product.ID, "product belongs to another account", "product not found"},
			"customerId":  {sale.Object(t, "customer")["id"].(string), "customer belongs to another account", "customer not found"},
			"token":       {sale.Object(t, "activation")["token"].(string), "", ""},
			"leadId":      {lead["id"].(string), "lead belongs to another account", ""},
			"id":          {hook, "subscription belongs to another account", "subscription not found"},
		}
		notResources := map[string]bool{"eventName": true} // /webhooks/events/{eventName}: a catalogue entry

		checked := 0
		err := svc.App.APIRouter().Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
			template, err := route.GetPathTemplate()
			methods, merr := route.GetMethods()
			if err != nil || merr != nil || !strings.HasPrefix(template, "/api/v1") {
				return nil
			}
			for _, method := range methods {
				vars := pathVariable.FindAllStringSubmatch(template, -1)
				if method != http.MethodGet || len(vars) == 0 {
					continue
				}
				// Every variable names another account's resource; the last one is the resource
				// read (a lead of a CRM), which the 404 case names nowhere.
				name := vars[len(vars)-1][1]
				if notResources[name] {
					continue
				}
				them, ok := theirs[name]
				known := ok
				for _, v := range vars {
					_, has := theirs[v[1]]
					known = known && has
				}
				if !known {
					t.Errorf("GET %s names {%s}: add one of another account's to this test", template, name)
					continue
				}
				outer := template
				for _, v := range vars[:len(vars)-1] {
					outer = strings.Replace(outer, "{"+v[1]+"}", theirs[v[1]].id, 1)
				}
				checked++
				for _, want := range []struct {
					id, message string
					status      int
				}{
					{them.id, them.forbidden, http.StatusForbidden},
					{name + "_nowhere", them.notFound, http.StatusNotFound},
				} {
					path := strings.Replace(outer, "{"+name+"}", want.id, 1)
					res := svc.API.Do(t, servicetest.Request{Method: method, Path: path, Token: acc.Key})
					msg, _ := res.Body["error"].(string)
					if res.Status != want.status || msg == "" || (want.message != "" && msg != want.message) {
						t.Errorf("GET %s: %d %s, want %d %q", path, res.Status, res.Raw, want.status, want.message)
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if checked < 7 {
			t.Fatalf("checked %d routes that name a resource", checked)
		}
	})
}
