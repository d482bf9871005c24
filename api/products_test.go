package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// proPlan is a saas_signup product with a one-time tier, a monthly tier, a split tier and a bump.
func proPlan() map[string]any {
	return map[string]any{
		"name": "Pro Plan", "internalName": "pro-2030", "forwarding": "saas_signup", "activationBaseUrl": "https://app.example.com/signup",
		"pricingTiers": []any{
			map[string]any{"name": "Lifetime", "amount": 49900, "currency": "USD", "interval": "one_time"},
			map[string]any{"name": "Monthly", "amount": 4900, "currency": "USD", "interval": "month"},
			map[string]any{"name": "3 payments", "amount": 17900, "currency": "USD", "interval": "split", "installments": 3},
		},
		"bumps": []any{map[string]any{"name": "Setup call", "amount": 19900}},
	}
}

// simpleProduct is a product with one one-time tier and no bumps.
func simpleProduct(name string) map[string]any {
	return map[string]any{"name": name, "pricingTiers": []any{map[string]any{"name": "Once", "amount": 1000, "currency": "EUR", "interval": "one_time"}}}
}

// A product is priced in a currency ISO 4217 lists as current: a withdrawn code (the Deutsche
// Mark, the lira, the franc, the ECU, the old bolívar and Zimbabwe dollar, the kuna), which
// names no currency a price can be paid in any more, is refused with 400 naming the member, as
// XXX and the metals are, and so is a funds code (USN); current ones, new ones included, are
// accepted.
func TestAProductIsPricedInACurrentCurrency(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		products := "/admin/v1/accounts/" + acc.ID + "/products"
		pricedIn := func(code string) map[string]any {
			return map[string]any{"name": "Priced in " + code, "pricingTiers": []any{
				map[string]any{"name": "Once", "amount": 1000, "currency": code, "interval": "one_time"}}}
		}
		for _, code := range []string{"DEM", "ITL", "FRF", "XEU", "VEF", "ZWD", "HRK", "USN", "XAD", "XXX"} {
			r := svc.Operator.Post(t, products, "", pricedIn(code))
			if r.Status != http.StatusBadRequest || r.Body["param"] != "pricingTiers[0].currency" {
				t.Errorf("a product priced in %s: %d %s, want 400 naming pricingTiers[0].currency", code, r.Status, r.Raw)
			}
		}
		for _, code := range []string{"USD", "JPY", "KWD", "XCG", "ZWG"} {
			if got := svc.Operator.Post(t, products, "", pricedIn(code)).Expect(t, http.StatusCreated).Object(t, "product"); got["pricingTiers"].([]any)[0].(map[string]any)["currency"] != code {
				t.Errorf("a product priced in %s shows %v", code, got["pricingTiers"])
			}
		}
	})
}

