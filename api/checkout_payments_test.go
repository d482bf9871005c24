package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// buy purchases a tier of a product through the operator API and returns the answer.
func buy(t *testing.T, svc *servicetest.Service, accountID string, body map[string]any) servicetest.Response {
	t.Helper()
	return svc.Operator.Post(t, "/admin/v1/accounts/"+accountID+"/checkout/purchases", "", body).Expect(t, http.StatusCreated)
}

// checkoutPath is an operator path under an account's checkout.
func checkoutPath(accountID, rest string) string {
	return "/admin/v1/accounts/" + accountID + "/checkout/" + rest
}

func TestOperatorPurchase(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		lifetime, monthly := pro.TierIDs[0], pro.TierIDs[1]

		// A monthly tier with the bump, for a saas_signup product: customer, transaction,
		// subscription and activation.
		res := buy(t, svc, acc.ID, map[string]any{"productId": pro.ID, "pricingTierId": monthly, "bumpIds": pro.BumpIDs,
			"email": "Ada@Example.com", "name": "Ada Lovelace", "processor": "paypal", "txnId": "PAY-1"})
		customer, txn, sub, act := res.Object(t, "customer"), res.Object(t, "transaction"), res.Object(t, "subscription"), res.Object(t, "activation")
		if !strings.HasPrefix(customer["id"].(string), "cus_") || customer["email"] != "Ada@Example.com" || customer["name"] != "Ada Lovelace" ||
			!strings.HasPrefix(customer["contactId"].(string), "ct_") || customer["createdAt"] == nil {
			t.Fatalf("customer = %v", customer)
		}
		if !strings.HasPrefix(txn["id"].(string), "txn_") || txn["txnId"] != "PAY-1" || txn["amount"] != float64(4900+19900) || txn["currency"] != "USD" ||
			txn["status"] != "succeeded" || txn["processor"] != "paypal" || txn["subscriptionId"] != sub["id"] || txn["productId"] != pro.ID ||
			txn["pricingTierId"] != monthly || len(servicetest.Strings(t, txn["bumpIds"])) != 1 || txn["refundedAmount"] != float64(0) || txn["isRebill"] != false {
			t.Fatalf("transaction = %v", txn)
		}
		end, err := time.Parse(time.RFC3339, sub["currentPeriodEnd"].(string))
		if !strings.HasPrefix(sub["id"].(string), "sub_") || sub["status"] != "active" || sub["processor"] != "paypal" || sub["cancelAtPeriodEnd"] != false ||
			err != nil || end.Before(time.Now().AddDate(0, 1, -3)) {
			t.Fatalf("subscription = %v", sub)
		}
		expires, err := time.Parse(time.RFC3339, act["expiresAt"].(string))
		if len(act["token"].(string)) < 22 || !strings.HasPrefix(act["url"].(string), "https://app.example.com/signup") ||
			!strings.Contains(act["url"].(string), act["token"].(string)) || err != nil || expires.Before(time.Now().Add(6*24*time.Hour)) {
			t.Fatalf("activation = %v", act)
		}
		// The buyer is a contact of the account now.
		if c := contactByEmail(t, svc, acc.Key, "ada@example.com"); c == nil || c["id"] != customer["contactId"] || c["firstName"] != "Ada" {
			t.Fatalf("contact = %v", c)
		}

		// A one-time tier opens no subscription; the processor defaults to stripe and the txnId to
		// the transaction id. The same email is the same customer.
		once := buy(t, svc, acc.ID, map[string]any{"productId": pro.ID, "pricingTierId": lifetime, "email": "ada@example.com"})
		if _, ok := once.Body["subscription"]; ok {
			t.Fatalf("a one-time purchase shows a subscription: %v", once.Body)
		}
		txn2 := once.Object(t, "transaction")
		if txn2["processor"] != "stripe" || txn2["txnId"] != txn2["id"] || txn2["subscriptionId"] != nil || txn2["amount"] != float64(49900) ||
			once.Object(t, "customer")["id"] != customer["id"] {
			t.Fatalf("one-time purchase = %v", once.Body)
		}

		// A product without forwarding issues no activation.
		plain := svc.NewProduct(t, acc.ID, simpleProduct("Ebook"))
		if res := buy(t, svc, acc.ID, map[string]any{"productId": plain.ID, "pricingTierId": plain.TierIDs[0], "email": "bob@example.com"}); res.Body["activation"] != nil {
			t.Fatalf("activation without forwarding: %v", res.Body)
		}
	})
}

