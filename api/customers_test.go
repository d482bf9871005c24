package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// buyDirect records a purchase through the command (the operator endpoint is the operator API's) and
// waits until the read models show it.
func buyDirect(t *testing.T, svc *servicetest.Service, cmd commands.Purchase) commands.PurchaseResult {
	t.Helper()
	ctx := context.Background()
	res, err := svc.App.Commands().Purchase.Handle(ctx, cmd)
	if err != nil {
		t.Fatalf("purchase %+v: %v", cmd, err)
	}
	if err := svc.App.ReadModels().WaitReadModels(ctx, res.Position); err != nil {
		t.Fatalf("read models: %v", err)
	}
	return res
}

// purchaseOf is a purchase of a product's tier by email in an account.
func purchaseOf(accountID string, p servicetest.Product, tier int, email, name string, bumpIDs ...string) commands.Purchase {
	return commands.Purchase{Meta: commands.Meta{AccountID: accountID}, ProductID: p.ID, PricingTierID: p.TierIDs[tier], BumpIDs: bumpIDs, Email: email, Name: name}
}

func TestCustomersNewestFirstWithPagingAndEmailFilter(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		var ids []string
		for i := range 5 {
			res := buyDirect(t, svc, purchaseOf(acc.ID, pro, 0, fmt.Sprintf("Buyer%d@Example.com", i), fmt.Sprintf("Buyer %d", i)))
			if !res.CustomerCreated {
				t.Fatalf("purchase %d created no customer", i)
			}
			ids = append(ids, res.CustomerID)
		}
		// A second purchase by buyer 1 (other casing) is the same customer, and does not move it.
		again := buyDirect(t, svc, purchaseOf(acc.ID, pro, 1, "BUYER1@example.COM", ""))
		if again.CustomerID != ids[1] || again.CustomerCreated {
			t.Fatalf("second purchase = %+v, want customer %s again", again, ids[1])
		}

		all := svc.API.Get(t, "/api/v1/customers", acc.Key).Expect(t, http.StatusOK).List(t, "customers")
		if len(all) != 5 {
			t.Fatalf("customers = %v", all)
		}
		for i, c := range all {
			want := 4 - i
			if c["id"] != ids[want] || c["email"] != fmt.Sprintf("Buyer%d@Example.com", want) || c["name"] != fmt.Sprintf("Buyer %d", want) ||
				!strings.HasPrefix(c["contactId"].(string), "ct_") || c["createdAt"] == nil {
				t.Fatalf("customer %d = %v, want buyer %d (newest first)", i, c, want)
			}
		}

		var paged []string
		path := "/api/v1/customers?limit=2"
		for pages := 0; ; pages++ {
			res := svc.API.Get(t, path, acc.Key).Expect(t, http.StatusOK)
			for _, c := range res.List(t, "customers") {
				paged = append(paged, c["id"].(string))
			}
			next, _ := res.Body["nextCursor"].(string)
			if next == "" {
				if pages != 2 {
					t.Fatalf("%d pages of 2 for 5 customers", pages+1)
				}
				break
			}
			path = "/api/v1/customers?limit=2&cursor=" + url.QueryEscape(next)
		}
		if strings.Join(paged, ",") != strings.Join([]string{ids[4], ids[3], ids[2], ids[1], ids[0]}, ",") {
			t.Fatalf("paged = %v, want newest first %v", paged, ids)
		}

		one := svc.API.Get(t, "/api/v1/customers?email="+url.QueryEscape("bUyEr3@EXAMPLE.com"), acc.Key).Expect(t, http.StatusOK).List(t, "customers")
		if len(one) != 1 || one[0]["id"] != ids[3] {
			t.Fatalf("email filter = %v, want buyer 3 only", one)
		}
		if none := svc.API.Get(t, "/api/v1/customers?email=buyer3@example.org", acc.Key).Expect(t, http.StatusOK).List(t, "customers"); len(none) != 0 {
			t.Fatalf("filter by an unknown email = %v", none)
		}
		svc.API.Get(t, "/api/v1/customers?limit=0", acc.Key).ExpectError(t, http.StatusBadRequest)
		svc.API.Get(t, "/api/v1/customers?cursor=nonsense", acc.Key).ExpectError(t, http.StatusBadRequest)

		// Another account sees none of them.
		other := svc.NewAccount(t)
		if theirs := svc.API.Get(t, "/api/v1/customers", other.Key).Expect(t, http.StatusOK).List(t, "customers"); len(theirs) != 0 {
			t.Fatalf("another account lists %v", theirs)
		}
	})
}

