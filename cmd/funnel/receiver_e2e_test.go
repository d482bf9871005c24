//go:build unix

package main_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/funnelhq/funnel/client"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// TestReceiverEndToEnd runs the service (a build with the test clock) and the example receiver
// (examples/receiver) as real processes, on SQLite and on PostgreSQL. Several buyers buy several
// plans through the operator API while the receiver fails the first two attempts of every
// delivery: rebills, an upgrade (buy the new plan, then cancel the old one), a downgrade (cancel,
// then buy), a refund, a cancellation at period end whose period then runs out, SaaS signups and a
// form submission. At the end the receiver's entitlements (GET /entitlements) are what the
// integration rules say for every buyer, its period ends agree with the service's, every
// delivery succeeded at its third attempt, a delivery sent again changed nothing, and every
// activation is completed with the receiver's user id (GET activation, through the generated
// client).
//
// The period end: the service's clock is moved, not waited for. `go build -tags testclock`
// compiles in FUNNEL_TEST_CLOCK_FILE, a file holding an offset added to the service's clock
// (cmd/funnel/clock_testclock.go); writing "1680h" there lets 70 days pass, and the
// cancel-at-period-end timer ends the subscription within a second. A release build has no such
// setting.
func TestReceiverEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: this test builds and runs the binaries")
	}
	funnelBin := buildPackage(t, ".", "funnel", "-tags", "testclock")
	receiverBin := buildPackage(t, "../../examples/receiver", "receiver")
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		began := time.Now()
		defer func() { t.Logf("%s: the end-to-end run took %s", dialect, time.Since(began).Round(time.Millisecond)) }()
		dir := t.TempDir()
		clockFile := filepath.Join(dir, "clock")
		moveClock(t, clockFile, 0)
		srv := startServer(t, funnelBin, sqldbtest.URL(t, dialect), "FUNNEL_WEBHOOK_ALLOW_PRIVATE=true",
			"FUNNEL_WEBHOOK_BACKOFF_BASE=100ms", "FUNNEL_WEBHOOK_BACKOFF_CAP=1s", "FUNNEL_TEST_CLOCK_FILE="+clockFile)
		sh := newShop(t, srv)

		const secret = "whsec_ZTJlLXJlY2VpdmVyLXNpZ25pbmctc2VjcmV0"
		rcv := startReceiverProcess(t, receiverBin, "-secret", secret, "-api-url", srv.apiURL, "-api-host", apiHost, "-api-key", sh.key,
			"-db", filepath.Join(dir, "receiver.db"), "-fail-first", "2")
		hook := sh.must(sh.post("/webhooks", map[string]any{"url": rcv.url + "/webhooks/funnel", "secret": secret, "events": []string{
			"form.submitted", "scheduling.booked", "checkout.purchased", "checkout.rebilled", "checkout.refunded",
			"checkout.subscription_cancel_scheduled", "checkout.subscription_cancelled"}}, http.StatusCreated))["webhook"].(map[string]any)["id"].(string)

		// The script: each buyer's steps in order, the buyers at once.
		var ids sync.Map // name → id, for the expectations
		keep := func(name, id string) string { ids.Store(name, id); return id }
		buyers := map[string]func() error{
			"ada": func() error { // monthly, rebilled twice
				sub, err := sh.buy("Ada Lovelace", "ada@example.com", sh.basic, 0)
				if err == nil {
					keep("ada", sub.subscription)
					err = errors.Join(sh.rebill(sub.subscription), sh.rebill(sub.subscription))
				}
				return err
			},
			"bob": func() error { // upgrade: buys Pro, then cancels Basic at once
				old, err := sh.buy("Bob", "bob@example.com", sh.basic, 0)
				if err != nil {
					return err
				}
				keep("bob-old", old.subscription)
				upgrade, err := sh.buy("Bob", "bob@example.com", sh.pro, 0)
				if err != nil {
					return err
				}
				keep("bob-new", upgrade.subscription)
				return sh.cancel(old.subscription, false)
			},
			"cy": func() error { // a one-time purchase refunded, a yearly plan kept
				once, err := sh.buy("Cy", "cy@example.com", sh.lifetime, 0)
				if err != nil {
					return err
				}
				if err := sh.refund(once.transaction); err != nil {
					return err
				}
				yearly, err := sh.buy("Cy", "cy@example.com", sh.basic, 1)
				keep("cy", yearly.subscription)
				return err
			},
			"dee": func() error { // rebilled, then cancelled at period end
				sub, err := sh.buy("Dee", "dee@example.com", sh.pro, 0)
				if err != nil {
					return err
				}
				keep("dee", sub.subscription)
				if err := sh.rebill(sub.subscription); err != nil {
					return err
				}
				return sh.cancel(sub.subscription, true)
			},
			"eve": func() error { // a SaaS signup, and a form submission
				sub, err := sh.buy("Eve", "eve@example.com", sh.app, 0)
				keep("eve", sub.subscription)
				keep("eve-token", sub.token)
				return errors.Join(err, sh.submitForm("eve@example.com", "Eve"))
			},
			"fay": func() error { // downgrade: cancels Pro at once, then buys Basic
				old, err := sh.buy("Fay", "fay@example.com", sh.pro, 0)
				if err != nil {
					return err
				}
				keep("fay-old", old.subscription)
				if err := sh.cancel(old.subscription, false); err != nil {
					return err
				}
				downgrade, err := sh.buy("Fay", "fay@example.com", sh.basic, 0)
				keep("fay-new", downgrade.subscription)
				return err
			},
			"gil": func() error { // another SaaS signup
				sub, err := sh.buy("Gil", "gil@example.com", sh.app, 0)
				keep("gil", sub.subscription)
				keep("gil-token", sub.token)
				return err
			},
		}
		var wg sync.WaitGroup
		for name, steps := range buyers {
			wg.Go(func() {
				if err := steps(); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		id := func(name string) string { v, _ := ids.Load(name); return v.(string) }

		// What the rules say, as "Product/Tier subscription status paidPeriods cancelAtPeriodEnd".
		want := map[string]planSummary{
			"ada@example.com": {active: []string{"Basic/Monthly " + id("ada") + " active 3 false"}},
			"bob@example.com": {active: []string{"Pro/Monthly " + id("bob-new") + " active 1 false"},
				revoked: []string{"Basic/Monthly " + id("bob-old") + " cancelled 1 false"}},
			"cy@example.com": {active: []string{"Basic/Yearly " + id("cy") + " active 1 false"},
				revoked: []string{"Lifetime/Once  refunded 1 false"}},
			"dee@example.com": {active: []string{"Pro/Monthly " + id("dee") + " active 2 true"}},
			"eve@example.com": {active: []string{"App/Monthly " + id("eve") + " active 1 false"}},
			"fay@example.com": {active: []string{"Basic/Monthly " + id("fay-new") + " active 1 false"},
				revoked: []string{"Pro/Monthly " + id("fay-old") + " cancelled 1 false"}},
			"gil@example.com": {active: []string{"App/Monthly " + id("gil") + " active 1 false"}},
		}
		views := rcv.awaitPlans(t, want, 45*time.Second)
		deliveries := sh.awaitDeliveries(t, hook, 30*time.Second)
		receiverLog, _ := os.ReadFile(rcv.logPath)
		for _, d := range deliveries {
			codes := d.statusCodes()
			if len(codes) < 3 || !slices.Equal(codes[:2], []int{503, 503}) || codes[len(codes)-1] != 200 {
				t.Errorf("delivery %s (%s): attempts answered %v, want two 503s (-fail-first 2), then 200", d.ID, d.EventType, codes)
				continue
			}
			// More 503s between are the receiver's own answer when applying the delivery failed
			// (its API call timed out on a machine busy with other tests): the service retried,
			// as it should. Each such delivery must show in the receiver's log as not applied.
			if len(codes) > 3 && (slices.Contains(codes[2:len(codes)-1], 200) ||
				!strings.Contains(string(receiverLog), `could not be applied; the service will retry it" delivery=`+d.ID)) {
				t.Errorf("delivery %s (%s): attempts answered %v, and the receiver logged no failed apply to explain the extra 503s", d.ID, d.EventType, codes)
			}
		}
		if len(deliveries) != 20 {
			t.Errorf("%d deliveries, want 20", len(deliveries))
		}

		// Every activation is completed with the receiver's user; the form synced the contact.
		api, err := client.NewClientWithResponses(srv.apiURL, client.WithAPIKey(sh.key), client.WithHost(apiHost), client.WithHTTPClient(srv.client))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for _, who := range []string{"eve", "gil"} {
			v := views[who+"@example.com"]
			res, err := api.GetActivationWithResponse(ctx, id(who+"-token"))
			if err != nil || res.JSON200 == nil {
				t.Fatalf("%s's activation: %v %s", who, err, res.Body)
			}
			a := res.JSON200.Activation
			if v.UserID == nil || a.Status != client.ActivationStatusCompleted || a.ExternalUserId == nil || *a.ExternalUserId != *v.UserID {
				t.Errorf("%s: the service's activation %+v, the receiver's user %v", who, a, v.UserID)
			}
			if len(v.Activations) != 1 || v.Activations[0].Status != "completed" || v.Activations[0].ID != a.Id {
				t.Errorf("%s: the receiver's activations %+v", who, v.Activations)
			}
		}
		if c := views["eve@example.com"].Contact; c == nil || c.FirstName != "Eve" {
			t.Errorf("eve's contact was not synced from the form: %+v", c)
		}

		// The receiver's period ends agree with the service's: counted from the purchase for ada
		// (within the moment between the payment and its event), exact from the scheduled
		// cancellation for dee.
		adaEnd := sh.periodEnd(t, api, "ada@example.com", id("ada"))
		if got := views["ada@example.com"].Active[0].periodEnd(t); got.Sub(adaEnd).Abs() > time.Second {
			t.Errorf("ada's period ends %s at the receiver, %s at the service", got, adaEnd)
		}
		deeEnd := sh.periodEnd(t, api, "dee@example.com", id("dee"))
		if got := views["dee@example.com"].Active[0].periodEnd(t); !got.Equal(deeEnd) {
			t.Errorf("dee's period ends %s at the receiver, %s at the service", got, deeEnd)
		}

		// A delivery sent again (as after a lost answer) is acknowledged and changes nothing.
		var lastRebill delivery
		for _, d := range deliveries {
			if d.EventType == "checkout.rebilled" {
				lastRebill = d // of ada or dee: either must not extend again
			}
		}
		sh.must(sh.post("/webhook-deliveries/"+lastRebill.ID+"/retry", map[string]any{}, http.StatusOK))
		waitUntil(t, 10*time.Second, "the repeated delivery was answered", func() bool {
			for _, d := range sh.deliveries(t, hook) {
				if d.ID == lastRebill.ID {
					return slices.Equal(d.statusCodes(), []int{503, 503, 200, 200})
				}
			}
			return false
		})

		// Dee's period runs out: 70 days pass on the service's clock.
		moveClock(t, clockFile, 70*24*time.Hour)
		want["dee@example.com"] = planSummary{revoked: []string{"Pro/Monthly " + id("dee") + " cancelled 2 true"}}
		views = rcv.awaitPlans(t, want, 30*time.Second)
		if ended := views["dee@example.com"].Revoked[0].EndedAt; ended == nil || *ended != deeEnd.UTC().Format("2006-01-02T15:04:05.000Z") {
			t.Errorf("dee's plan ended at %v, want the period end %s", ended, deeEnd)
		}
		if len(sh.awaitDeliveries(t, hook, 30*time.Second)) != 21 {
			t.Error("the cancellation at period end was not the one delivery more")
		}
		rcv.stop(t)
		srv.stop(t)
	})
}