func TestOperatorPurchaseRefusals(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc, other := svc.NewAccount(t), svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		theirs := svc.NewProduct(t, other.ID, simpleProduct("Theirs"))
		path := checkoutPath(acc.ID, "purchases")
		valid := func(over map[string]any) map[string]any {
			b := map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[0], "email": "ada@example.com"}
			for k, v := range over {
				if v == nil {
					delete(b, k)
				} else {
					b[k] = v
				}
			}
			return b
		}
		for name, tc := range map[string]struct {
			body   any
			status int
			names  string
		}{
			"no body":              {nil, 400, "body"},
			"no product":           {valid(map[string]any{"productId": nil}), 400, "productId"},
			"no tier":              {valid(map[string]any{"pricingTierId": nil}), 400, "pricingTierId"},
			"another's tier":       {valid(map[string]any{"pricingTierId": theirs.TierIDs[0]}), 400, "pricingTierId"},
			"unknown bump":         {valid(map[string]any{"bumpIds": []string{"bump_nope"}}), 400, "bumpIds"},
			"bumps not a list":     {valid(map[string]any{"bumpIds": "x"}), 400, "bumpIds"},
			"no email":             {valid(map[string]any{"email": nil}), 400, "email"},
			"bad email":            {valid(map[string]any{"email": "nope"}), 400, "email"},
			"bad processor":        {valid(map[string]any{"processor": "Big Bank"}), 400, "processor"},
			"txnId not a string":   {valid(map[string]any{"txnId": 12}), 400, "txnId"},
			"unknown product":      {valid(map[string]any{"productId": "prod_nope"}), 404, "product"},
			"another's product":    {valid(map[string]any{"productId": theirs.ID, "pricingTierId": theirs.TierIDs[0]}), 403, "another account"},
			"email is too long @x": {valid(map[string]any{"email": strings.Repeat("a", 300) + "@example.com"}), 400, "email"},
			"name is too long":     {valid(map[string]any{"name": strings.Repeat("Ada ", 70)}), 400, "name must be at most 255"},
			"name not a string":    {valid(map[string]any{"name": true}), 400, "name: expected string, got boolean"},
		} {
			t.Run(name, func(t *testing.T) {
				res := svc.Operator.Post(t, path, "", tc.body)
				if msg := res.ExpectError(t, tc.status); !strings.Contains(msg, tc.names) {
					t.Fatalf("error %q does not name %s", msg, tc.names)
				}
			})
		}
		// An unknown account has no products.
		svc.Operator.Post(t, checkoutPath("acc_nope", "purchases"), "", valid(nil)).ExpectError(t, http.StatusNotFound)
	})
}