func TestGetCustomerWithPaymentsAndSubscriptions(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		ctx := context.Background()
		once := buyDirect(t, svc, purchaseOf(acc.ID, pro, 0, "ada@example.com", "Ada Lovelace", pro.BumpIDs[0]))
		monthly := buyDirect(t, svc, purchaseOf(acc.ID, pro, 1, "ada@example.com", "Ada King"))
		if monthly.CustomerID != once.CustomerID || monthly.SubscriptionID == "" {
			t.Fatalf("purchases = %+v, %+v", once, monthly)
		}
		rebill, err := svc.App.Commands().Rebill.Handle(ctx, commands.Rebill{Meta: commands.Meta{AccountID: acc.ID}, SubscriptionID: monthly.SubscriptionID})
		if err != nil {
			t.Fatal(err)
		}
		refund, err := svc.App.Commands().Refund.Handle(ctx, commands.Refund{Meta: commands.Meta{AccountID: acc.ID}, TransactionID: once.TransactionID, AmountCents: ptr(int64(100))})
		if err != nil {
			t.Fatal(err)
		}
		cancel, err := svc.App.Commands().CancelSubscription.Handle(ctx, commands.CancelSubscription{Meta: commands.Meta{AccountID: acc.ID}, SubscriptionID: monthly.SubscriptionID, AtPeriodEnd: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, pos := range []int64{rebill.Position, refund.Position, cancel.Position} {
			if err := svc.App.ReadModels().WaitReadModels(ctx, pos); err != nil {
				t.Fatal(err)
			}
		}

		c := svc.API.Get(t, "/api/v1/customers/"+once.CustomerID, acc.Key).Expect(t, http.StatusOK).Object(t, "customer")
		if c["id"] != once.CustomerID || c["email"] != "ada@example.com" || c["name"] != "Ada King" || c["contactId"] != once.ContactID {
			t.Fatalf("customer = %v (the name of the latest purchase)", c)
		}
		txns := c["transactions"].([]any)
		if len(txns) != 3 {
			t.Fatalf("transactions = %v, want purchase, purchase, rebill", txns)
		}
		first, second, third := txns[0].(map[string]any), txns[1].(map[string]any), txns[2].(map[string]any)
		if first["id"] != once.TransactionID || first["amount"] != float64(49900+19900) || first["currency"] != "USD" ||
			first["status"] != "partially_refunded" || first["refundedAmount"] != float64(100) || first["isRebill"] != false ||
			first["subscriptionId"] != nil || first["productId"] != pro.ID || first["pricingTierId"] != pro.TierIDs[0] ||
			fmt.Sprint(first["bumpIds"]) != fmt.Sprint([]any{pro.BumpIDs[0]}) || first["processor"] != "stripe" || first["txnId"] != once.TransactionID {
			t.Fatalf("one-time purchase = %v", first)
		}
		if second["id"] != monthly.TransactionID || second["status"] != "succeeded" || second["subscriptionId"] != monthly.SubscriptionID || second["isRebill"] != false {
			t.Fatalf("monthly purchase = %v", second)
		}
		if third["isRebill"] != true || third["amount"] != float64(4900) || third["subscriptionId"] != monthly.SubscriptionID || third["refundedAmount"] != float64(0) {
			t.Fatalf("rebill = %v", third)
		}
		subs := c["subscriptions"].([]any)
		if len(subs) != 1 {
			t.Fatalf("subscriptions = %v", subs)
		}
		sub := subs[0].(map[string]any)
		if sub["id"] != monthly.SubscriptionID || sub["status"] != "active" || sub["cancelAtPeriodEnd"] != true || sub["payments"] != float64(2) ||
			sub["interval"] != "month" || sub["amount"] != float64(4900) || sub["pricingTierId"] != pro.TierIDs[1] || sub["cancelledAt"] != nil ||
			sub["currentPeriodEnd"] == nil || sub["installments"] != nil {
			t.Fatalf("subscription = %v (active until its period ends, cancelling then)", sub)
		}

		// Cancelled at once: status cancelled with its date.
		now, err := svc.App.Commands().CancelSubscription.Handle(ctx, commands.CancelSubscription{Meta: commands.Meta{AccountID: acc.ID}, SubscriptionID: monthly.SubscriptionID})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.App.ReadModels().WaitReadModels(ctx, now.Position); err != nil {
			t.Fatal(err)
		}
		sub = svc.API.Get(t, "/api/v1/customers/"+once.CustomerID, acc.Key).Expect(t, http.StatusOK).Object(t, "customer")["subscriptions"].([]any)[0].(map[string]any)
		if sub["status"] != "cancelled" || sub["cancelledAt"] == nil {
			t.Fatalf("cancelled subscription = %v", sub)
		}
	})
}