func TestOperatorCreateProduct(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		base := "/admin/v1/accounts/" + acc.ID + "/products"

		p := svc.Operator.Post(t, base, "", proPlan()).Expect(t, http.StatusCreated).Object(t, "product")
		if !strings.HasPrefix(p["id"].(string), "prod_") || p["name"] != "Pro Plan" || p["internalName"] != "pro-2030" || p["forwarding"] != "saas_signup" ||
			p["activationBaseUrl"] != "https://app.example.com/signup" || p["createdAt"] == nil {
			t.Fatalf("product = %v", p)
		}
		tiers, bumps := p["pricingTiers"].([]any), p["bumps"].([]any)
		if len(tiers) != 3 || len(bumps) != 1 {
			t.Fatalf("tiers %v, bumps %v", tiers, bumps)
		}
		for i, want := range []map[string]any{
			{"index": float64(0), "name": "Lifetime", "amount": float64(49900), "currency": "USD", "interval": "one_time"},
			{"index": float64(1), "name": "Monthly", "amount": float64(4900), "currency": "USD", "interval": "month"},
			{"index": float64(2), "name": "3 payments", "amount": float64(17900), "currency": "USD", "interval": "split", "installments": float64(3)},
		} {
			tier := tiers[i].(map[string]any)
			if !strings.HasPrefix(tier["id"].(string), "tier_") || len(tier) != len(want)+1 {
				t.Fatalf("tier %d = %v", i, tier)
			}
			for k, v := range want {
				if tier[k] != v {
					t.Fatalf("tier %d %s = %v, want %v", i, k, tier[k], v)
				}
			}
		}
		bump := bumps[0].(map[string]any)
		if !strings.HasPrefix(bump["id"].(string), "bump_") || bump["index"] != float64(0) || bump["name"] != "Setup call" || bump["amount"] != float64(19900) {
			t.Fatalf("bump = %v", bump)
		}

		// Without forwarding, a product forwards nothing and has no signup page.
		plain := svc.Operator.Post(t, base, "", simpleProduct("Ebook")).Expect(t, http.StatusCreated).Object(t, "product")
		if plain["forwarding"] != "none" || plain["activationBaseUrl"] != "" || plain["internalName"] != "" || len(plain["bumps"].([]any)) != 0 {
			t.Fatalf("plain product = %v", plain)
		}

		tier := func(over map[string]any) map[string]any {
			t := map[string]any{"name": "T", "amount": 100, "currency": "USD", "interval": "one_time"}
			for k, v := range over {
				t[k] = v
			}
			return t
		}
		with := func(over map[string]any) map[string]any {
			body := simpleProduct("X")
			for k, v := range over {
				body[k] = v
			}
			return body
		}
		cases := []struct {
			name string
			body map[string]any
			want string
		}{
			{"no name", with(map[string]any{"name": " "}), "name"},
			{"name too long", with(map[string]any{"name": strings.Repeat("n", 256)}), "name"},
			{"internal name too long", with(map[string]any{"internalName": strings.Repeat("n", 256)}), "internalName"},
			{"no tiers", with(map[string]any{"pricingTiers": []any{}}), "pricingTiers"},
			{"tiers missing", map[string]any{"name": "X"}, "pricingTiers"},
			{"tier without name", with(map[string]any{"pricingTiers": []any{tier(map[string]any{"name": ""})}}), "pricingTiers[0].name"},
			{"zero amount", with(map[string]any{"pricingTiers": []any{tier(map[string]any{"amount": 0})}}), "pricingTiers[0].amount"},
			{"negative amount", with(map[string]any{"pricingTiers": []any{tier(nil), tier(map[string]any{"amount": -5})}}), "pricingTiers[1].amount"},
			{"fractional amount", with(map[string]any{"pricingTiers": []any{tier(map[string]any{"amount": 9.99})}}), "amount"},
			{"amount as a string", with(map[string]any{"pricingTiers": []any{tier(map[string]any{"amount": "100"})}}), "amount"},
			{"unknown currency", with(map[string]any{"pricingTiers": []any{tier(map[string]any{"currency": "ABC"})}}), "pricingTiers[0].currency"},
			{"lower-case currency", with(map[string]any{"pricingTiers": []any{tier(map[string]any{"currency": "usd"})}}), "pricingTiers[0].currency"},
			{"two currencies", with(map[string]any{"pricingTiers": []any{tier(nil), tier(map[string]any{"currency": "EUR"})}}), "pricingTiers"},
			{"unknown interval", with(map[string]any{"pricingTiers": []any{tier(map[string]any{"interval": "week"})}}), "pricingTiers[0].interval"},
			{"split without installments", with(map[string]any{"pricingTiers": []any{tier(map[string]any{"interval": "split"})}}), "pricingTiers[0].installments"},
			{"split of one installment", with(map[string]any{"pricingTiers": []any{tier(map[string]any{"interval": "split", "installments": 1})}}), "pricingTiers[0].installments"},
			{"installments on a monthly tier", with(map[string]any{"pricingTiers": []any{tier(map[string]any{"interval": "month", "installments": 3})}}), "pricingTiers[0].installments"},
			{"bump without name", with(map[string]any{"bumps": []any{map[string]any{"amount": 100}}}), "bumps[0].name"},
			{"bump without amount", with(map[string]any{"bumps": []any{map[string]any{"name": "B"}}}), "bumps[0].amount"},
			{"unknown forwarding", with(map[string]any{"forwarding": "zapier"}), "forwarding"},
			{"saas signup without a signup page", with(map[string]any{"forwarding": "saas_signup"}), "activationBaseUrl"},
			{"saas signup with a relative page", with(map[string]any{"forwarding": "saas_signup", "activationBaseUrl": "/signup"}), "activationBaseUrl"},
			{"signup page without saas signup", with(map[string]any{"activationBaseUrl": "https://app.example.com/signup"}), "activationBaseUrl"},
			{"tiers not a list", with(map[string]any{"pricingTiers": "monthly"}), "pricingTiers"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				msg := svc.Operator.Post(t, base, "", tc.body).ExpectError(t, http.StatusBadRequest)
				if !strings.Contains(msg, tc.want) {
					t.Fatalf("message %q does not mention %q", msg, tc.want)
				}
			})
		}
		list := svc.Operator.Get(t, base, "").Expect(t, http.StatusOK).List(t, "products")
		if len(list) != 2 || list[0]["id"] != p["id"] || list[1]["id"] != plain["id"] || list[0]["activationBaseUrl"] != "https://app.example.com/signup" {
			t.Fatalf("products = %v (the two created, in creation order; refused ones not created)", list)
		}
		got := svc.Operator.Get(t, base+"/"+p["id"].(string), "").Expect(t, http.StatusOK).Object(t, "product")
		if got["name"] != "Pro Plan" || len(got["pricingTiers"].([]any)) != 3 {
			t.Fatalf("operator get = %v", got)
		}
		// Another account's product is forbidden.
		svc.Operator.Get(t, "/admin/v1/accounts/"+other.ID+"/products/"+p["id"].(string), "").ExpectError(t, http.StatusForbidden)
		svc.Operator.Get(t, base+"/prod_nope", "").ExpectError(t, http.StatusNotFound)
		if theirs := svc.Operator.Get(t, "/admin/v1/accounts/"+other.ID+"/products", "").Expect(t, http.StatusOK).List(t, "products"); len(theirs) != 0 {
			t.Fatalf("another account lists %v", theirs)
		}
		svc.Operator.Post(t, "/admin/v1/accounts/acc_nope/products", "", simpleProduct("X")).ExpectError(t, http.StatusNotFound)
		svc.Operator.Get(t, "/admin/v1/accounts/acc_nope/products", "").ExpectError(t, http.StatusNotFound)
		svc.Operator.Post(t, base, "", nil).ExpectError(t, http.StatusBadRequest)
		svc.Operator.Do(t, servicetest.Request{Method: http.MethodDelete, Path: base}).ExpectError(t, http.StatusMethodNotAllowed)
	})
}

