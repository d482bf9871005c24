package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/funnelhq/funnel/client"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/webhooks/verify"
)

func TestMain(m *testing.M) { servicetest.Main(m) }

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// receiverUnderTest is the receiver's handler on a test HTTP server, with a store of its own.
type receiverUnderTest struct {
	url     string
	store   *store
	http    *http.Client
	catchUp *catchUp // reads the event feed of the same service, with the same key
}

// startReceiver runs a receiver whose API calls go to svc with the key (svc nil: an address
// where nothing answers), failing the first failFirst attempts of each delivery.
func startReceiver(t *testing.T, svc *servicetest.Service, key string, failFirst int) *receiverUnderTest {
	t.Helper()
	st, err := openStore(context.Background(), filepath.Join(t.TempDir(), "receiver.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	baseURL, doer := "http://127.0.0.1:1", client.HttpRequestDoer(http.DefaultClient)
	if svc != nil {
		baseURL, doer = svc.API.URL(), svc.API.HTTPClient(t)
	}
	api, err := newFunnelAPI(baseURL, service.Defaults().APIHost, key, doer)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := &server{secret: testSecret, tolerance: 5 * time.Minute, now: time.Now, store: st, failFirst: newFailFirst(failFirst), log: log,
		rules: &rules{store: st, funnel: api, now: time.Now, log: log}}
	ts := httptest.NewServer(srv.handler())
	t.Cleanup(ts.Close)
	return &receiverUnderTest{url: ts.URL, store: st, http: ts.Client(), catchUp: &catchUp{api: api.api, store: st, rules: srv.rules, log: log}}
}

// delivery is one attempt as the service makes it.
type delivery struct {
	body       []byte
	deliveryID string
	at         time.Time // webhook-timestamp
	secret     string
}

// signed is an attempt of a body, now, with the test secret.
func signed(body []byte) delivery {
	return delivery{body: body, deliveryID: "dlv_" + uuid.NewString(), at: time.Now(), secret: testSecret}
}

// headers are the delivery headers of webhooks.md, signed with the delivery's secret.
func (d delivery) headers() http.Header {
	var env struct{ Type string }
	_ = json.Unmarshal(d.body, &env)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Service-Event", env.Type)
	h.Set("X-Service-Delivery", d.deliveryID)
	h.Set("X-Service-Signature", verify.ServiceSignature(d.secret, d.body))
	h.Set("webhook-id", d.deliveryID)
	h.Set("webhook-timestamp", strconv.FormatInt(d.at.Unix(), 10))
	h.Set("webhook-signature", verify.StandardSignature(d.secret, d.deliveryID, d.at.Unix(), d.body))
	return h
}

// send posts the attempt and returns the status and the decoded answer.
func (r *receiverUnderTest) send(t *testing.T, d delivery, header http.Header) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.url+"/webhooks/funnel", bytes.NewReader(d.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	res, err := r.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatalf("answer of %d: %v", res.StatusCode, err)
	}
	return res.StatusCode, out
}

// deliver sends a genuine attempt and requires a 200, returning whether it was applied.
func (r *receiverUnderTest) deliver(t *testing.T, d delivery) bool {
	t.Helper()
	status, out := r.send(t, d, d.headers())
	if status != http.StatusOK {
		t.Fatalf("delivery of %s: %d %v", d.body, status, out)
	}
	return out["applied"] == true
}

// view is GET /entitlements?email=, decoded (nil for a 404).
func (r *receiverUnderTest) view(t *testing.T, email string) *buyerView {
	t.Helper()
	res, err := r.http.Get(r.url + "/entitlements?email=" + email)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusNotFound {
		return nil
	}
	var v buyerView
	if res.StatusCode != http.StatusOK || json.NewDecoder(res.Body).Decode(&v) != nil {
		t.Fatalf("GET /entitlements?email=%s: %d", email, res.StatusCode)
	}
	return &v
}

// --- events as the service sends them ---

const stamp = "2006-01-02T15:04:05.000Z"

// envelope is a webhook body; the test checks it against the OpenAPI document.
func envelope(t *testing.T, typ string, createdAt time.Time, data map[string]any) []byte {
	t.Helper()
	body, err := json.Marshal(map[string]any{"id": uuid.NewString(), "type": typ, "createdAt": createdAt.UTC().Format(stamp), "data": data})
	if err != nil {
		t.Fatal(err)
	}
	servicetest.CheckWebhook(t, signed(body).headers(), body)
	return body
}

// sale names a payment: the buyer, the plan and the ids of the payment.
type sale struct {
	email              string
	product            servicetest.Product
	productName        string
	tier               int
	tierName           string
	txn, subscription  string
	amount             int
	transactionStatus  string
	isRebill           bool
	subscriptionExtras map[string]any
}

func (s sale) data() map[string]any {
	status := s.transactionStatus
	if status == "" {
		status = "succeeded"
	}
	return map[string]any{
		"isRebill": s.isRebill,
		"product":  map[string]any{"id": s.product.ID, "name": s.productName, "internalName": ""},
		"transaction": map[string]any{"id": s.txn, "txnId": s.txn, "amount": s.amount, "currency": "EUR", "status": status,
			"processor": "stripe", "subscriptionId": s.subscription},
		"pricing": map[string]any{"tierIndex": s.tier, "tierName": s.tierName, "pricingTierId": s.product.TierIDs[s.tier],
			"bumpIndices": []int{}, "bumps": []any{}},
		"customer": map[string]any{"email": s.email, "name": "Buyer " + s.email, "contactId": "ct_" + strings.Repeat("a", 26)},
		"contact":  map[string]any{"contactId": "ct_" + strings.Repeat("a", 26), "email": s.email, "firstName": "Buyer", "lastName": ""},
	}
}

func purchasedEvent(t *testing.T, s sale, at time.Time) []byte {
	return envelope(t, "checkout.purchased", at, s.data())
}

func rebilledEvent(t *testing.T, s sale, at time.Time) []byte {
	s.isRebill = true
	s.txn = "txn_" + uuid.NewString()[:8]
	return envelope(t, "checkout.rebilled", at, s.data())
}

func refundedEvent(t *testing.T, s sale, at time.Time) []byte {
	s.transactionStatus = "refunded"
	d := s.data()
	d["refund"] = map[string]any{"amountCents": s.amount, "fullyRefunded": true, "refundedAt": at.UTC().Format(stamp)}
	return envelope(t, "checkout.refunded", at, d)
}

func cancelScheduledEvent(t *testing.T, s sale, atPeriodEnd bool, periodEnd, at time.Time) []byte {
	d := s.data()
	d["subscription"] = map[string]any{"id": s.subscription, "status": "active", "processor": "stripe", "cancelAtPeriodEnd": atPeriodEnd,
		"currentPeriodEnd": periodEnd.UTC().Format(stamp), "scheduledAt": at.UTC().Format(stamp)}
	return envelope(t, "checkout.subscription_cancel_scheduled", at, d)
}

func cancelledEvent(t *testing.T, s sale, at time.Time) []byte {
	d := s.data()
	d["subscription"] = map[string]any{"id": s.subscription, "status": "cancelled", "processor": "stripe", "cancelledAt": at.UTC().Format(stamp)}
	return envelope(t, "checkout.subscription_cancelled", at, d)
}

func formSubmittedEvent(t *testing.T, email, firstName string, at time.Time) []byte {
	contact := map[string]any{"contactId": "ct_" + strings.Repeat("b", 26), "email": email, "firstName": firstName, "lastName": "Hopper",
		"phone": "", "customFields": map[string]any{}, "customFieldsLabeled": []any{}}
	return envelope(t, "form.submitted", at, map[string]any{
		"formId": "form_1", "formName": "Newsletter", "submissionId": "fsub_" + uuid.NewString()[:8], "submittedAt": at.UTC().Format(stamp),
		"submissionData": map[string]any{"Email": email, "Name": firstName},
		"fields": []any{
			map[string]any{"id": "fld_1", "label": "Email", "type": "email", "contactField": "builtin:email", "value": email},
			map[string]any{"id": "fld_2", "label": "Name", "type": "text", "contactField": "builtin:firstName", "value": firstName},
		},
		"contact": contact,
	})
}

// --- the tests ---

// A delivery is applied only when both signatures match and its timestamp is recent; the same
// envelope again, as a retry or through a second subscription, is acknowledged and not applied.
func TestVerificationAndReplays(t *testing.T) {
	r := startReceiver(t, nil, "key", 0)
	body := formSubmittedEvent(t, "grace@example.com", "Grace", time.Now())
	genuine := signed(body)

	tampered := bytes.Replace(body, []byte("Grace"), []byte("Mallory"), 1)
	forged := delivery{body: tampered, deliveryID: genuine.deliveryID, at: genuine.at, secret: testSecret}
	cases := []struct {
		name   string
		send   delivery
		header http.Header
		want   string
	}{
		{"a tampered body", forged, genuine.headers(), "X-Service-Signature"},
		{"another secret", delivery{body: body, deliveryID: "dlv_x", at: time.Now(), secret: "whsec_b3RoZXItc2VjcmV0LW90aGVyLXNlY3JldA=="}, nil, "X-Service-Signature"},
		{"a replay, 6 minutes old", delivery{body: body, deliveryID: "dlv_y", at: time.Now().Add(-6 * time.Minute), secret: testSecret}, nil, "replay"},
		{"a timestamp 6 minutes ahead", delivery{body: body, deliveryID: "dlv_z", at: time.Now().Add(6 * time.Minute), secret: testSecret}, nil, "replay"},
	}
	for _, c := range cases {
		header := c.header
		if header == nil {
			header = c.send.headers()
		}
		status, out := r.send(t, c.send, header)
		if status != http.StatusUnauthorized || !strings.Contains(fmt.Sprint(out["error"]), c.want) {
			t.Errorf("%s: %d %v, want 401 naming %s", c.name, status, out, c.want)
		}
	}
	noServiceSignature := genuine.headers()
	noServiceSignature.Del("X-Service-Signature")
	if status, _ := r.send(t, genuine, noServiceSignature); status != http.StatusUnauthorized {
		t.Errorf("without X-Service-Signature: %d", status)
	}
	newTimestampOldSignature := genuine.headers()
	newTimestampOldSignature.Set("webhook-timestamp", strconv.FormatInt(time.Now().Unix()+1, 10))
	if status, _ := r.send(t, genuine, newTimestampOldSignature); status != http.StatusUnauthorized {
		t.Errorf("a timestamp the signature does not cover: %d", status)
	}
	if v := r.view(t, "grace@example.com"); v != nil {
		t.Fatalf("refused deliveries changed the store: %+v", v)
	}

	if !r.deliver(t, genuine) {
		t.Fatal("the genuine delivery was not applied")
	}
	if r.deliver(t, genuine) || r.deliver(t, signed(body)) {
		t.Error("the same envelope was applied twice")
	}
	v := r.view(t, "GRACE@example.com")
	if v == nil || v.Contact == nil || v.Contact.FirstName != "Grace" {
		t.Fatalf("the contact was not synced: %+v", v)
	}

	notJSON := signed([]byte(`{"id": "x"`))
	if status, out := r.send(t, notJSON, notJSON.headers()); status != http.StatusBadRequest {
		t.Errorf("a signed body that is no envelope: %d %v", status, out)
	}
	for _, path := range []string{"/entitlements", "/entitlements?email=nobody@example.com"} {
		res, err := r.http.Get(r.url + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if want := map[bool]int{true: 400, false: 404}[path == "/entitlements"]; res.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, res.StatusCode, want)
		}
	}
}