func ptr[T any](v T) *T { return &v }

// A buyer's name of white space only is no name, as it is for the contact (domain.BuyerProfile):
// a later purchase with one keeps the customer's name ("Customer names" in docs/checkout.md), a
// first purchase with one gives "", and a name is kept without the white space around it, as the
// contact's is. The purchase's answer, GET /api/v1/customers/{id} and the checkout.purchased
// webhook's customer.name all say so.
func TestABlankBuyerNameIsNoName(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, simpleProduct("Ebook"))
		rec := newRecorder(t)
		webhookFor(t, svc, acc.ID, rec.URL)
		webhookNames := map[string]any{} // transaction id → the webhook's customer.name
		purchases := []struct{ email, name, want string }{
			{"blank-name@example.com", "  Jane Doe  ", "Jane Doe"},
			{"blank-name@example.com", "   ", "Jane Doe"},
			{"blank-name@example.com", "", "Jane Doe"},
			{"blank-first@example.com", " \t ", ""},
		}
		for _, p := range purchases {
			res := buy(t, svc, acc.ID, map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[0], "email": p.email, "name": p.name})
			customer := res.Object(t, "customer")
			if customer["name"] != p.want {
				t.Errorf("after a purchase named %q the customer's name is %q, want %q", p.name, customer["name"], p.want)
			}
			if got := customerOf(t, svc, acc.Key, customer["id"].(string))["name"]; got != p.want {
				t.Errorf("after a purchase named %q GET customer shows the name %q, want %q", p.name, got, p.want)
			}
			webhookNames[res.Object(t, "transaction")["id"].(string)] = p.want
		}
		for _, r := range rec.waitFor(t, len(purchases)) {
			var env struct {
				Data struct {
					Customer    struct{ Name string }
					Transaction struct{ ID string }
				}
			}
			if err := json.Unmarshal(r.body, &env); err != nil {
				t.Fatal(err)
			}
			if want := webhookNames[env.Data.Transaction.ID]; env.Data.Customer.Name != want {
				t.Errorf("checkout.purchased of %s carries customer.name %q, want %q", env.Data.Transaction.ID, env.Data.Customer.Name, want)
			}
		}
		if c := contactByEmail(t, svc, acc.Key, "blank-name@example.com"); c["firstName"] != "Jane" || c["lastName"] != "Doe" {
			t.Errorf("contact = %v, want Jane Doe", c)
		}
	})
}

