package webhooks_test

import (
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// checkoutEvents are the five checkout webhooks, in the contract's order.
var checkoutEvents = []string{"checkout.purchased", "checkout.rebilled", "checkout.refunded",
	"checkout.subscription_cancel_scheduled", "checkout.subscription_cancelled"}

// pro is a saas_signup product with a one-time and a monthly tier and two bumps.
func pro(t *testing.T, svc *servicetest.Service, accountID string) servicetest.Product {
	return svc.NewProduct(t, accountID, map[string]any{
		"name": "Pro Plan", "internalName": "pro-2030", "forwarding": "saas_signup", "activationBaseUrl": "https://app.example.com/signup",
		"pricingTiers": []any{
			map[string]any{"name": "Lifetime", "amount": 49900, "currency": "USD", "interval": "one_time"},
			map[string]any{"name": "Monthly", "amount": 4900, "currency": "USD", "interval": "month"},
		},
		"bumps": []any{map[string]any{"name": "Setup call", "amount": 19900}, map[string]any{"name": "Templates", "amount": 900}},
	})
}

// pay drives a payment endpoint of the operator API and returns the answer.
func pay(t *testing.T, svc *servicetest.Service, accountID, path string, body map[string]any) servicetest.Response {
	t.Helper()
	status := http.StatusOK
	if path == "purchases" || strings.HasSuffix(path, "/rebill") { // each creates a transaction
		status = http.StatusCreated
	}
	return svc.Operator.Post(t, "/admin/v1/accounts/"+accountID+"/checkout/"+path, "", body).Expect(t, status)
}

// wireTime parses a timestamp as payloads write it (wire.Time).
func wireTime(t *testing.T, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	at, err := time.Parse("2006-01-02T15:04:05.000Z", s)
	if err != nil {
		t.Fatalf("%v is not a payload timestamp", v)
	}
	return at
}

// isInteger tells whether a JSON number is an integer.
func isInteger(v any) bool {
	f, ok := v.(float64)
	return ok && f == math.Trunc(f)
}

// The five checkout events, from real purchases through the operator API, are exactly the
// tables of section 6: every member, each of its type, nothing more; activation on the first
// purchase of a saas_signup product only; never checkout.paid as a type.
func TestCheckoutPayloads(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		p := pro(t, svc, acc.ID)
		rcv := newReceiver(t)
		// checkout.paid is the legacy name of checkout.purchased: it subscribes to it.
		subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": append([]string{"checkout.paid"}, checkoutEvents[1:]...)})

		bought := pay(t, svc, acc.ID, "purchases", map[string]any{"productId": p.ID, "pricingTierId": p.TierIDs[1], "bumpIds": []string{p.BumpIDs[1]},
			"email": "Ada@Example.com", "name": "Ada King Lovelace", "processor": "paypal", "txnId": "PAY-1"})
		purchase, customer, activation := bought.Object(t, "transaction"), bought.Object(t, "customer"), bought.Object(t, "activation")
		subID := bought.Object(t, "subscription")["id"].(string)
		rebill := pay(t, svc, acc.ID, "subscriptions/"+subID+"/rebill", map[string]any{"txnId": "PAY-2"}).Object(t, "transaction")
		refund := pay(t, svc, acc.ID, "transactions/"+purchase["id"].(string)+"/refund", map[string]any{"amountCents": 1000}).Object(t, "refund")
		scheduled := pay(t, svc, acc.ID, "subscriptions/"+subID+"/cancel", map[string]any{"atPeriodEnd": true}).Object(t, "subscription")
		pay(t, svc, acc.ID, "subscriptions/"+subID+"/cancel", map[string]any{"atPeriodEnd": false})

		got := rcv.waitFor(t, 5, 10*time.Second)
		envs := map[string]map[string]any{}
		for _, g := range got {
			env := decode(t, g.body)
			sameShape(t, "envelope", shapeOf(env), map[string]any{"id": "string", "type": "string", "createdAt": "string", "data": "object"})
			envs[env["type"].(string)] = env
			if g.header.Get("X-Service-Event") != env["type"] {
				t.Errorf("X-Service-Event %q, type %v", g.header.Get("X-Service-Event"), env["type"])
			}
		}
		for _, typ := range checkoutEvents {
			if envs[typ] == nil {
				t.Fatalf("no %s among %d deliveries", typ, len(got))
			}
		}
		if len(envs) != 5 { // checkout.paid is never a type
			t.Fatalf("%d types among %d deliveries", len(envs), len(got))
		}

		product := map[string]any{"id": "string", "name": "string", "internalName": "string"}
		transaction := map[string]any{"id": "string", "txnId": "string", "amount": "number", "currency": "string", "status": "string",
			"processor": "string", "subscriptionId": "string"}
		pricing := map[string]any{"tierIndex": "number", "tierName": "string", "pricingTierId": "string", "bumpIndices": "array", "bumps": "array"}
		buyer := map[string]any{"email": "string", "name": "string", "contactId": "string"}
		contact := map[string]any{"contactId": "string", "email": "string", "firstName": "string", "lastName": "string"}
		payment := func(extra map[string]any) map[string]any {
			m := map[string]any{"isRebill": "boolean", "product": product, "transaction": transaction, "pricing": pricing, "customer": buyer, "contact": contact}
			for k, v := range extra {
				m[k] = v
			}
			return m
		}
		// The cancellations add their subscription to the payment members (section 6 "Additions").
		subject := func(sub map[string]any) map[string]any { return payment(map[string]any{"subscription": sub}) }
		data := func(typ string) map[string]any { return envs[typ]["data"].(map[string]any) }
		sameShape(t, "purchased", shapeOf(data("checkout.purchased")), payment(map[string]any{"activation": map[string]any{"token": "string", "url": "string", "expiresAt": "string"}}))
		sameShape(t, "rebilled", shapeOf(data("checkout.rebilled")), payment(nil))
		sameShape(t, "refunded", shapeOf(data("checkout.refunded")), payment(map[string]any{"refund": map[string]any{"amountCents": "number", "fullyRefunded": "boolean", "refundedAt": "string"}}))
		sameShape(t, "cancel_scheduled", shapeOf(data("checkout.subscription_cancel_scheduled")), subject(map[string]any{"id": "string", "status": "string",
			"processor": "string", "cancelAtPeriodEnd": "boolean", "currentPeriodEnd": "string", "scheduledAt": "string"}))
		sameShape(t, "cancelled", shapeOf(data("checkout.subscription_cancelled")), subject(map[string]any{"id": "string", "status": "string", "processor": "string", "cancelledAt": "string"}))

		// The values: the purchase as the operator API answered it.
		d := data("checkout.purchased")
		wantProduct := map[string]any{"id": p.ID, "name": "Pro Plan", "internalName": "pro-2030"}
		wantBuyer := map[string]any{"email": "Ada@Example.com", "name": "Ada King Lovelace", "contactId": customer["contactId"]}
		wantContact := map[string]any{"contactId": customer["contactId"], "email": "Ada@Example.com", "firstName": "Ada", "lastName": "King Lovelace"}
		wantPricing := map[string]any{"tierIndex": float64(1), "tierName": "Monthly", "pricingTierId": p.TierIDs[1], "bumpIndices": []any{float64(1)},
			"bumps": []any{map[string]any{"id": p.BumpIDs[1], "index": float64(1), "name": "Templates", "amount": float64(900)}}}
		if d["isRebill"] != false || !reflect.DeepEqual(d["product"], wantProduct) || !reflect.DeepEqual(d["customer"], wantBuyer) ||
			!reflect.DeepEqual(d["contact"], wantContact) || !reflect.DeepEqual(d["pricing"], wantPricing) {
			t.Fatalf("purchased data = %v", d)
		}
		wantTxn := map[string]any{"id": purchase["id"], "txnId": "PAY-1", "amount": float64(4900 + 900), "currency": "USD", "status": "succeeded",
			"processor": "paypal", "subscriptionId": subID}
		if !reflect.DeepEqual(d["transaction"], wantTxn) || !isInteger(d["transaction"].(map[string]any)["amount"]) {
			t.Fatalf("purchased transaction = %v, want %v", d["transaction"], wantTxn)
		}
		if a := d["activation"].(map[string]any); a["token"] != activation["token"] || a["url"] != activation["url"] || a["expiresAt"] != activation["expiresAt"] {
			t.Fatalf("activation = %v, answered %v", a, activation)
		}
		wireTime(t, d["activation"].(map[string]any)["expiresAt"])

		// The rebill: the tier alone, same pricing and buyer, isRebill.
		d = data("checkout.rebilled")
		wantTxn = map[string]any{"id": rebill["id"], "txnId": "PAY-2", "amount": float64(4900), "currency": "USD", "status": "succeeded",
			"processor": "paypal", "subscriptionId": subID}
		if d["isRebill"] != true || !reflect.DeepEqual(d["transaction"], wantTxn) || !reflect.DeepEqual(d["pricing"], wantPricing) ||
			!reflect.DeepEqual(d["customer"], wantBuyer) || !reflect.DeepEqual(d["product"], wantProduct) {
			t.Fatalf("rebilled data = %v", d)
		}

		// The refund: the purchase's transaction, partially refunded.
		d = data("checkout.refunded")
		r := d["refund"].(map[string]any)
		if d["isRebill"] != false || d["transaction"].(map[string]any)["id"] != purchase["id"] || d["transaction"].(map[string]any)["status"] != "partially_refunded" ||
			r["amountCents"] != float64(1000) || !isInteger(r["amountCents"]) || r["fullyRefunded"] != false || r["refundedAt"] != refund["refundedAt"] {
			t.Fatalf("refunded data = %v", d)
		}
		wireTime(t, r["refundedAt"])
		if _, ok := d["activation"]; ok {
			t.Fatal("a refund carries an activation")
		}

		// The cancellations: they report the subscription's latest payment, the rebill.
		d = data("checkout.subscription_cancel_scheduled")
		s := d["subscription"].(map[string]any)
		if s["id"] != subID || s["status"] != "active" || s["processor"] != "paypal" || s["cancelAtPeriodEnd"] != true ||
			s["currentPeriodEnd"] != scheduled["currentPeriodEnd"] || !reflect.DeepEqual(d["product"], wantProduct) || !reflect.DeepEqual(d["customer"], wantBuyer) ||
			d["isRebill"] != true || d["transaction"].(map[string]any)["id"] != rebill["id"] || !reflect.DeepEqual(d["pricing"], wantPricing) {
			t.Fatalf("cancel_scheduled data = %v", d)
		}
		if !wireTime(t, s["scheduledAt"]).Before(wireTime(t, s["currentPeriodEnd"])) {
			t.Fatalf("scheduled at %v, after the period end %v", s["scheduledAt"], s["currentPeriodEnd"])
		}
		d = data("checkout.subscription_cancelled")
		s = d["subscription"].(map[string]any)
		if s["id"] != subID || s["status"] != "cancelled" || s["processor"] != "paypal" || !reflect.DeepEqual(d["contact"], wantContact) ||
			d["isRebill"] != true || d["transaction"].(map[string]any)["id"] != rebill["id"] || !reflect.DeepEqual(d["pricing"], wantPricing) {
			t.Fatalf("cancelled data = %v", d)
		}
		wireTime(t, s["cancelledAt"])

		// A refund of the rebill reports a rebill, fully refunded.
		pay(t, svc, acc.ID, "transactions/"+rebill["id"].(string)+"/refund", map[string]any{})
		d = decode(t, rcv.waitFor(t, 6, 10*time.Second)[5].body)["data"].(map[string]any)
		if d["isRebill"] != true || d["transaction"].(map[string]any)["id"] != rebill["id"] || d["transaction"].(map[string]any)["status"] != "refunded" ||
			d["refund"].(map[string]any)["fullyRefunded"] != true || d["refund"].(map[string]any)["amountCents"] != float64(4900) {
			t.Fatalf("refunded rebill data = %v", d)
		}

		// A second purchase by the same buyer, of a product without forwarding: no activation.
		plain := svc.NewProduct(t, acc.ID, map[string]any{"name": "Ebook", "pricingTiers": []any{map[string]any{"name": "Once", "amount": 1000, "currency": "EUR", "interval": "one_time"}}})
		pay(t, svc, acc.ID, "purchases", map[string]any{"productId": plain.ID, "pricingTierId": plain.TierIDs[0], "email": "ada@example.com"})
		d = decode(t, rcv.waitFor(t, 7, 10*time.Second)[6].body)["data"].(map[string]any)
		sameShape(t, "purchased without forwarding", shapeOf(d), payment(nil))
		if tx := d["transaction"].(map[string]any); tx["subscriptionId"] != "" || tx["processor"] != "stripe" || tx["txnId"] != tx["id"] {
			t.Fatalf("one-time transaction = %v", tx)
		}

		// The samples of checkout.purchased are the account's own purchases now, newest first,
		// as delivered but for the activation token, which a sample never hands out.
		res := svc.API.Get(t, "/api/v1/webhooks/events/checkout.purchased", acc.Key).Expect(t, http.StatusOK)
		samples := res.List(t, "events")
		want := envs["checkout.purchased"]
		want["data"].(map[string]any)["activation"] = map[string]any{"token": "[redacted]", "url": "https://app.example.com/signup?token=%5Bredacted%5D",
			"expiresAt": activation["expiresAt"]}
		if len(samples) != 2 || !reflect.DeepEqual(samples[1], want) || strings.Contains(string(res.Raw), activation["token"].(string)) {
			t.Fatalf("samples = %v", samples)
		}
		// The samples of the other checkout events are the account's own too.
		for _, typ := range checkoutEvents[1:] {
			samples := svc.API.Get(t, "/api/v1/webhooks/events/"+typ, acc.Key).Expect(t, http.StatusOK).List(t, "events")
			if len(samples) == 0 || samples[0]["type"] != typ || samples[0]["data"].(map[string]any)["product"].(map[string]any)["id"] != p.ID {
				t.Fatalf("%s samples = %v", typ, samples)
			}
		}
	})
}

