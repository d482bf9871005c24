package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// One rule on every operator path that names a resource (decisions.md "General"): an id that
// exists in another account is 403, one that exists nowhere is 404, and an account in the path
// that does not exist is 404 whatever else the path names. The routes are walked, so that a new
// one cannot escape; the history names its entity in the query and is listed by hand. Nothing of
// the other account changes.
func TestOperatorAnswersAnotherAccountsIDs403AndUnknownIDs404(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		keyID, _ := newKeyWithID(t, svc, other.ID)
		crm := svc.NewCRM(t, other.ID, "Sales", "New")
		form, fields := svc.NewForm(t, other.ID, "Signup", nil, servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"})
		eventType, _ := svc.NewEventType(t, other.ID, "Call", 30)
		product := svc.NewProduct(t, other.ID, proPlan())
		sale := buy(t, svc, other.ID, map[string]any{"productId": product.ID, "pricingTierId": product.TierIDs[1], "email": "owner@example.com"})
		webhook := svc.Operator.Post(t, "/admin/v1/accounts/"+other.ID+"/webhooks", "", map[string]any{"url": sink(t), "events": []string{"form.submitted"}}).
			Expect(t, http.StatusCreated).Object(t, "webhook")["id"].(string)
		svc.API.Post(t, "/api/v1/forms/"+form+"/submissions", other.Key, map[string]any{"values": map[string]any{fields[0]: "owner@example.com"}}).Expect(t, http.StatusCreated)
		delivery := svc.Operator.Get(t, "/admin/v1/accounts/"+other.ID+"/webhook-deliveries", "").Expect(t, http.StatusOK).List(t, "deliveries")[0]["id"].(string)

		theirs := map[string]string{
			"keyId": keyID, "crmId": crm.ID, "formId": form, "eventTypeId": eventType, "productId": product.ID,
			"subscriptionId": sale.Object(t, "subscription")["id"].(string), "transactionId": sale.Object(t, "transaction")["id"].(string),
			"webhookId": webhook, "deliveryId": delivery, "contactId": sale.Object(t, "customer")["contactId"].(string),
		}
		bodies := map[string]any{
			"/admin/v1/accounts/{accountId}/checkout/subscriptions/{subscriptionId}/cancel": map[string]any{"atPeriodEnd": false},
			"/admin/v1/accounts/{accountId}/webhooks/{webhookId}/replay":                    map[string]any{"since": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)},
		}

		var named []operatorRoute // every route that names a resource in its path
		for _, route := range operatorRoutes(t, svc) {
			for _, v := range pathVariable.FindAllStringSubmatch(route.template, -1) {
				if v[1] == "accountId" {
					continue
				}
				if _, ok := theirs[v[1]]; !ok {
					t.Errorf("%s names {%s}: add one of another account's to this test", route.template, v[1])
				}
				named = append(named, route)
				break
			}
		}
		if len(named) < 11 {
			t.Fatalf("%d routes name a resource", len(named))
		}

		fill := func(template, accountID string, id func(name string) string) string {
			return pathVariable.ReplaceAllStringFunc(template, func(v string) string {
				if name := v[1 : len(v)-1]; name != "accountId" {
					return id(name)
				}
				return accountID
			})
		}
		for _, c := range named {
			body := bodies[c.template]
			if body == nil && c.method == http.MethodPost {
				body = map[string]any{}
			}
			for _, want := range []struct {
				path   string
				status int
			}{
				{fill(c.template, acc.ID, func(name string) string { return theirs[name] }), http.StatusForbidden},
				{fill(c.template, acc.ID, func(name string) string { return name + "_nowhere" }), http.StatusNotFound},
				{fill(c.template, "acc_nowhere", func(name string) string { return theirs[name] }), http.StatusNotFound},
			} {
				res := svc.Operator.Do(t, servicetest.Request{Method: c.method, Path: want.path, Body: body})
				if res.Status != want.status || res.Body["error"] == nil {
					t.Errorf("%s %s: %d %s, want %d", c.method, want.path, res.Status, res.Raw, want.status)
				}
			}
		}

		// The history names its entity in the query.
		contact := sale.Object(t, "customer")["contactId"].(string)
		for query, status := range map[string]int{
			"contactId=" + contact:                       http.StatusForbidden,
			"subscriptionId=" + theirs["subscriptionId"]: http.StatusForbidden,
			"subscriptionId=" + webhook:                  http.StatusForbidden,
			"contactId=ct_nowhere":                       http.StatusNotFound,
			"subscriptionId=sub_nowhere":                 http.StatusNotFound,
			"email=owner@example.com":                    http.StatusNotFound, // an email names a contact of the account in the path
		} {
			svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/history?"+query, "").ExpectError(t, status)
		}

		// The other account is as it was: its key works, its webhook is active.
		svc.API.Get(t, "/api/v1/contacts", other.Key).Expect(t, http.StatusOK)
		hooks := svc.Operator.Get(t, "/admin/v1/accounts/"+other.ID+"/webhooks", "").Expect(t, http.StatusOK).List(t, "webhooks")
		if len(hooks) != 1 || hooks[0]["status"] != "active" {
			t.Fatalf("webhooks = %v", hooks)
		}
	})
}