// -fail-first N fails the first N attempts of each delivery, counted per delivery id.
func TestFailFirst(t *testing.T) {
	r := startReceiver(t, nil, "key", 2)
	body := formSubmittedEvent(t, "alan@example.com", "Alan", time.Now())
	first := signed(body)
	for attempt := 1; attempt <= 2; attempt++ {
		if status, _ := r.send(t, first, first.headers()); status != http.StatusServiceUnavailable {
			t.Fatalf("attempt %d: %d, want 503", attempt, status)
		}
	}
	if !r.deliver(t, first) {
		t.Fatal("the third attempt was not applied")
	}
	second := signed(body) // another subscription's delivery of the same event
	for attempt := 1; attempt <= 2; attempt++ {
		if status, _ := r.send(t, second, second.headers()); status != http.StatusServiceUnavailable {
			t.Fatalf("other delivery, attempt %d: %d, want 503", attempt, status)
		}
	}
	if r.deliver(t, second) {
		t.Fatal("the same envelope was applied twice")
	}
}

// plans are the checkouts the rules tests sell.
type plans struct {
	basic, pro, lifetime servicetest.Product
}

func newPlans(t *testing.T, svc *servicetest.Service, accountID string) plans {
	tier := func(name string, amount int, interval string) map[string]any {
		return map[string]any{"name": name, "amount": amount, "currency": "EUR", "interval": interval}
	}
	return plans{
		basic:    svc.NewProduct(t, accountID, map[string]any{"name": "Basic", "pricingTiers": []any{tier("Monthly", 900, "month"), tier("Yearly", 9000, "year")}}),
		pro:      svc.NewProduct(t, accountID, map[string]any{"name": "Pro", "pricingTiers": []any{tier("Monthly", 2900, "month")}}),
		lifetime: svc.NewProduct(t, accountID, map[string]any{"name": "Lifetime", "pricingTiers": []any{tier("Once", 19900, "one_time")}}),
	}
}