func TestOperatorRebillAndCancel(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc, other := svc.NewAccount(t), svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		res := buy(t, svc, acc.ID, map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[1], "bumpIds": pro.BumpIDs, "email": "ada@example.com", "processor": "paypal"})
		sub := res.Object(t, "subscription")
		subID := sub["id"].(string)
		firstEnd, _ := time.Parse(time.RFC3339, sub["currentPeriodEnd"].(string))

		// A rebill is billed on the subscription's processor, for the tier alone (bumps are paid once):
		// a new transaction (201), and the subscription with the period it paid.
		rebilled := svc.Operator.Post(t, checkoutPath(acc.ID, "subscriptions/"+subID+"/rebill"), "", map[string]any{"txnId": "PAY-2"}).
			Expect(t, http.StatusCreated)
		txn, renewed := rebilled.Object(t, "transaction"), rebilled.Object(t, "subscription")
		if !strings.HasPrefix(txn["id"].(string), "txn_") || txn["id"] == res.Object(t, "transaction")["id"] || txn["txnId"] != "PAY-2" ||
			txn["amount"] != float64(4900) || txn["processor"] != "paypal" || txn["subscriptionId"] != subID || txn["status"] != "succeeded" ||
			txn["isRebill"] != true {
			t.Fatalf("rebill transaction = %v", txn)
		}
		renewedEnd, err := time.Parse(time.RFC3339, renewed["currentPeriodEnd"].(string))
		if renewed["id"] != subID || renewed["payments"] != float64(2) || renewed["status"] != "active" || err != nil || !renewedEnd.After(firstEnd) {
			t.Fatalf("rebilled subscription = %v", renewed)
		}
		svc.Operator.Post(t, checkoutPath(acc.ID, "subscriptions/"+subID+"/rebill"), "", map[string]any{"txnId": 5}).ExpectError(t, http.StatusBadRequest)

		// The rebill that pays a split plan's last installment answers it completed.
		split := buy(t, svc, acc.ID, map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[2], "email": "grace@example.com"}).
			Object(t, "subscription")["id"].(string)
		for payment, status := range []string{"active", "completed"} {
			got := svc.Operator.Post(t, checkoutPath(acc.ID, "subscriptions/"+split+"/rebill"), "", map[string]any{}).
				Expect(t, http.StatusCreated).Object(t, "subscription")
			if got["status"] != status || got["payments"] != float64(payment+2) || got["installments"] != float64(3) || (status == "completed") != (got["completedAt"] != nil) {
				t.Fatalf("split plan after payment %d = %v", payment+2, got)
			}
		}

		// Unknown subscriptions are not found; another account's are forbidden.
		for path, status := range map[string]int{
			checkoutPath(acc.ID, "subscriptions/sub_nope/rebill"): http.StatusNotFound, checkoutPath(other.ID, "subscriptions/"+subID+"/rebill"): http.StatusForbidden,
			checkoutPath(acc.ID, "subscriptions/sub_nope/cancel"): http.StatusNotFound, checkoutPath(other.ID, "subscriptions/"+subID+"/cancel"): http.StatusForbidden,
		} {
			svc.Operator.Post(t, path, "", map[string]any{"atPeriodEnd": false}).ExpectError(t, status)
		}

		cancel := checkoutPath(acc.ID, "subscriptions/"+subID+"/cancel")
		for _, body := range []any{map[string]any{}, map[string]any{"atPeriodEnd": "yes"}} {
			if msg := svc.Operator.Post(t, cancel, "", body).ExpectError(t, http.StatusBadRequest); !strings.Contains(msg, "atPeriodEnd") {
				t.Fatalf("error %q does not name atPeriodEnd", msg)
			}
		}
		// At period end: it stays active until the end of the period the rebill paid.
		got := svc.Operator.Post(t, cancel, "", map[string]any{"atPeriodEnd": true}).Expect(t, http.StatusOK).Object(t, "subscription")
		end, err := time.Parse(time.RFC3339, got["currentPeriodEnd"].(string))
		if got["id"] != subID || got["status"] != "active" || got["cancelAtPeriodEnd"] != true || got["processor"] != "paypal" || err != nil || !end.After(firstEnd) {
			t.Fatalf("cancelled at period end = %v", got)
		}
		// A subscription that ends with its period does not renew.
		svc.Operator.Post(t, checkoutPath(acc.ID, "subscriptions/"+subID+"/rebill"), "", map[string]any{}).ExpectError(t, http.StatusConflict)
		// At once: cancelled; then a rebill or another cancellation conflicts.
		got = svc.Operator.Post(t, cancel, "", map[string]any{"atPeriodEnd": false}).Expect(t, http.StatusOK).Object(t, "subscription")
		if got["status"] != "cancelled" {
			t.Fatalf("cancelled at once = %v", got)
		}
		svc.Operator.Post(t, checkoutPath(acc.ID, "subscriptions/"+subID+"/rebill"), "", map[string]any{}).ExpectError(t, http.StatusConflict)
		svc.Operator.Post(t, cancel, "", map[string]any{"atPeriodEnd": false}).ExpectError(t, http.StatusConflict)

		// A subscription cancelled at once straight away conflicts with a rebill too.
		sub2 := buy(t, svc, acc.ID, map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[1], "email": "bob@example.com"}).Object(t, "subscription")["id"].(string)
		svc.Operator.Post(t, checkoutPath(acc.ID, "subscriptions/"+sub2+"/cancel"), "", map[string]any{"atPeriodEnd": false}).Expect(t, http.StatusOK)
		svc.Operator.Post(t, checkoutPath(acc.ID, "subscriptions/"+sub2+"/rebill"), "", map[string]any{}).ExpectError(t, http.StatusConflict)
	})
}