func TestProductsListAndGet(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		ebook := svc.NewProduct(t, acc.ID, simpleProduct("Ebook"))
		course := svc.NewProduct(t, acc.ID, simpleProduct("Course"))
		foreign := svc.NewProduct(t, other.ID, simpleProduct("Theirs"))

		list := svc.API.Get(t, "/api/v1/products", acc.Key).Expect(t, http.StatusOK).List(t, "products")
		if len(list) != 3 || list[0]["id"] != pro.ID || list[1]["id"] != ebook.ID || list[2]["id"] != course.ID {
			t.Fatalf("products = %v (creation order, this account only)", list)
		}
		got := svc.API.Get(t, "/api/v1/products/"+pro.ID, acc.Key).Expect(t, http.StatusOK).Object(t, "product")
		if got["name"] != "Pro Plan" || got["internalName"] != "pro-2030" || got["forwarding"] != "saas_signup" || got["createdAt"] == nil {
			t.Fatalf("product = %v", got)
		}
		if _, shown := got["activationBaseUrl"]; shown {
			t.Fatalf("integrators see the operator's signup page: %v", got)
		}
		tiers := got["pricingTiers"].([]any)
		if len(tiers) != 3 || servicetest.Strings(t, []any{tiers[0].(map[string]any)["id"], tiers[1].(map[string]any)["id"], tiers[2].(map[string]any)["id"]})[2] != pro.TierIDs[2] {
			t.Fatalf("tiers = %v, want ids %v", tiers, pro.TierIDs)
		}
		monthly := tiers[1].(map[string]any)
		if monthly["id"] != pro.TierIDs[1] || monthly["index"] != float64(1) || monthly["amount"] != float64(4900) || monthly["currency"] != "USD" || monthly["interval"] != "month" {
			t.Fatalf("monthly tier = %v", monthly)
		}
		if _, has := monthly["installments"]; has {
			t.Fatalf("a monthly tier shows installments: %v", monthly)
		}
		if split := tiers[2].(map[string]any); split["installments"] != float64(3) {
			t.Fatalf("split tier = %v", split)
		}
		if bumps := got["bumps"].([]any); len(bumps) != 1 || bumps[0].(map[string]any)["id"] != pro.BumpIDs[0] || bumps[0].(map[string]any)["amount"] != float64(19900) {
			t.Fatalf("bumps = %v", bumps)
		}

		// Cursor paging, one at a time, in creation order.
		var seen []string
		path := "/api/v1/products?limit=1"
		for range 4 {
			page := svc.API.Get(t, path, acc.Key).Expect(t, http.StatusOK)
			items := page.List(t, "products")
			if len(items) != 1 {
				t.Fatalf("page %s = %s", path, page.Raw)
			}
			seen = append(seen, items[0]["id"].(string))
			next, ok := page.Body["nextCursor"].(string)
			if !ok {
				break
			}
			path = "/api/v1/products?limit=1&cursor=" + next
		}
		if len(seen) != 3 || seen[0] != pro.ID || seen[1] != ebook.ID || seen[2] != course.ID {
			t.Fatalf("paged through %v", seen)
		}

		// Tenancy: another account's product is forbidden, an unknown one not found.
		svc.API.Get(t, "/api/v1/products/"+foreign.ID, acc.Key).ExpectError(t, http.StatusForbidden)
		svc.API.Get(t, "/api/v1/products/prod_doesnotexist", acc.Key).ExpectError(t, http.StatusNotFound)
		if theirs := svc.API.Get(t, "/api/v1/products", other.Key).Expect(t, http.StatusOK).List(t, "products"); len(theirs) != 1 || theirs[0]["id"] != foreign.ID {
			t.Fatalf("the other account lists %v", theirs)
		}
		svc.API.Get(t, "/api/v1/products?limit=0", acc.Key).ExpectError(t, http.StatusBadRequest)
		svc.API.Get(t, "/api/v1/products?cursor=garbage", acc.Key).ExpectError(t, http.StatusBadRequest)
		svc.API.Post(t, "/api/v1/products", acc.Key, simpleProduct("X")).ExpectError(t, http.StatusMethodNotAllowed)

		// Both endpoints need checkout:read.
		without := svc.NewKey(t, acc.ID, []string{"forms:read", "checkout:write", "contacts:read"})
		withScope := svc.NewKey(t, acc.ID, []string{"checkout:read"})
		for _, p := range []string{"/api/v1/products", "/api/v1/products/" + pro.ID} {
			if msg := svc.API.Get(t, p, without).ExpectError(t, http.StatusForbidden); !strings.Contains(msg, "checkout:read") {
				t.Fatalf("403 message %q does not name checkout:read", msg)
			}
			svc.API.Get(t, p, withScope).Expect(t, http.StatusOK)
		}
		svc.API.Do(t, servicetest.Request{Method: http.MethodGet, Path: "/api/v1/products", Token: "-"}).ExpectError(t, http.StatusUnauthorized)
	})
}