// The rules give one outcome whatever order the events of different subscriptions arrive in, and
// however often each is repeated, as long as each subscription's own events keep their order (as
// the service delivers them): purchases, rebills, an upgrade and a downgrade as cancel + buy, a
// refund, a cancellation at period end, and contact syncs out of order.
func TestRulesGiveOneOutcomeInAnyOrder(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		p := newPlans(t, svc, acc.ID)
		t0 := time.Date(2026, 1, 31, 10, 0, 0, 0, time.UTC)
		day := 24 * time.Hour
		basicMonthly := func(email, sub string) sale {
			return sale{email: email, product: p.basic, productName: "Basic", tier: 0, tierName: "Monthly", txn: "txn_" + sub, subscription: sub, amount: 900}
		}
		proMonthly := func(email, sub string) sale {
			return sale{email: email, product: p.pro, productName: "Pro", tier: 0, tierName: "Monthly", txn: "txn_" + sub, subscription: sub, amount: 2900}
		}
		ada := basicMonthly("ada@example.com", "sub_ada")
		bobOld, bobNew := basicMonthly("bob@example.com", "sub_bob1"), proMonthly("bob@example.com", "sub_bob2")
		cyOnce := sale{email: "cy@example.com", product: p.lifetime, productName: "Lifetime", tier: 0, tierName: "Once", txn: "txn_cy", amount: 19900}
		cyYearly := sale{email: "cy@example.com", product: p.basic, productName: "Basic", tier: 1, tierName: "Yearly", txn: "txn_cy2", subscription: "sub_cy", amount: 9000}
		dee := proMonthly("dee@example.com", "sub_dee")
		deePeriodEnd := time.Date(2026, 3, 31, 10, 0, 0, 0, time.UTC)
		fayOld, fayNew := proMonthly("fay@example.com", "sub_fay1"), basicMonthly("fay@example.com", "sub_fay2")

		// Each chain is one subscription's events (or one independent event), in the order the
		// service delivers them.
		chains := [][][]byte{
			{purchasedEvent(t, ada, t0), rebilledEvent(t, ada, t0.Add(28*day)), rebilledEvent(t, ada, t0.Add(59*day))},
			// bob upgrades: buys Pro, then cancels Basic at once.
			{purchasedEvent(t, bobOld, t0), cancelScheduledEvent(t, bobOld, false, t0.Add(28*day), t0.Add(day)), cancelledEvent(t, bobOld, t0.Add(day))},
			{purchasedEvent(t, bobNew, t0.Add(day))},
			// cy: a one-time purchase refunded, a yearly plan kept.
			{purchasedEvent(t, cyOnce, t0), refundedEvent(t, cyOnce, t0.Add(2*day))},
			{purchasedEvent(t, cyYearly, t0.Add(day))},
			// dee cancels at period end; the period runs out.
			{purchasedEvent(t, dee, t0), rebilledEvent(t, dee, t0.Add(28*day)), cancelScheduledEvent(t, dee, true, deePeriodEnd, t0.Add(30*day)), cancelledEvent(t, dee, deePeriodEnd)},
			// fay downgrades: cancels Pro, then buys Basic.
			{purchasedEvent(t, fayOld, t0), cancelScheduledEvent(t, fayOld, false, t0.Add(28*day), t0.Add(3*day)), cancelledEvent(t, fayOld, t0.Add(3*day))},
			{purchasedEvent(t, fayNew, t0.Add(4*day))},
			// hal's purchase never arrived (its delivery was given up): the rebill grants the plan.
			{rebilledEvent(t, proMonthly("hal@example.com", "sub_hal"), t0.Add(28*day))},
			// gus submits twice; the older submission may arrive last.
			{formSubmittedEvent(t, "gus@example.com", "Old", t0)},
			{formSubmittedEvent(t, "gus@example.com", "New", t0.Add(time.Hour))},
			{envelope(t, "scheduling.booked", t0, map[string]any{"eventTypeId": "evt_1", "eventTypeName": "Intro", "bookingId": "bk_1",
				"when": t0.Add(day).Format(stamp), "meetingUrl": nil, "attendee": map[string]any{"contactFields": map[string]any{}, "answers": map[string]any{}},
				"contact": map[string]any{"contactId": "", "email": "", "firstName": "", "lastName": ""}})},
		}
		emails := []string{"ada@example.com", "bob@example.com", "cy@example.com", "dee@example.com", "fay@example.com", "gus@example.com", "hal@example.com"}

		// In the order written: what the rules say.
		r := startReceiver(t, svc, acc.Key, 0)
		for _, chain := range chains {
			for _, body := range chain {
				if !r.deliver(t, signed(body)) {
					t.Fatalf("not applied: %s", body)
				}
			}
		}
		want := map[string]*buyerView{}
		for _, email := range emails {
			want[email] = r.view(t, email)
		}
		checkPlans(t, want["ada@example.com"], []string{"Basic/Monthly sub_ada active 3 2026-04-30T10:00:00.000Z"}, nil)
		checkPlans(t, want["bob@example.com"], []string{"Pro/Monthly sub_bob2 active 1 2026-03-01T10:00:00.000Z"}, []string{"Basic/Monthly sub_bob1 cancelled 1 2026-02-28T10:00:00.000Z"})
		checkPlans(t, want["cy@example.com"], []string{"Basic/Yearly sub_cy active 1 2027-02-01T10:00:00.000Z"}, []string{"Lifetime/Once  refunded 1 -"})
		checkPlans(t, want["dee@example.com"], nil, []string{"Pro/Monthly sub_dee cancelled 2 2026-03-31T10:00:00.000Z"})
		checkPlans(t, want["fay@example.com"], []string{"Basic/Monthly sub_fay2 active 1 2026-03-04T10:00:00.000Z"}, []string{"Pro/Monthly sub_fay1 cancelled 1 2026-02-28T10:00:00.000Z"})
		checkPlans(t, want["hal@example.com"], []string{"Pro/Monthly sub_hal active 1 -"}, nil)
		if d := want["dee@example.com"].Revoked[0]; !d.CancelAtPeriodEnd || d.EndedAt == nil || *d.EndedAt != "2026-03-31T10:00:00.000Z" {
			t.Errorf("dee's plan: %+v", d)
		}
		if g := want["gus@example.com"]; g.Contact == nil || g.Contact.FirstName != "New" || len(g.Active) != 0 {
			t.Errorf("gus: %+v", g)
		}

		// Any other interleaving of the chains, with repeats, ends the same.
		rng := rand.New(rand.NewPCG(11, 12))
		for round := range 6 {
			r := startReceiver(t, svc, acc.Key, 0)
			next := make([]int, len(chains))
			var sent [][]byte
			for remaining := countEvents(chains); remaining > 0; {
				c := rng.IntN(len(chains))
				if next[c] == len(chains[c]) {
					continue
				}
				body := chains[c][next[c]]
				next[c]++
				remaining--
				if !r.deliver(t, signed(body)) {
					t.Fatalf("round %d: not applied: %s", round, body)
				}
				sent = append(sent, body)
				if rng.IntN(4) == 0 { // the service repeats one already delivered
					if again := sent[rng.IntN(len(sent))]; r.deliver(t, signed(again)) {
						t.Fatalf("round %d: applied twice: %s", round, again)
					}
				}
			}
			for _, email := range emails {
				if got := r.view(t, email); !reflect.DeepEqual(got, want[email]) {
					t.Errorf("round %d, %s:\n got %+v\nwant %+v", round, email, got, want[email])
				}
			}
		}
	})
}

