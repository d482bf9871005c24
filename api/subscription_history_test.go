package api_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// subscriptionHistory is the operator history of a billing subscription, oldest first.
func subscriptionHistory(t *testing.T, svc *servicetest.Service, accountID, subscriptionID string) []map[string]any {
	t.Helper()
	return svc.Operator.Get(t, "/admin/v1/accounts/"+accountID+"/history?subscriptionId="+url.QueryEscape(subscriptionID), "").
		Expect(t, http.StatusOK).List(t, "events")
}

// The history of a subscription is every event of its life, whichever stream holds it: the
// purchase, the activation it issued, each rebill and refund, the cancellation, in log order,
// and nothing of the buyer's other purchases.
func TestSubscriptionHistoryListsItsWholeLifeInLogOrder(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc, other := svc.NewAccount(t), svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		monthly := map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[1], "email": "ada@example.com", "name": "Ada Lovelace"}

		first := buy(t, svc, acc.ID, monthly)
		subID := first.Object(t, "subscription")["id"].(string)
		token := first.Object(t, "activation")["token"].(string)
		// The same buyer's other purchases, before and in between, belong to other histories.
		otherSub := buy(t, svc, acc.ID, monthly).Object(t, "subscription")["id"].(string)
		buy(t, svc, acc.ID, map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[0], "email": "ada@example.com"})

		rebill := svc.Operator.Post(t, checkoutPath(acc.ID, "subscriptions/"+subID+"/rebill"), "", map[string]any{}).
			Expect(t, http.StatusCreated).Object(t, "transaction")["id"].(string)
		svc.Operator.Post(t, checkoutPath(acc.ID, "subscriptions/"+otherSub+"/rebill"), "", map[string]any{}).Expect(t, http.StatusCreated)
		svc.Operator.Post(t, checkoutPath(acc.ID, "transactions/"+rebill+"/refund"), "", map[string]any{"amountCents": 900}).Expect(t, http.StatusOK)
		svc.API.Post(t, "/api/v1/checkout/activations/"+token+"/complete", acc.Key, map[string]any{"externalUserId": "u-1"}).Expect(t, http.StatusOK)
		svc.Operator.Post(t, checkoutPath(acc.ID, "subscriptions/"+subID+"/cancel"), "", map[string]any{"atPeriodEnd": false}).Expect(t, http.StatusOK)

		events := subscriptionHistory(t, svc, acc.ID, subID)
		var types []string
		last := 0.0
		for _, e := range events {
			types = append(types, e["type"].(string))
			if p := e["position"].(float64); p <= last {
				t.Fatalf("history out of log order at %v: %v", e["type"], events)
			} else {
				last = p
			}
			if e["metadata"].(map[string]any)["accountId"] != acc.ID {
				t.Fatalf("event of another account: %v", e)
			}
		}
		want := []string{"CheckoutPurchased", "SubscriptionStarted", "ActivationIssued", "CheckoutRebilled", "SubscriptionRenewed",
			"CheckoutRefunded", "ActivationCompleted", "SubscriptionCancelScheduled", "SubscriptionCancelled"}
		if !slices.Equal(types, want) {
			t.Fatalf("history types = %v, want %v", types, want)
		}
		// The activation token is a secret: the purchase keeps it sealed, and the history shows it
		// redacted, with the signup page but no URL holding the token.
		if grant := events[0]["data"].(map[string]any)["activation"].(map[string]any); grant["sealedToken"] != "[redacted]" ||
			grant["token"] != nil || grant["url"] != nil || grant["activationBaseUrl"] != "https://app.example.com/signup" {
			t.Fatalf("the purchase shows its activation token: %v", grant)
		}

		// The other subscription's history holds only its own purchase and rebill.
		if got := countTypes(subscriptionHistory(t, svc, acc.ID, otherSub)); got["CheckoutPurchased"] != 1 || got["CheckoutRebilled"] != 1 ||
			got["CheckoutRefunded"] != 0 || got["SubscriptionCancelled"] != 0 || got["ActivationCompleted"] != 0 {
			t.Fatalf("other subscription's history = %v", got)
		}
		// Nothing is found for an unknown id or a contact id; under another account, it is forbidden.
		contactID := first.Object(t, "customer")["contactId"].(string)
		for _, path := range []string{"/admin/v1/accounts/" + acc.ID + "/history?subscriptionId=sub_nope",
			"/admin/v1/accounts/" + acc.ID + "/history?subscriptionId=" + contactID} {
			svc.Operator.Get(t, path, "").ExpectError(t, http.StatusNotFound)
		}
		svc.Operator.Get(t, "/admin/v1/accounts/"+other.ID+"/history?subscriptionId="+subID, "").ExpectError(t, http.StatusForbidden)
	})
}