func TestCustomersTenancyAndScopes(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		mine := buyDirect(t, svc, purchaseOf(acc.ID, pro, 0, "grace@example.com", "Grace"))

		svc.API.Get(t, "/api/v1/customers/"+mine.CustomerID, other.Key).ExpectError(t, http.StatusForbidden)
		svc.API.Get(t, "/api/v1/customers/cus_nope", acc.Key).ExpectError(t, http.StatusNotFound)
		svc.API.Get(t, "/api/v1/customers", "").ExpectError(t, http.StatusUnauthorized)
		svc.API.Get(t, "/api/v1/customers/"+mine.CustomerID, "").ExpectError(t, http.StatusUnauthorized)

		without := svc.NewKey(t, acc.ID, []string{"contacts:read", "checkout:write"})
		withScope := svc.NewKey(t, acc.ID, []string{"checkout:read"})
		for _, p := range []string{"/api/v1/customers", "/api/v1/customers/" + mine.CustomerID} {
			if msg := svc.API.Get(t, p, without).ExpectError(t, http.StatusForbidden); !strings.Contains(msg, "checkout:read") {
				t.Fatalf("403 message %q does not name checkout:read", msg)
			}
			svc.API.Get(t, p, withScope).Expect(t, http.StatusOK)
		}
	})
}

// The checkout read models rebuilt from the log come back exactly as their projections built them.
func TestRebuildCheckoutReadModels(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		ctx := context.Background()
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		first := buyDirect(t, svc, purchaseOf(acc.ID, pro, 1, "alan@example.com", "Alan", pro.BumpIDs[0]))
		buyDirect(t, svc, purchaseOf(acc.ID, pro, 2, "alan@example.com", "Alan Turing"))
		buyDirect(t, svc, purchaseOf(acc.ID, pro, 0, "joan@example.com", ""))
		cmds := svc.App.Commands()
		meta := commands.Meta{AccountID: acc.ID}
		rebill, err := cmds.Rebill.Handle(ctx, commands.Rebill{Meta: meta, SubscriptionID: first.SubscriptionID})
		if err != nil {
			t.Fatal(err)
		}
		refund, err := cmds.Refund.Handle(ctx, commands.Refund{Meta: meta, TransactionID: first.TransactionID})
		if err != nil {
			t.Fatal(err)
		}
		cancel, err := cmds.CancelSubscription.Handle(ctx, commands.CancelSubscription{Meta: meta, SubscriptionID: first.SubscriptionID, AtPeriodEnd: true})
		if err != nil {
			t.Fatal(err)
		}
		done, err := cmds.CompleteActivation.Handle(ctx, commands.CompleteActivation{Meta: meta, Token: first.ActivationToken, ExternalUserID: "u-1"})
		if err != nil {
			t.Fatal(err)
		}
		for _, pos := range []int64{rebill.Position, refund.Position, cancel.Position, done.Position} {
			if err := svc.App.ReadModels().WaitReadModels(ctx, pos); err != nil {
				t.Fatal(err)
			}
		}
		db := svc.App.DB()
		for _, name := range []string{"customers", "transactions", "subscriptions", "activations"} {
			want := sqldbtest.Dump(t, db.Read, name, "id")
			if len(want) < 2 {
				t.Fatalf("%s holds %d rows: the rebuild would prove little", name, len(want))
			}
			if _, err := db.Write.ExecContext(ctx, `DELETE FROM `+name+` WHERE account_id = $1`, acc.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := service.Rebuild(ctx, db, svc.App.SecretKey(), name, nil); err != nil {
				t.Fatalf("rebuild %s: %v", name, err)
			}
			if diff := sqldbtest.DiffRows(want, sqldbtest.Dump(t, db.Read, name, "id"), 5); diff != "" {
				t.Fatalf("rebuilt %s differ:\n%s", name, diff)
			}
		}
		if list := svc.API.Get(t, "/api/v1/customers", acc.Key).Expect(t, http.StatusOK).List(t, "customers"); len(list) != 2 {
			t.Fatalf("%d customers after the rebuild, want 2", len(list))
		}
	})
}