func countEvents(chains [][][]byte) int {
	n := 0
	for _, c := range chains {
		n += len(c)
	}
	return n
}

// checkPlans compares a buyer's plans, each as "Product/Tier subscription status paidPeriods periodEnd".
func checkPlans(t *testing.T, v *buyerView, active, revoked []string) {
	t.Helper()
	if v == nil {
		t.Fatal("no buyer")
	}
	describe := func(ps []planView) []string {
		var out []string
		for _, p := range ps {
			end := "-"
			if p.CurrentPeriodEnd != nil {
				end = *p.CurrentPeriodEnd
			}
			out = append(out, fmt.Sprintf("%s/%s %s %s %d %s", p.ProductName, p.TierName, p.SubscriptionID, p.Status, p.PaidPeriods, end))
		}
		return out
	}
	if got := describe(v.Active); !reflect.DeepEqual(got, active) {
		t.Errorf("%s active: %q, want %q", v.Email, got, active)
	}
	if got := describe(v.Revoked); !reflect.DeepEqual(got, revoked) {
		t.Errorf("%s revoked: %q, want %q", v.Email, got, revoked)
	}
}

// Copies of one delivery arriving at once are applied once.
func TestConcurrentCopiesApplyOnce(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		p := newPlans(t, svc, acc.ID)
		s := sale{email: "lin@example.com", product: p.pro, productName: "Pro", tier: 0, tierName: "Monthly", txn: "txn_lin", subscription: "sub_lin", amount: 2900}
		r := startReceiver(t, svc, acc.Key, 0)
		r.deliver(t, signed(purchasedEvent(t, s, time.Now())))
		rebill := rebilledEvent(t, s, time.Now())
		var wg sync.WaitGroup
		var mu sync.Mutex
		applied := 0
		var answers []int
		for range 8 {
			wg.Go(func() {
				d := signed(rebill)
				req, _ := http.NewRequest(http.MethodPost, r.url+"/webhooks/funnel", bytes.NewReader(d.body))
				req.Header = d.headers()
				res, err := r.http.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				defer res.Body.Close()
				var out struct{ Applied bool }
				_ = json.NewDecoder(res.Body).Decode(&out)
				mu.Lock()
				defer mu.Unlock()
				answers = append(answers, res.StatusCode)
				if out.Applied {
					applied++
				}
			})
		}
		wg.Wait()
		for _, status := range answers {
			if status != http.StatusOK {
				t.Errorf("a copy was answered %d", status)
			}
		}
		if v := r.view(t, "lin@example.com"); applied != 1 || len(v.Active) != 1 || v.Active[0].PaidPeriods != 2 {
			t.Fatalf("%d copies applied, plans %+v", applied, v.Active)
		}
	})
}