// The filter matrix of section 6: productIds × pricingTierIds × bumpIds, "__none__" included,
// and both examples of the filter table, on real purchases, rebills, refunds and cancellations:
// the pricing and bump filters apply to the events of a payment; a cancellation is matched by
// its product alone.
func TestCheckoutFilterMatrix(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		p := pro(t, svc, acc.ID)
		other := svc.NewProduct(t, acc.ID, map[string]any{"name": "Ebook", "pricingTiers": []any{map[string]any{"name": "Once", "amount": 1000, "currency": "EUR", "interval": "one_time"}}})
		t0, t1, b0, b1 := p.TierIDs[0], p.TierIDs[1], p.BumpIDs[0], p.BumpIDs[1]

		// The purchases, by name: tier and bumps.
		purchases := []struct {
			name    string
			product string
			tier    string
			bumps   []string
		}{
			{"t0", p.ID, t0, nil},
			{"t0+b0", p.ID, t0, []string{b0}},
			{"t1+b1", p.ID, t1, []string{b1}},
			{"t1+b0+b1", p.ID, t1, []string{b0, b1}},
			{"other", other.ID, other.TierIDs[0], nil},
		}
		cases := []struct {
			name    string
			filters map[string]any
			want    []string
		}{
			{"no filters", nil, []string{"t0", "t0+b0", "t1+b1", "t1+b0+b1", "other"}},
			{"product", map[string]any{"productIds": []string{p.ID}}, []string{"t0", "t0+b0", "t1+b1", "t1+b0+b1"}},
			{"other product", map[string]any{"productIds": []string{other.ID}}, []string{"other"}},
			{"tier", map[string]any{"pricingTierIds": []string{t0}}, []string{"t0", "t0+b0"}},
			{"product and tier", map[string]any{"productIds": []string{p.ID}, "pricingTierIds": []string{t1}}, []string{"t1+b1", "t1+b0+b1"}},
			{"bump", map[string]any{"bumpIds": []string{b0}}, []string{"t0+b0", "t1+b0+b1"}},
			{"either bump", map[string]any{"bumpIds": []string{b0, b1}}, []string{"t0+b0", "t1+b1", "t1+b0+b1"}},
			{"bumps none", map[string]any{"bumpIds": []string{"__none__"}}, []string{"t0", "other"}},
			// Example 1: specific pricing with bumps none gives the base plan only.
			{"tier, bumps none", map[string]any{"pricingTierIds": []string{t0}, "bumpIds": []string{"__none__"}}, []string{"t0"}},
			// Example 2: pricing none with specific bumps gives that bump on any pricing option.
			{"pricing none, bump", map[string]any{"pricingTierIds": []string{"__none__"}, "bumpIds": []string{b1}}, []string{"t1+b1", "t1+b0+b1"}},
			{"tier and bump", map[string]any{"pricingTierIds": []string{t1}, "bumpIds": []string{b0}}, []string{"t1+b0+b1"}},
			{"pricing none alone", map[string]any{"pricingTierIds": []string{"__none__"}}, []string{"t0", "t0+b0", "t1+b1", "t1+b0+b1", "other"}},
		}
		// What each case expects of every event: a purchase of the recurring tier t1 is also
		// rebilled and cancelled, and every purchase is refunded. Cancellations ignore the pricing
		// and bump filters.
		recurring := func(names []string) []string {
			return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return !strings.HasPrefix(n, "t1") })
		}
		expect := func(c int) []string {
			var want []string
			for _, n := range cases[c].want {
				want = append(want, "checkout.purchased "+n, "checkout.refunded "+n)
			}
			for _, n := range recurring(cases[c].want) {
				want = append(want, "checkout.rebilled "+n)
			}
			byProduct := []string{"t1+b1", "t1+b0+b1"}
			if ids, ok := cases[c].filters["productIds"]; ok && !slices.Contains(ids.([]string), p.ID) {
				byProduct = nil
			}
			for _, n := range byProduct {
				want = append(want, "checkout.subscription_cancel_scheduled "+n, "checkout.subscription_cancelled "+n)
			}
			slices.Sort(want)
			return want
		}
		receivers := make([]*receiver, len(cases))
		expected := 0
		for i, c := range cases {
			receivers[i] = newReceiver(t)
			body := map[string]any{"url": receivers[i].URL, "events": checkoutEvents}
			for k, v := range c.filters {
				body[k] = v
			}
			subscribe(t, svc, acc.ID, body)
			expected += len(expect(i))
		}
		nameOf := map[string]string{} // transaction or subscription id → purchase name
		for _, pc := range purchases {
			body := map[string]any{"productId": pc.product, "pricingTierId": pc.tier, "email": "ada@example.com"}
			if pc.bumps != nil {
				body["bumpIds"] = pc.bumps
			}
			bought := pay(t, svc, acc.ID, "purchases", body)
			txn := bought.Object(t, "transaction")["id"].(string)
			nameOf[txn] = pc.name
			if sub, ok := bought.Body["subscription"].(map[string]any); ok {
				nameOf[sub["id"].(string)] = pc.name
				rebill := pay(t, svc, acc.ID, "subscriptions/"+sub["id"].(string)+"/rebill", map[string]any{}).Object(t, "transaction")["id"].(string)
				nameOf[rebill] = pc.name
				pay(t, svc, acc.ID, "subscriptions/"+sub["id"].(string)+"/cancel", map[string]any{"atPeriodEnd": false})
			}
			pay(t, svc, acc.ID, "transactions/"+txn+"/refund", map[string]any{})
		}
		// Every delivery exists once the last purchase answered (the projector is a read model).
		deadline := time.Now().Add(10 * time.Second)
		for {
			all, ok := deliveries(t, svc, acc.ID, "?limit=200"), true
			for _, d := range all {
				ok = ok && d["status"] == "succeeded"
			}
			if len(all) != expected {
				t.Fatalf("%d deliveries, want %d", len(all), expected)
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("deliveries did not all succeed: %v", all)
			}
			time.Sleep(20 * time.Millisecond)
		}
		for i, c := range cases {
			var got []string
			for _, g := range receivers[i].waitFor(t, len(expect(i)), time.Second) {
				env := decode(t, g.body)
				data := env["data"].(map[string]any)
				id := data["transaction"].(map[string]any)["id"].(string)
				if sub, ok := data["subscription"].(map[string]any); ok {
					id = sub["id"].(string)
				}
				got = append(got, env["type"].(string)+" "+nameOf[id])
			}
			slices.Sort(got)
			if want := expect(i); !slices.Equal(got, want) {
				t.Errorf("%s: got %v, want %v", c.name, got, want)
			}
		}
	})
}