func TestOperatorRefund(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc, other := svc.NewAccount(t), svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		txnID := buy(t, svc, acc.ID, map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[0], "email": "ada@example.com"}).
			Object(t, "transaction")["id"].(string)
		refund := checkoutPath(acc.ID, "transactions/"+txnID+"/refund")

		for _, tc := range []struct {
			body   map[string]any
			status int
		}{
			{map[string]any{"amountCents": 0}, http.StatusBadRequest},
			{map[string]any{"amountCents": -5}, http.StatusBadRequest},
			{map[string]any{"amountCents": 49901}, http.StatusBadRequest}, // more than was paid
			{map[string]any{"amountCents": 1.5}, http.StatusBadRequest},
			{map[string]any{"amountCents": "100"}, http.StatusBadRequest},
			{map[string]any{"amountCents": nil}, http.StatusBadRequest}, // null is not "all of it"
		} {
			if msg := svc.Operator.Post(t, refund, "", tc.body).ExpectError(t, tc.status); !strings.Contains(msg, "amountCents") {
				t.Fatalf("%v: error %q does not name amountCents", tc.body, msg)
			}
		}
		svc.Operator.Post(t, checkoutPath(acc.ID, "transactions/txn_nope/refund"), "", map[string]any{}).ExpectError(t, http.StatusNotFound)
		svc.Operator.Post(t, checkoutPath(other.ID, "transactions/"+txnID+"/refund"), "", map[string]any{}).ExpectError(t, http.StatusForbidden)

		// Part of it, then the rest by default.
		res := svc.Operator.Post(t, refund, "", map[string]any{"amountCents": 10000}).Expect(t, http.StatusOK)
		txn, r := res.Object(t, "transaction"), res.Object(t, "refund")
		if txn["id"] != txnID || txn["status"] != "partially_refunded" || txn["refundedAmount"] != float64(10000) || txn["amount"] != float64(49900) ||
			r["amountCents"] != float64(10000) || r["fullyRefunded"] != false || r["refundedAt"] == nil {
			t.Fatalf("partial refund = %v", res.Body)
		}
		// More than what remains is refused, and refunds nothing.
		if msg := svc.Operator.Post(t, refund, "", map[string]any{"amountCents": 39901}).ExpectError(t, http.StatusBadRequest); !strings.Contains(msg, "39900") {
			t.Fatalf("over-refund error %q does not say what remains", msg)
		}
		res = svc.Operator.Post(t, refund, "", map[string]any{}).Expect(t, http.StatusOK)
		txn, r = res.Object(t, "transaction"), res.Object(t, "refund")
		if txn["status"] != "refunded" || txn["refundedAmount"] != float64(49900) || r["amountCents"] != float64(39900) || r["fullyRefunded"] != true {
			t.Fatalf("full refund = %v", res.Body)
		}
		// Nothing is left to refund.
		svc.Operator.Post(t, refund, "", map[string]any{}).ExpectError(t, http.StatusConflict)
	})
}

// The cancellation events of a subscription report its latest payment (data.transaction) as it
// is now: once that payment was refunded, checkout.subscription_cancel_scheduled and
// checkout.subscription_cancelled say "refunded", as GET /api/v1/customers/:id and
// checkout.refunded do, not "succeeded" as when it was paid.
func TestCancellationEventsReportTheLatestPaymentAsItIsNow(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		res := buy(t, svc, acc.ID, map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[1], "email": "refunded@example.com"})
		subID := res.Object(t, "subscription")["id"].(string)
		txnID := res.Object(t, "transaction")["id"].(string)
		customerID := res.Object(t, "customer")["id"].(string)

		svc.Operator.Post(t, checkoutPath(acc.ID, "transactions/"+txnID+"/refund"), "", map[string]any{}).Expect(t, http.StatusOK)
		svc.Operator.Post(t, checkoutPath(acc.ID, "subscriptions/"+subID+"/cancel"), "", map[string]any{"atPeriodEnd": false}).Expect(t, http.StatusOK)

		// The transaction as the API shows it.
		var status string
		for _, tx := range svc.API.Get(t, "/api/v1/customers/"+customerID, acc.Key).Expect(t, http.StatusOK).Object(t, "customer")["transactions"].([]any) {
			if tx := tx.(map[string]any); tx["id"] == txnID {
				status = tx["status"].(string)
			}
		}
		if status != "refunded" {
			t.Fatalf("transaction status = %q, want refunded", status)
		}
		events := svc.API.Get(t, "/api/v1/events?limit=200&types=checkout.subscription_cancel_scheduled,checkout.subscription_cancelled", acc.Key).
			Expect(t, http.StatusOK).List(t, "events")
		if len(events) != 2 {
			t.Fatalf("%d cancellation events, want 2", len(events))
		}
		for _, e := range events {
			txn := e["data"].(map[string]any)["transaction"].(map[string]any)
			if txn["id"] != txnID || txn["status"] != "refunded" {
				t.Errorf("%s data.transaction = %v, want transaction %s with status refunded (as the API shows it)", e["type"], txn, txnID)
			}
		}
	})
}