// Webhook filters name the account's own products, pricing tiers and bumps: others are refused,
// naming them, on both APIs.
func TestWebhookFiltersCheckProductIDs(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		theirs := svc.NewProduct(t, other.ID, proPlan())
		form, _ := svc.NewForm(t, acc.ID, "Signup", nil, servicetest.Field{"label": "Email", "type": "email"})
		url := "https://hooks.example.com/checkout"
		hook := func(filters map[string]any) map[string]any {
			body := map[string]any{"url": url, "event": "checkout.purchased"}
			for k, v := range filters {
				body[k] = v
			}
			return body
		}
		refused := []struct {
			name    string
			filters map[string]any
			want    []string
		}{
			{"unknown product", map[string]any{"productIds": []string{"prod_nope"}}, []string{"productIds", "prod_nope"}},
			{"another account's product", map[string]any{"productIds": []string{pro.ID, theirs.ID}}, []string{"productIds", theirs.ID}},
			{"a form id as a product", map[string]any{"productIds": []string{form}}, []string{"productIds", form}},
			{"unknown tier", map[string]any{"pricingTierIds": []string{pro.TierIDs[0], "tier_nope"}}, []string{"pricingTierIds", "tier_nope"}},
			{"another account's tier", map[string]any{"pricingTierIds": []string{theirs.TierIDs[1]}}, []string{"pricingTierIds", theirs.TierIDs[1]}},
			{"unknown bump", map[string]any{"pricingTierIds": []string{"__none__"}, "bumpIds": []string{"bump_nope"}}, []string{"bumpIds", "bump_nope"}},
			{"another account's bump", map[string]any{"bumpIds": []string{theirs.BumpIDs[0]}}, []string{"bumpIds", theirs.BumpIDs[0]}},
			{"__none__ on products", map[string]any{"productIds": []string{"__none__"}}, []string{"productIds", "__none__"}},
		}
		for _, tc := range refused {
			t.Run(tc.name, func(t *testing.T) {
				msgs := []string{
					svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, hook(tc.filters)).ExpectError(t, http.StatusBadRequest),
					svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/webhooks", "", hook(tc.filters)).ExpectError(t, http.StatusBadRequest),
				}
				for _, msg := range msgs {
					for _, w := range tc.want {
						if !strings.Contains(msg, w) {
							t.Fatalf("message %q does not mention %q", msg, w)
						}
					}
				}
			})
		}
		// Today's messages for forms and calendars stay as they were.
		if msg := svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, map[string]any{"url": url, "event": "form.submitted", "formIds": []string{"form_nope"}}).ExpectError(t, http.StatusBadRequest); msg != "formIds: unknown form ids: form_nope" {
			t.Fatalf("form message = %q", msg)
		}
		if hooks := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/webhooks", "").List(t, "webhooks"); len(hooks) != 0 {
			t.Fatalf("refused requests created subscriptions: %v", hooks)
		}

		accepted := []map[string]any{
			{"productIds": []string{pro.ID}, "pricingTierIds": []string{pro.TierIDs[1]}, "bumpIds": []string{"__none__"}},
			{"pricingTierIds": []string{"__none__"}, "bumpIds": []string{pro.BumpIDs[0]}},
			{"pricingTierIds": []string{pro.TierIDs[0], pro.TierIDs[2]}},
		}
		for i, filters := range accepted {
			sub := svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, hook(filters)).Expect(t, http.StatusCreated).Object(t, "subscription")
			got := sub["filters"].(map[string]any)
			for k, v := range filters {
				if want := v.([]string); strings.Join(servicetest.Strings(t, got[k]), ",") != strings.Join(want, ",") {
					t.Fatalf("subscription %d %s = %v, want %v", i, k, got[k], want)
				}
			}
		}
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/webhooks", "", hook(map[string]any{"productIds": []string{pro.ID}, "bumpIds": []string{pro.BumpIDs[0]}})).Expect(t, http.StatusCreated)
	})
}