// arrival is one request an orderedReceiver got: the event, its buyer (each buyer of the test
// has one billing subscription), and whether the receiver accepted it.
type arrival struct {
	typ, buyer string
	ok         bool
}

// orderedReceiver records the checkout events it gets, in order, and fails those fail picks.
type orderedReceiver struct {
	*httptest.Server
	mu   sync.Mutex
	got  []arrival
	fail func(a arrival, before []arrival) bool
}

func newOrderedReceiver(t *testing.T, fail func(a arrival, before []arrival) bool) *orderedReceiver {
	r := &orderedReceiver{fail: fail}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		servicetest.CheckWebhook(t, req.Header, body)
		env := decode(t, body)
		data := env["data"].(map[string]any)
		a := arrival{typ: env["type"].(string), buyer: data["customer"].(map[string]any)["email"].(string)}
		r.mu.Lock()
		a.ok = !r.fail(a, r.got)
		r.got = append(r.got, a)
		r.mu.Unlock()
		if !a.ok {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(r.Close)
	return r
}

// sameArrivals says whether got and want hold the same arrivals, in whatever order.
func sameArrivals(got, want []arrival) bool {
	key := func(a, b arrival) int { return strings.Compare(a.typ+a.buyer, b.typ+b.buyer) }
	got, want = slices.Clone(got), slices.Clone(want)
	slices.SortFunc(got, key)
	slices.SortFunc(want, key)
	return slices.Equal(got, want)
}

func (r *orderedReceiver) arrivals() []arrival {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// Per-subscription order (decisions.md "Webhooks"): purchase → rebill → refund → cancel of one
// billing subscription reach a webhook in that order while the receiver fails the first attempts
// of the purchase; another subscription's events go on meanwhile. A one-time purchase and its
// refund keep their order too.
//
// Retries are due an hour on, on the schedule's clock, which the test moves: the failed purchases
// wait, pending, for as long as the other subscription takes, however slow the machine (with a
// schedule of milliseconds they would use up their ten attempts first, be given up, and let
// their successors go).
func TestCheckoutLifecycleOrder(t *testing.T) {
	clock := &aheadClock{}
	run(t, func(c *service.Config) {
		c.WebhookBackoffBase, c.WebhookBackoffCap, c.WebhookNow = time.Hour, time.Hour, clock.Now
	}, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		p := pro(t, svc, acc.ID)
		const first, second, third = "ada@example.com", "grace@example.com", "linus@example.com"
		failed := arrival{typ: "checkout.purchased", buyer: first}
		failedOnce := arrival{typ: "checkout.purchased", buyer: third}
		// The first subscription's purchase fails twice: its later events must wait for it, the
		// second subscription's must not. The third buyer's one-time purchase fails twice too.
		rcv := newOrderedReceiver(t, func(a arrival, before []arrival) bool {
			failures := len(slices.DeleteFunc(slices.Clone(before), func(b arrival) bool { return b != a }))
			return (a == failed || a == failedOnce) && failures < 2
		})
		subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": checkoutEvents})

		buy := func(email string) string {
			return pay(t, svc, acc.ID, "purchases", map[string]any{"productId": p.ID, "pricingTierId": p.TierIDs[1], "email": email}).
				Object(t, "subscription")["id"].(string)
		}
		firstSub := buy(first)
		rebill := pay(t, svc, acc.ID, "subscriptions/"+firstSub+"/rebill", map[string]any{}).Object(t, "transaction")["id"].(string)
		pay(t, svc, acc.ID, "transactions/"+rebill+"/refund", map[string]any{"amountCents": 100})
		pay(t, svc, acc.ID, "subscriptions/"+firstSub+"/cancel", map[string]any{"atPeriodEnd": false})
		secondSub := buy(second)
		pay(t, svc, acc.ID, "subscriptions/"+secondSub+"/rebill", map[string]any{})
		once := pay(t, svc, acc.ID, "purchases", map[string]any{"productId": p.ID, "pricingTierId": p.TierIDs[0], "email": third}).Object(t, "transaction")["id"].(string)
		pay(t, svc, acc.ID, "transactions/"+once+"/refund", map[string]any{})

		// The second subscription goes on while the two failed purchases wait for their retry,
		// and nothing that follows them went before them. Twice the clock is moved to their
		// retries, once both are rescheduled (so that no attempt is in flight when it moves).
		waitFailedPurchases := func(attempts int) {
			t.Helper()
			var latest time.Time
			for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				list := deliveries(t, svc, acc.ID, "")
				succeeded, rescheduled := 0, 0
				for _, d := range list {
					tried := d["attempts"].([]any)
					switch {
					case d["status"] == "succeeded":
						succeeded++
					case d["status"] == "pending" && len(tried) == attempts &&
						timeOf(t, d["nextAttemptAt"]).After(timeOf(t, tried[attempts-1].(map[string]any)["at"])):
						rescheduled++
						if next := timeOf(t, d["nextAttemptAt"]); next.After(latest) {
							latest = next
						}
					}
				}
				if succeeded == 2 && rescheduled == 2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("want the second subscription's 2 deliveries succeeded and the 2 purchases rescheduled after %d attempts: %v; arrivals %v", attempts, list, rcv.arrivals())
				}
			}
			clock.reach(latest)
		}
		waitFailedPurchases(1)
		if got, want := rcv.arrivals(), []arrival{failed, failedOnce, {"checkout.purchased", second, true}, {"checkout.rebilled", second, true}}; !sameArrivals(got, want) {
			t.Fatalf("before the first retries the receiver got %v, want %v in any order", got, want)
		}
		waitFailedPurchases(2)
		deadline := time.Now().Add(15 * time.Second)
		for len(deliveries(t, svc, acc.ID, "?status=succeeded")) != 9 {
			if time.Now().After(deadline) {
				t.Fatalf("deliveries = %v; arrivals %v", deliveries(t, svc, acc.ID, ""), rcv.arrivals())
			}
			time.Sleep(20 * time.Millisecond)
		}
		all := rcv.arrivals()
		var ofFirst, ofSecond, ofThird []arrival
		for _, a := range all {
			switch a.buyer {
			case first:
				ofFirst = append(ofFirst, a)
			case second:
				ofSecond = append(ofSecond, a)
			default:
				ofThird = append(ofThird, a)
			}
		}
		want := []arrival{failed, failed}
		for _, typ := range []string{"checkout.purchased", "checkout.rebilled", "checkout.refunded", "checkout.subscription_cancel_scheduled", "checkout.subscription_cancelled"} {
			want = append(want, arrival{typ: typ, buyer: first, ok: true})
		}
		// Nothing of the first subscription went before its purchase succeeded.
		if !slices.Equal(ofFirst, want) {
			t.Fatalf("the first subscription's events arrived as %v", ofFirst)
		}
		if !slices.Equal(ofSecond, []arrival{{"checkout.purchased", second, true}, {"checkout.rebilled", second, true}}) {
			t.Fatalf("the second subscription's events arrived as %v", ofSecond)
		}
		if !slices.Equal(ofThird, []arrival{failedOnce, failedOnce, {"checkout.purchased", third, true}, {"checkout.refunded", third, true}}) {
			t.Fatalf("the one-time purchase's events arrived as %v", ofThird)
		}
	})
}