// moveClock sets the test clock's offset: the file is written whole, then renamed into place.
func moveClock(t *testing.T, file string, offset time.Duration) {
	t.Helper()
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, []byte(offset.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
}

// waitUntil polls cond until it holds, failing the test after within.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not so within %s: %s", within, what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// --- the shop: the operator API standing in for the app and the card processor ---

type shop struct {
	t         *testing.T
	srv       *server
	accountID string
	key       string
	basic     shopProduct // Monthly, Yearly
	pro       shopProduct // Monthly
	lifetime  shopProduct // Once (one-time)
	app       shopProduct // Monthly, a SaaS signup
	formID    string
	fields    []string // the form's Email and First name fields
}

type shopProduct struct {
	id    string
	tiers []string
}

// bought is what a purchase answered.
type bought struct {
	transaction, subscription, token string
}

func newShop(t *testing.T, srv *server) *shop {
	t.Helper()
	sh := &shop{t: t, srv: srv}
	sh.accountID = srv.operator(t, "/admin/v1/accounts", map[string]any{"name": "Receiver end to end"}, "account")
	sh.key = sh.must(sh.post("/api-keys", map[string]any{"scopes": []string{"checkout:read", "checkout:write", "forms:write"}}, http.StatusCreated))["apiKey"].(map[string]any)["key"].(string)
	tier := func(name string, amount int, interval string) map[string]any {
		return map[string]any{"name": name, "amount": amount, "currency": "EUR", "interval": interval}
	}
	sh.basic = sh.product(map[string]any{"name": "Basic", "pricingTiers": []any{tier("Monthly", 900, "month"), tier("Yearly", 9000, "year")}})
	sh.pro = sh.product(map[string]any{"name": "Pro", "pricingTiers": []any{tier("Monthly", 2900, "month")}})
	sh.lifetime = sh.product(map[string]any{"name": "Lifetime", "pricingTiers": []any{tier("Once", 19900, "one_time")}})
	sh.app = sh.product(map[string]any{"name": "App", "forwarding": "saas_signup", "activationBaseUrl": "https://app.example.com/signup",
		"pricingTiers": []any{tier("Monthly", 1900, "month")}})
	form := sh.must(sh.post("/forms", map[string]any{"name": "Signup", "fields": []map[string]any{
		{"label": "Email", "type": "email", "contactField": "builtin:email", "required": true},
		{"label": "First name", "type": "text", "contactField": "builtin:firstName"}}}, http.StatusCreated))["form"].(map[string]any)
	sh.formID = form["id"].(string)
	for _, f := range form["fields"].([]any) {
		sh.fields = append(sh.fields, f.(map[string]any)["id"].(string))
	}
	return sh
}

// post sends an operator request under the account and returns the decoded answer, or an error
// when the status is not the one wanted. It is safe from any goroutine.
func (sh *shop) post(path string, body any, want int) (map[string]any, error) {
	status, raw, err := sh.srv.do(context.Background(), http.MethodPost, sh.srv.opURL+"/admin/v1/accounts/"+sh.accountID+path, "", operatorToken, body)
	var out map[string]any
	if err == nil && (status != want || json.Unmarshal(raw, &out) != nil) {
		err = fmt.Errorf("POST %s: %d, want %d: %s", path, status, want, raw)
	}
	return out, err
}

// must fails the test on an error; only from the test's goroutine.
func (sh *shop) must(out map[string]any, err error) map[string]any {
	sh.t.Helper()
	if err != nil {
		sh.t.Fatal(err)
	}
	return out
}

func (sh *shop) product(body map[string]any) shopProduct {
	p := sh.must(sh.post("/products", body, http.StatusCreated))["product"].(map[string]any)
	out := shopProduct{id: p["id"].(string)}
	for _, tier := range p["pricingTiers"].([]any) {
		out.tiers = append(out.tiers, tier.(map[string]any)["id"].(string))
	}
	return out
}

func (sh *shop) buy(name, email string, p shopProduct, tier int) (bought, error) {
	out, err := sh.post("/checkout/purchases", map[string]any{"productId": p.id, "pricingTierId": p.tiers[tier], "email": email, "name": name}, http.StatusCreated)
	if err != nil {
		return bought{}, err
	}
	b := bought{transaction: out["transaction"].(map[string]any)["id"].(string)}
	if s, ok := out["subscription"].(map[string]any); ok {
		b.subscription = s["id"].(string)
	}
	if a, ok := out["activation"].(map[string]any); ok {
		b.token = a["token"].(string)
	}
	return b, nil
}

func (sh *shop) rebill(subscription string) error {
	_, err := sh.post("/checkout/subscriptions/"+subscription+"/rebill", map[string]any{}, http.StatusCreated)
	return err
}

func (sh *shop) cancel(subscription string, atPeriodEnd bool) error {
	_, err := sh.post("/checkout/subscriptions/"+subscription+"/cancel", map[string]any{"atPeriodEnd": atPeriodEnd}, http.StatusOK)
	return err
}

func (sh *shop) refund(transaction string) error {
	_, err := sh.post("/checkout/transactions/"+transaction+"/refund", map[string]any{}, http.StatusOK)
	return err
}

// submitForm submits the signup form through the integration API, with the generated client.
func (sh *shop) submitForm(email, firstName string) error {
	api, err := client.NewClientWithResponses(sh.srv.apiURL, client.WithAPIKey(sh.key), client.WithHost(apiHost), client.WithHTTPClient(sh.srv.client))
	if err != nil {
		return err
	}
	var emailValue, nameValue client.AnswerValue
	if err := errors.Join(emailValue.FromAnswerValue0(email), nameValue.FromAnswerValue0(firstName)); err != nil {
		return err
	}
	res, err := api.SubmitFormWithResponse(context.Background(), sh.formID, nil,
		client.SubmitFormRequest{Values: map[string]*client.AnswerValue{sh.fields[0]: &emailValue, sh.fields[1]: &nameValue}})
	if err != nil {
		return err
	}
	if res.JSON201 == nil {
		return fmt.Errorf("submit the form: %d %s", res.StatusCode(), res.Body)
	}
	return nil
}

// periodEnd is the current period end of a buyer's subscription as the service shows it, read
// through the generated client.
func (sh *shop) periodEnd(t *testing.T, api *client.ClientWithResponses, email, subscription string) time.Time {
	t.Helper()
	ctx := context.Background()
	list, err := api.ListCustomersWithResponse(ctx, &client.ListCustomersParams{Email: &email})
	if err != nil || list.JSON200 == nil || len(list.JSON200.Customers) != 1 {
		t.Fatalf("customer %s: %v %s", email, err, list.Body)
	}
	customer, err := api.GetCustomerWithResponse(ctx, list.JSON200.Customers[0].Id)
	if err != nil || customer.JSON200 == nil {
		t.Fatalf("customer %s: %v %s", email, err, customer.Body)
	}
	for _, s := range customer.JSON200.Customer.Subscriptions {
		if s.Id == subscription {
			return s.CurrentPeriodEnd
		}
	}
	t.Fatalf("customer %s has no subscription %s", email, subscription)
	return time.Time{}
}

// delivery is one entry of the operator's delivery log.
type delivery struct {
	ID        string `json:"id"`
	EventType string `json:"eventType"`
	Status    string `json:"status"`
	Attempts  []struct {
		StatusCode int `json:"statusCode"`
	} `json:"attempts"`
}

func (d delivery) statusCodes() []int {
	codes := make([]int, len(d.Attempts))
	for i, a := range d.Attempts {
		codes[i] = a.StatusCode
	}
	return codes
}

// deliveries reads the webhook's delivery log.
func (sh *shop) deliveries(t *testing.T, hook string) []delivery {
	t.Helper()
	status, raw, err := sh.srv.do(context.Background(), http.MethodGet,
		sh.srv.opURL+"/admin/v1/accounts/"+sh.accountID+"/webhook-deliveries?limit=200&webhookId="+hook, "", operatorToken, nil)
	var out struct {
		Deliveries []delivery `json:"deliveries"`
	}
	if err != nil || status != http.StatusOK || json.Unmarshal(raw, &out) != nil {
		t.Fatalf("delivery log: %d %v %s", status, err, raw)
	}
	return out.Deliveries
}

// awaitDeliveries waits until no delivery of the webhook is pending, and returns them all.
func (sh *shop) awaitDeliveries(t *testing.T, hook string, within time.Duration) []delivery {
	t.Helper()
	var all []delivery
	waitUntil(t, within, "every delivery succeeded", func() bool {
		all = sh.deliveries(t, hook)
		for _, d := range all {
			if d.Status != "succeeded" {
				return false
			}
		}
		return true
	})
	return all
}

// --- the receiver's process ---

// receiverProcess is a run of the example receiver.
type receiverProcess struct {
	cmd     *exec.Cmd
	url     string
	logPath string
	exited  chan struct{}
	waitErr error
	client  *http.Client
}

// startReceiverProcess starts the receiver on a free loopback address and waits until it answers.
func startReceiverProcess(t *testing.T, bin string, args ...string) *receiverProcess {
	t.Helper()
	addr := freeAddr(t)
	logFile, err := os.CreateTemp(t.TempDir(), "receiver-*.log")
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(bin, append([]string{"-addr", addr}, args...)...)
	cmd.Env = os.Environ()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	r := &receiverProcess{cmd: cmd, url: "http://" + addr, logPath: logFile.Name(), exited: make(chan struct{}),
		client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the receiver: %v", err)
	}
	go func() {
		r.waitErr = cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-r.exited:
		default:
			_ = cmd.Process.Kill()
			<-r.exited
		}
		if t.Failed() {
			raw, _ := os.ReadFile(r.logPath)
			t.Logf("log of the receiver:\n%s", tail(raw, 8000))
		}
	})
	waitUntil(t, 20*time.Second, "the receiver answers /healthz", func() bool {
		select {
		case <-r.exited:
			raw, _ := os.ReadFile(r.logPath)
			t.Fatalf("the receiver exited: %v\n%s", r.waitErr, raw)
		default:
		}
		res, err := r.client.Get(r.url + "/healthz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	return r
}

func tail(raw []byte, n int) string {
	if len(raw) > n {
		raw = raw[len(raw)-n:]
	}
	return string(raw)
}

// buyerEntitlements is the receiver's GET /entitlements answer, as far as the test reads it.
type buyerEntitlements struct {
	Email       string         `json:"email"`
	UserID      *string        `json:"userId"`
	Active      []receiverPlan `json:"active"`
	Revoked     []receiverPlan `json:"revoked"`
	Activations []struct {
		ID             string  `json:"id"`
		Status         string  `json:"status"`
		UserID         string  `json:"userId"`
		ExternalUserID *string `json:"externalUserId"`
	} `json:"activations"`
	Contact *struct {
		FirstName string `json:"firstName"`
	} `json:"contact"`
}

type receiverPlan struct {
	ProductName       string  `json:"productName"`
	TierName          string  `json:"tierName"`
	SubscriptionID    string  `json:"subscriptionId"`
	Status            string  `json:"status"`
	PaidPeriods       int     `json:"paidPeriods"`
	CurrentPeriodEnd  *string `json:"currentPeriodEnd"`
	CancelAtPeriodEnd bool    `json:"cancelAtPeriodEnd"`
	EndedAt           *string `json:"endedAt"`
}

func (p receiverPlan) String() string {
	return fmt.Sprintf("%s/%s %s %s %d %t", p.ProductName, p.TierName, p.SubscriptionID, p.Status, p.PaidPeriods, p.CancelAtPeriodEnd)
}

func (p receiverPlan) periodEnd(t *testing.T) time.Time {
	t.Helper()
	if p.CurrentPeriodEnd == nil {
		t.Fatalf("plan %s has no period end", p)
	}
	at, err := time.Parse(time.RFC3339, *p.CurrentPeriodEnd)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// planSummary is a buyer's plans, each as receiverPlan.String.
type planSummary struct{ active, revoked []string }

func summarize(v buyerEntitlements) planSummary {
	var s planSummary
	for _, p := range v.Active {
		s.active = append(s.active, p.String())
	}
	for _, p := range v.Revoked {
		s.revoked = append(s.revoked, p.String())
	}
	return s
}

// view reads GET /entitlements?email=.
func (r *receiverProcess) view(email string) (buyerEntitlements, error) {
	res, err := r.client.Get(r.url + "/entitlements?email=" + url.QueryEscape(email))
	if err != nil {
		return buyerEntitlements{}, err
	}
	defer res.Body.Close()
	var v buyerEntitlements
	if res.StatusCode != http.StatusOK {
		return v, fmt.Errorf("GET /entitlements?email=%s: %d", email, res.StatusCode)
	}
	return v, json.NewDecoder(res.Body).Decode(&v)
}

// awaitPlans waits until every buyer's plans are as wanted, and returns their views.
func (r *receiverProcess) awaitPlans(t *testing.T, want map[string]planSummary, within time.Duration) map[string]buyerEntitlements {
	t.Helper()
	views := map[string]buyerEntitlements{}
	var mismatch string
	deadline := time.Now().Add(within)
	for {
		mismatch = ""
		for email, w := range want {
			v, err := r.view(email)
			got := summarize(v)
			if err != nil || !slices.Equal(got.active, w.active) || !slices.Equal(got.revoked, w.revoked) {
				mismatch += fmt.Sprintf("\n%s: active %q revoked %q (%v), want active %q revoked %q", email, got.active, got.revoked, err, w.active, w.revoked)
			}
			views[email] = v
		}
		if mismatch == "" {
			return views
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receiver's entitlements are not what the rules say within %s:%s", within, mismatch)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends the receiver with SIGTERM and requires a clean exit.
func (r *receiverProcess) stop(t *testing.T) {
	t.Helper()
	r.client.CloseIdleConnections()
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("stop the receiver: %v", err)
	}
	select {
	case <-r.exited:
		if r.waitErr != nil {
			t.Errorf("the receiver did not exit cleanly: %v", r.waitErr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the receiver did not stop within 20s of SIGTERM")
	}
}