// The products read model rebuilt from the log comes back exactly as the projection built it.
func TestRebuildProductsReadModel(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		ctx := context.Background()
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		svc.NewProduct(t, acc.ID, proPlan())
		svc.NewProduct(t, acc.ID, simpleProduct("Ebook"))
		svc.NewProduct(t, other.ID, simpleProduct("Theirs"))
		db := svc.App.DB()
		want := sqldbtest.Dump(t, db.Read, "products", "id")
		if len(want) < 3 {
			t.Fatalf("products holds %d rows: the rebuild would prove little", len(want))
		}
		if _, err := db.Write.ExecContext(ctx, `DELETE FROM products WHERE account_id = $1`, acc.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := service.Rebuild(ctx, svc.App.DB(), svc.App.SecretKey(), "products", nil); err != nil {
			t.Fatalf("rebuild products: %v", err)
		}
		if diff := sqldbtest.DiffRows(want, sqldbtest.Dump(t, db.Read, "products", "id"), 5); diff != "" {
			t.Fatalf("rebuilt products differ:\n%s", diff)
		}
		if list := svc.API.Get(t, "/api/v1/products", acc.Key).Expect(t, http.StatusOK).List(t, "products"); len(list) != 2 {
			t.Fatalf("%d products after the rebuild, want 2", len(list))
		}
	})
}