// A SaaS signup through the service's own webhook: the receiver reads the activation, creates its
// user and completes the activation with the user's id; the delivery again changes nothing. An
// activation someone else completed first is recorded as a conflict, and the plan is granted.
func TestSaaSSignupCompletesTheActivation(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		ctx := context.Background()
		acc := svc.NewAccount(t)
		saas := func(name string) servicetest.Product {
			return svc.NewProduct(t, acc.ID, map[string]any{"name": name, "forwarding": "saas_signup", "activationBaseUrl": "https://app.example.com/signup",
				"pricingTiers": []any{map[string]any{"name": "Monthly", "amount": 900, "currency": "EUR", "interval": "month"}}})
		}
		product, other := saas("App"), saas("Other app")
		r := startReceiver(t, svc, acc.Key, 0)
		hook := svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/webhooks", "", map[string]any{
			"url": r.url + "/webhooks/funnel", "events": []string{"checkout.purchased"}, "productIds": []string{product.ID}, "secret": testSecret,
		}).Expect(t, http.StatusCreated).Object(t, "webhook")["id"].(string)

		bought := svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/checkout/purchases", "", map[string]any{
			"productId": product.ID, "pricingTierId": product.TierIDs[0], "email": "Eve@example.com", "name": "Eve"}).Expect(t, http.StatusCreated)
		token := bought.Object(t, "activation")["token"].(string)
		v := waitFor(t, r, "eve@example.com", func(v *buyerView) bool { return len(v.Activations) == 1 })
		if v.UserID == nil || len(v.Active) != 1 || v.Active[0].ProductID != product.ID {
			t.Fatalf("eve: %+v", v)
		}
		a := v.Activations[0]
		if a.Status != "completed" || a.UserID != *v.UserID || a.ExternalUserID == nil || *a.ExternalUserID != *v.UserID || a.CompletedAt == nil {
			t.Fatalf("eve's activation: %+v", a)
		}
		api := testClient(t, svc, acc.Key)
		read, err := api.GetActivationWithResponse(ctx, token)
		if err != nil || read.JSON200 == nil || read.JSON200.Activation.Status != client.ActivationStatusCompleted ||
			*read.JSON200.Activation.ExternalUserId != *v.UserID {
			t.Fatalf("the service's activation: %v %s", err, read.Body)
		}

		// The delivery again, as after a lost answer: acknowledged, nothing changes. The receiver
		// may have answered before the service recorded the attempt (a retry meanwhile is refused:
		// the delivery is being sent), so wait for the record first.
		var deliveries []map[string]any
		for recorded := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			deliveries = svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/webhook-deliveries?webhookId="+hook, "").Expect(t, http.StatusOK).List(t, "deliveries")
			if len(deliveries) != 1 {
				t.Fatalf("%d deliveries", len(deliveries))
			}
			if deliveries[0]["status"] == "succeeded" {
				break
			}
			if time.Now().After(recorded) {
				t.Fatalf("the delivery the receiver answered is still %v", deliveries[0]["status"])
			}
		}
		id := deliveries[0]["id"].(string)
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/webhook-deliveries/"+id+"/retry", "", map[string]any{}).Expect(t, http.StatusOK)
		deadline := time.Now().Add(10 * time.Second)
		for {
			d := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/webhook-deliveries?webhookId="+hook, "").Expect(t, http.StatusOK).List(t, "deliveries")[0]
			if attempts := d["attempts"].([]any); len(attempts) == 2 && d["status"] == "succeeded" {
				if code := attempts[1].(map[string]any)["statusCode"]; code != float64(200) {
					t.Fatalf("the repeat was answered %v", code)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the retried delivery did not arrive: %v", d)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if again := r.view(t, "eve@example.com"); !reflect.DeepEqual(again, v) {
			t.Fatalf("the repeat changed the store:\n%+v\n%+v", again, v)
		}

		// Someone completed the other activation for their own user before the webhook came.
		ivy := svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/checkout/purchases", "", map[string]any{
			"productId": other.ID, "pricingTierId": other.TierIDs[0], "email": "ivy@example.com"}).Expect(t, http.StatusCreated)
		ivyToken := ivy.Object(t, "activation")["token"].(string)
		someone := "someone_else"
		if res, err := api.CompleteActivationWithResponse(ctx, ivyToken, nil, client.CompleteActivationRequest{ExternalUserId: &someone}); err != nil || res.JSON200 == nil {
			t.Fatalf("complete: %v %s", err, res.Body)
		}
		txn := ivy.Object(t, "transaction")
		s := sale{email: "ivy@example.com", product: other, productName: "Other app", tier: 0, tierName: "Monthly", txn: txn["id"].(string),
			subscription: ivy.Object(t, "subscription")["id"].(string), amount: 900}
		d := s.data()
		act := ivy.Object(t, "activation")
		d["activation"] = map[string]any{"token": ivyToken, "url": act["url"], "expiresAt": act["expiresAt"]}
		if !r.deliver(t, signed(envelope(t, "checkout.purchased", time.Now(), d))) {
			t.Fatal("ivy's purchase was not applied")
		}
		iv := r.view(t, "ivy@example.com")
		if len(iv.Active) != 1 || len(iv.Activations) != 1 || iv.Activations[0].Status != activationConflict ||
			iv.Activations[0].ExternalUserID == nil || *iv.Activations[0].ExternalUserID != someone {
			t.Fatalf("ivy: %+v", iv)
		}
	})
}

// testClient is the generated client of svc, as the test's own.
func testClient(t *testing.T, svc *servicetest.Service, key string) *client.ClientWithResponses {
	t.Helper()
	c, err := client.NewClientWithResponses(svc.API.URL(), client.WithHTTPClient(svc.API.HTTPClient(t)), client.WithAPIKey(key),
		client.WithHost(service.Defaults().APIHost))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitFor polls the buyer's view until ok, for up to 10 seconds.
func waitFor(t *testing.T, r *receiverUnderTest, email string, ok func(*buyerView) bool) *buyerView {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if v := r.view(t, email); v != nil && ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not as expected within 10 s: %+v", email, r.view(t, email))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
