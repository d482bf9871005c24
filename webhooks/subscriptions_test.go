package webhooks_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
	"github.com/funnelhq/funnel/webhooks"
	"github.com/funnelhq/funnel/webhooks/verify"
)

// REST Hook subscriptions (for automation tools) through the integration API.
func TestRESTHookLifecycle(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		form := newForm(t, svc, acc.ID, "Signup")
		rcv := newReceiver(t)
		res := svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, map[string]any{
			"hookUrl": rcv.URL + "/zap", "event": "form.submitted", "formIds": []string{form, form}, "secret": "a-secret-of-my-own-123",
		}).Expect(t, http.StatusCreated)
		sub := res.Object(t, "subscription")
		id := sub["id"].(string)
		filters := sub["filters"].(map[string]any)
		if sub["url"] != rcv.URL+"/zap" || servicetest.Strings(t, sub["events"])[0] != "form.submitted" || sub["createdAt"] == nil ||
			len(servicetest.Strings(t, filters["formIds"])) != 1 || servicetest.Strings(t, filters["formIds"])[0] != form || len(servicetest.Strings(t, filters["bumpIds"])) != 0 || sub["secret"] != "a-secret-of-my-own-123" {
			t.Fatalf("subscription = %v", sub)
		}
		hooks := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/webhooks?kind=rest_hook", "").List(t, "webhooks")
		if len(hooks) != 1 || hooks[0]["kind"] != "rest_hook" || hooks[0]["secret"] != nil {
			t.Fatalf("operator list = %v", hooks)
		}
		submit(t, svc, acc.ID, form, "zap@example.com")
		got := rcv.waitFor(t, 1, 5*time.Second)[0]
		if err := verify.Service("a-secret-of-my-own-123", got.body, got.header.Get("X-Service-Signature")); err != nil {
			t.Fatal(err)
		}
		// targetUrl and events[] are accepted too; the legacy checkout.paid means checkout.purchased.
		alt := svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, map[string]any{"targetUrl": rcv.URL, "events": []string{"checkout.paid", "checkout.refunded"}}).
			Expect(t, http.StatusCreated).Object(t, "subscription")
		if evs := servicetest.Strings(t, alt["events"]); len(evs) != 2 || evs[0] != "checkout.purchased" || !strings.HasPrefix(alt["secret"].(string), "whsec_") {
			t.Fatalf("alternative subscription = %v", alt)
		}

		other := svc.NewAccount(t)
		svc.API.Delete(t, "/api/v1/webhooks/subscriptions/"+id, other.Key).ExpectError(t, http.StatusForbidden)
		noScope := svc.NewKey(t, acc.ID, []string{"contacts:read"})
		svc.API.Delete(t, "/api/v1/webhooks/subscriptions/"+id, noScope).ExpectError(t, http.StatusForbidden)
		svc.API.Post(t, "/api/v1/webhooks/subscriptions", noScope, map[string]any{"url": rcv.URL, "event": "form.submitted"}).ExpectError(t, http.StatusForbidden)
		svc.API.Delete(t, "/api/v1/webhooks/subscriptions/"+id, acc.Key).Expect(t, http.StatusOK)
		svc.API.Delete(t, "/api/v1/webhooks/subscriptions/"+id, acc.Key).ExpectError(t, http.StatusNotFound)
		svc.API.Delete(t, "/api/v1/webhooks/subscriptions/wh_unknown", acc.Key).ExpectError(t, http.StatusNotFound)
		// A connection configured in the app is not a REST Hook: the API cannot delete it.
		custom, _ := subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL + "/custom", "events": []string{"scheduling.booked"}})
		svc.API.Delete(t, "/api/v1/webhooks/subscriptions/"+custom, acc.Key).ExpectError(t, http.StatusNotFound)
		if hooks := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/webhooks?kind=custom", "").List(t, "webhooks"); len(hooks) != 1 || hooks[0]["status"] != "active" {
			t.Fatalf("the app's webhook after a REST Hook delete = %v", hooks)
		}
		svc.Operator.Delete(t, "/admin/v1/accounts/"+acc.ID+"/webhooks/"+custom, "").Expect(t, http.StatusOK)
		// submit returns once the webhook projector applied the event: a delivery to the deleted
		// subscription would be in the outbox by now.
		afterDelete := submit(t, svc, acc.ID, form, "after-delete@example.com")
		for _, d := range deliveries(t, svc, acc.ID, "") {
			if d["eventId"] == afterDelete {
				t.Fatalf("an event after the delete was queued: %v", d)
			}
		}
		if rcv.count() != 1 {
			t.Fatalf("a deleted subscription still receives: %d", rcv.count())
		}

		for name, body := range map[string]map[string]any{
			"no url":                             {"event": "form.submitted"},
			"no event":                           {"url": rcv.URL},
			"unknown event":                      {"url": rcv.URL, "event": "contact.created"},
			"ftp url":                            {"url": "ftp://example.com/x", "event": "form.submitted"},
			"url with credentials":               {"url": "https://user:pw@example.com/x", "event": "form.submitted"},
			"another account form":               {"url": rcv.URL, "event": "form.submitted", "formIds": []string{newForm(t, svc, other.ID, "Theirs")}},
			"unknown calendar":                   {"url": rcv.URL, "event": "scheduling.booked", "eventTypeIds": []string{"evt_nope"}},
			"__none__ on products":               {"url": rcv.URL, "event": "checkout.purchased", "productIds": []string{"__none__"}},
			"short secret":                       {"url": rcv.URL, "event": "form.submitted", "secret": "short"},
			"secret of 8 characters in 16 bytes": {"url": rcv.URL, "event": "form.submitted", "secret": strings.Repeat("é", 8)},
			"events not strings":                 {"url": rcv.URL, "events": []any{1}},
		} {
			t.Run(name, func(t *testing.T) {
				svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, body).ExpectError(t, http.StatusBadRequest)
			})
		}
		if hooks := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/webhooks", "").List(t, "webhooks"); len(hooks) != 1 {
			t.Fatalf("refused requests created subscriptions: %v", hooks)
		}
		// 16 to 256 characters, not bytes: 200 characters in 400 bytes are a secret.
		svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, map[string]any{"url": rcv.URL, "event": "form.submitted", "secret": strings.Repeat("é", 200)}).
			Expect(t, http.StatusCreated)
	})
}

// Deleting a subscription gives up its deliveries that were still pending.
func TestDeletedSubscriptionGivesUpPendingDeliveries(t *testing.T) {
	run(t, func(c *service.Config) { c.WebhookBackoffBase = time.Hour; c.WebhookBackoffCap = time.Hour }, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		rcv := newReceiver(t, 500)
		form := newForm(t, svc, acc.ID, "Signup")
		id, _ := subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}})
		submit(t, svc, acc.ID, form, "pending@example.com")
		rcv.waitFor(t, 1, 5*time.Second)
		waitDelivery(t, svc, acc.ID, "pending", 5*time.Second)
		svc.Operator.Delete(t, "/admin/v1/accounts/"+acc.ID+"/webhooks/"+id, "").Expect(t, http.StatusOK)
		d := waitDelivery(t, svc, acc.ID, "failed", 5*time.Second)
		if !strings.Contains(d["lastError"].(string), "deleted") {
			t.Fatalf("given-up delivery = %v", d)
		}
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/webhook-deliveries/"+d["id"].(string)+"/retry", "", nil).ExpectError(t, http.StatusConflict)
	})
}

// Each rotation keeps the secret it replaces signing webhook-signature for 24 hours, however
// soon the next rotation comes: a receiver still on the first secret keeps verifying after a
// second rotation the same day. At most the five newest replaced secrets sign beside the current.
func TestEverySecretReplacedWithinADayKeepsSigning(t *testing.T) {
	run(t, fast, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		rcv := newReceiver(t)
		form := newForm(t, svc, acc.ID, "Signup")
		id, first := subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}})
		secrets := []string{first}
		rotate := func() {
			rotated := svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/webhooks/"+id+"/rotate-secret", "", nil).Expect(t, http.StatusOK)
			secrets = append(secrets, rotated.Object(t, "webhook")["secret"].(string))
		}
		verifies := func(got received, secret string) bool {
			return verify.Standard(secret, got.header, got.body, time.Minute, time.Now()) == nil
		}

		rotate()
		rotate()
		submit(t, svc, acc.ID, form, "twice@example.com")
		got := rcv.waitFor(t, 1, 5*time.Second)[0]
		if n := len(strings.Fields(got.header.Get("webhook-signature"))); n != 3 {
			t.Fatalf("webhook-signature has %d signatures after two rotations, want 3", n)
		}
		for i, secret := range secrets {
			if !verifies(got, secret) {
				t.Errorf("after two rotations, secret %d does not verify webhook-signature", i)
			}
		}
		if got.header.Get("X-Service-Signature") != verify.ServiceSignature(secrets[2], got.body) {
			t.Error("X-Service-Signature is not the newest secret's digest")
		}

		for range 4 {
			rotate()
		}
		submit(t, svc, acc.ID, form, "six-times@example.com")
		got = rcv.waitFor(t, 2, 5*time.Second)[1]
		if n := len(strings.Fields(got.header.Get("webhook-signature"))); n != 6 {
			t.Fatalf("webhook-signature has %d signatures after six rotations, want 6 (the current and five replaced)", n)
		}
		if verifies(got, secrets[0]) {
			t.Error("the first secret, sixth newest of those replaced, still signs")
		}
		for i, secret := range secrets[1:] {
			if !verifies(got, secret) {
				t.Errorf("after six rotations, secret %d does not verify webhook-signature", i+1)
			}
		}
	})
}

// Custom and automation-tool connections of the operator API, listed by kind, with secret rotation.
func TestOperatorWebhooksAndSecretRotation(t *testing.T) {
	run(t, fast, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		rcv := newReceiver(t)
		form := newForm(t, svc, acc.ID, "Signup")
		id, oldSecret := subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}})
		subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL + "/zapier", "events": []string{"scheduling.booked"}, "kind": "zapier"})
		subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL + "/make", "events": []string{"scheduling.booked"}, "kind": "make"})
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/webhooks", "", map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}, "kind": "rest_hook"}).ExpectError(t, http.StatusBadRequest)
		svc.Operator.Post(t, "/admin/v1/accounts/acc_nope/webhooks", "", map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}}).ExpectError(t, http.StatusNotFound)
		all := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/webhooks", "").List(t, "webhooks")
		zapier := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/webhooks?kind=zapier", "").List(t, "webhooks")
		svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/webhooks?kind=bogus", "").ExpectError(t, http.StatusBadRequest)
		if len(all) != 3 || len(zapier) != 1 || zapier[0]["url"] != rcv.URL+"/zapier" || all[0]["status"] != "active" {
			t.Fatalf("all = %v, zapier = %v", all, zapier)
		}

		rotated := svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/webhooks/"+id+"/rotate-secret", "", nil).Expect(t, http.StatusOK).Object(t, "webhook")
		newSecret := rotated["secret"].(string)
		if newSecret == oldSecret {
			t.Fatal("rotation kept the secret")
		}
		submit(t, svc, acc.ID, form, "rotated@example.com")
		got := rcv.waitFor(t, 1, 5*time.Second)[0]
		// X-Service-Signature stays what the contract says, one lowercase hex digest, made with
		// the new secret: a receiver that compares the whole header with its digest still works.
		if sig := got.header.Get("X-Service-Signature"); sig != verify.ServiceSignature(newSecret, got.body) {
			t.Errorf("X-Service-Signature during rotation = %q, want the new secret's digest alone", sig)
		}
		// For 24 hours both secrets sign webhook-signature: a receiver still on the old one keeps
		// verifying.
		for _, secret := range []string{oldSecret, newSecret} {
			if err := verify.Standard(secret, got.header, got.body, time.Minute, time.Now()); err != nil {
				t.Errorf("webhook-signature with a current secret: %v", err)
			}
		}
		if n := len(strings.Fields(got.header.Get("webhook-signature"))); n != 2 {
			t.Fatalf("webhook-signature has %d signatures during rotation", n)
		}
		// The history of the subscription, for auditors, shows both events with their secrets
		// hidden: a secret is shown only in the answer that creates it.
		history := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/history?subscriptionId="+id, "").Expect(t, http.StatusOK)
		if bytes.Contains(history.Raw, []byte(oldSecret)) || bytes.Contains(history.Raw, []byte(newSecret)) {
			t.Fatalf("the history shows a signing secret: %s", history.Raw)
		}
		events := history.List(t, "events")
		if len(events) != 2 || events[0]["type"] != "WebhookSubscribed" || events[1]["type"] != "WebhookSecretRotated" {
			t.Fatalf("subscription history = %s", history.Raw)
		}
		subscribed, rotation := events[0]["data"].(map[string]any), events[1]["data"].(map[string]any)
		if subscribed["secret"] != "[redacted]" || rotation["secret"] != "[redacted]" || rotation["previousSecret"] != "[redacted]" || subscribed["url"] != rcv.URL {
			t.Fatalf("redacted history = %v, %v", subscribed, rotation)
		}
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/webhooks/wh_nope/rotate-secret", "", nil).ExpectError(t, http.StatusNotFound)
		svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/webhook-deliveries?status=lost", "").ExpectError(t, http.StatusBadRequest)
	})
}

// Sample payloads for trigger testing: the account's own recent events when there are some,
// realistic made-up ones otherwise.
func TestSampleEvents(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		for _, name := range webhooks.Events.Names() {
			events := svc.API.Get(t, "/api/v1/webhooks/events/"+name, acc.Key).Expect(t, http.StatusOK).List(t, "events")
			if len(events) != 1 || events[0]["type"] != name || events[0]["id"] == nil || events[0]["createdAt"] == nil || events[0]["data"] == nil {
				t.Fatalf("sample of %s = %v", name, events)
			}
		}
		// The legacy alias, which subscriptions accept, has samples too: of the type it stands for.
		if events := svc.API.Get(t, "/api/v1/webhooks/events/checkout.paid", acc.Key).Expect(t, http.StatusOK).List(t, "events"); len(events) != 1 || events[0]["type"] != "checkout.purchased" {
			t.Fatalf("samples of checkout.paid = %v", events)
		}
		form := newForm(t, svc, acc.ID, "Real")
		eventID := submit(t, svc, acc.ID, form, "real@example.com")
		events := svc.API.Get(t, "/api/v1/webhooks/events/form.submitted", acc.Key).Expect(t, http.StatusOK).List(t, "events")
		if len(events) != 1 || events[0]["id"] != eventID || events[0]["data"].(map[string]any)["formId"] != form {
			t.Fatalf("sample from the account's data = %v", events)
		}
		other := svc.NewAccount(t)
		if theirs := svc.API.Get(t, "/api/v1/webhooks/events/form.submitted", other.Key).List(t, "events"); theirs[0]["id"] == eventID {
			t.Fatal("another account's sample shows this account's data")
		}
		svc.API.Get(t, "/api/v1/webhooks/events/contact.created", acc.Key).ExpectError(t, http.StatusNotFound)
		svc.API.Get(t, "/api/v1/webhooks/events/form.submitted", svc.NewKey(t, acc.ID, []string{"forms:read"})).ExpectError(t, http.StatusForbidden)
	})
}

// Samples built from real events show a real person's email and name: a key sees them only with
// the read scope of that data (forms:read, scheduling:read, checkout:read); a key that may only
// set up webhooks gets the made-up samples, whatever the account holds.
func TestSampleEventsFromRealDataNeedTheirReadScope(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		form := newForm(t, svc, acc.ID, "Real")
		submit(t, svc, acc.ID, form, "former@example.com")
		book(t, svc, acc.ID, newCalendar(t, svc, acc.ID, "Call"), "booker@example.com")
		p := pro(t, svc, acc.ID)
		pay(t, svc, acc.ID, "purchases", map[string]any{"productId": p.ID, "pricingTierId": p.TierIDs[0], "email": "buyer@example.com", "name": "Real Buyer"})
		real := map[string]string{ // event type → the real person's email its samples would show
			"form.submitted": "former@example.com", "scheduling.booked": "booker@example.com", "checkout.purchased": "buyer@example.com",
		}
		readScope := map[string]string{"form.submitted": "forms:read", "scheduling.booked": "scheduling:read", "checkout.purchased": "checkout:read"}

		writeOnly := svc.NewKey(t, acc.ID, []string{"webhooks:write"})
		for name, email := range real {
			res := svc.API.Get(t, "/api/v1/webhooks/events/"+name, writeOnly).Expect(t, http.StatusOK)
			if bytes.Contains(res.Raw, []byte(email)) || bytes.Contains(res.Raw, []byte("Real Buyer")) {
				t.Errorf("a webhooks:write key reads real data in the samples of %s: %s", name, res.Raw)
			}
			if events := res.List(t, "events"); len(events) != 1 || !strings.Contains(string(res.Raw), "ada@example.com") {
				t.Errorf("samples of %s for a webhooks:write key = %s, want the made-up one", name, res.Raw)
			}
			// With the read scope of the data, the account's real event; with another's, still not.
			reader := svc.NewKey(t, acc.ID, []string{"webhooks:write", readScope[name]})
			if res := svc.API.Get(t, "/api/v1/webhooks/events/"+name, reader).Expect(t, http.StatusOK); !bytes.Contains(res.Raw, []byte(email)) {
				t.Errorf("samples of %s with %s = %s, want the real event", name, readScope[name], res.Raw)
			}
			for other, otherScope := range readScope {
				if other == name {
					continue
				}
				key := svc.NewKey(t, acc.ID, []string{"webhooks:write", otherScope})
				if res := svc.API.Get(t, "/api/v1/webhooks/events/"+name, key).Expect(t, http.StatusOK); bytes.Contains(res.Raw, []byte(email)) {
					t.Errorf("samples of %s with only %s show real data: %s", name, otherScope, res.Raw)
				}
			}
		}
		// The legacy alias needs the scope of the type it stands for.
		if res := svc.API.Get(t, "/api/v1/webhooks/events/checkout.paid", writeOnly).Expect(t, http.StatusOK); bytes.Contains(res.Raw, []byte("buyer@example.com")) {
			t.Errorf("checkout.paid samples show real data to a webhooks:write key: %s", res.Raw)
		}
	})
}

// The SSRF guard: without FUNNEL_WEBHOOK_ALLOW_PRIVATE, only public https targets, checked when
// subscribing and again on the address actually dialled.
func TestTargetGuard(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		svc := servicetest.Start(t, d, func(c *service.Config) { fast(c); c.WebhookAllowPrivate = false })
		acc := svc.NewAccount(t)
		for _, url := range []string{
			"http://example.com/hook",           // not https
			"https://127.0.0.1/hook",            // loopback
			"https://localhost:8443/hook",       // a name that resolves to loopback
			"https://api.localhost/hook",        // another one
			"https://10.1.2.3/hook",             // private
			"https://192.168.0.10/hook",         // private
			"https://172.20.0.1/hook",           // private
			"https://169.254.169.254/latest",    // link-local: the cloud metadata service
			"https://100.100.100.200/meta",      // CGNAT, another metadata address
			"https://[::1]/hook",                // IPv6 loopback
			"https://[fd00:ec2::254]/hook",      // IPv6 unique local
			"https://[::ffff:127.0.0.1]/hook",   // IPv4-mapped loopback
			"https://0.0.0.0/hook",              // unspecified
			"https://0.1.2.3/hook",              // "this network"
			"https://198.18.0.1/hook",           // benchmarking
			"https://240.0.0.1/hook",            // reserved
			"https://[::127.0.0.1]/hook",        // IPv4-compatible loopback
			"https://[64:ff9b::7f00:1]/hook",    // NAT64 of loopback
			"https://[64:ff9b::a9fe:a9fe]/hook", // NAT64 of the metadata service
			"https://[2002:7f00:1::]/hook",      // 6to4 of loopback
			"https://no-such-host.invalid/hook", // does not resolve
		} {
			msg := svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, map[string]any{"url": url, "event": "form.submitted"}).ExpectError(t, http.StatusBadRequest)
			if !strings.Contains(msg, "url") {
				t.Errorf("%s refused with %q", url, msg)
			}
		}
		// A subscription whose host resolved to a public address when it was made, and to
		// loopback now (DNS rebinding): recorded here straight in the log, as the guard would
		// have let it through. The dialer refuses the loopback address.
		rcv := newReceiver(t)
		form := newForm(t, svc, acc.ID, "Signup")
		port := rcv.URL[strings.LastIndex(rcv.URL, ":")+1:]
		sub := domain.NewID("wh")
		record(t, svc, acc.ID, domain.StreamAppend{StreamID: sub, Events: []domain.Event{domain.WebhookSubscribed{
			SubscriptionID: sub, AccountID: acc.ID, Kind: domain.WebhookKindCustom, URL: "https://localhost:" + port + "/hook",
			Events: []string{"form.submitted"}, Secret: domain.NewWebhookSecret()}}})
		submit(t, svc, acc.ID, form, "rebind@example.com")
		deadline := time.Now().Add(5 * time.Second)
		for {
			list := deliveries(t, svc, acc.ID, "")
			if len(list) == 1 && len(list[0]["attempts"].([]any)) > 0 {
				attempt := list[0]["attempts"].([]any)[0].(map[string]any)
				if attempt["statusCode"] != float64(0) || !strings.Contains(attempt["error"].(string), "refused") {
					t.Fatalf("attempt = %v", attempt)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no attempt recorded: %v", list)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if rcv.count() != 0 {
			t.Fatal("the dialer connected to a loopback address")
		}
	})
}

// Every IPv6 form of a special-purpose IPv4 address (webhooks.IPv6FormsOfSpecialIPv4, among them
// the IPv4-translated ::ffff:0:127.0.0.1 that once got through) is refused when subscribing, and
// again when connecting: subscriptions recorded straight in the log, as if the guard had let them
// through, get attempts the dialer refused, and the receiver behind the loopback ones gets nothing.
func TestTargetGuardRefusesIPv6FormsOfSpecialIPv4(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		svc := servicetest.Start(t, d, func(c *service.Config) { fast(c); c.WebhookAllowPrivate = false })
		acc := svc.NewAccount(t)
		for _, addr := range webhooks.IPv6FormsOfSpecialIPv4 {
			url := "https://[" + addr + "]/hook"
			msg := svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, map[string]any{"url": url, "event": "form.submitted"}).ExpectError(t, http.StatusBadRequest)
			if msg != "url must not point to a loopback, private, link-local or metadata address" {
				t.Errorf("%s refused with %q", url, msg)
			}
		}

		rcv := newReceiver(t)
		port := rcv.URL[strings.LastIndex(rcv.URL, ":")+1:]
		form := newForm(t, svc, acc.ID, "Signup")
		urls := map[string]string{} // subscription id → its address
		for _, addr := range webhooks.IPv6FormsOfSpecialIPv4 {
			sub := domain.NewID("wh")
			urls[sub] = addr
			record(t, svc, acc.ID, domain.StreamAppend{StreamID: sub, Events: []domain.Event{domain.WebhookSubscribed{
				SubscriptionID: sub, AccountID: acc.ID, Kind: domain.WebhookKindCustom, URL: "https://[" + addr + "]:" + port + "/hook",
				Events: []string{"form.submitted"}, Secret: domain.NewWebhookSecret()}}})
		}
		submit(t, svc, acc.ID, form, "guard@example.com")
		deadline := time.Now().Add(10 * time.Second)
		for {
			list := deliveries(t, svc, acc.ID, "?limit=200")
			attempted := 0
			for _, d := range list {
				attempts := d["attempts"].([]any)
				if len(attempts) == 0 {
					continue
				}
				attempted++
				first := attempts[0].(map[string]any)
				if first["statusCode"] != float64(0) || first["error"] != "refused: the target resolves to a private or loopback address" {
					t.Errorf("the attempt to %s: %v", urls[d["webhookId"].(string)], first)
				}
			}
			if len(list) == len(urls) && attempted == len(urls) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d deliveries attempted", attempted, len(urls))
			}
			time.Sleep(20 * time.Millisecond)
		}
		if rcv.count() != 0 {
			t.Fatal("the dialer connected to a loopback address")
		}
	})
}

// The event types of a subscription are checked with the messages integrators know.
func TestSubscriptionEventTypeErrors(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		rcv := newReceiver(t)
		for _, tc := range []struct {
			body map[string]any
			want string
		}{
			{map[string]any{"url": rcv.URL, "events": []string{}}, "events: at least one event type is required"},
			{map[string]any{"url": rcv.URL, "events": []string{"form.submitted", "contact.created"}}, `events: unknown event type "contact.created"`},
			{map[string]any{"url": rcv.URL, "event": "checkout.paid", "events": []string{"unknown.one"}}, `events: unknown event type "unknown.one"`},
		} {
			if got := svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, tc.body).ExpectError(t, http.StatusBadRequest); got != tc.want {
				t.Errorf("error = %q, want %q", got, tc.want)
			}
		}
	})
}

// A delivery being sent when its subscription is deleted is given up at once and counted once:
// the attempt in flight is recorded when it ends, but neither revives the delivery nor counts it
// again, whatever the target answered.
func TestDeletingASubscriptionWhileADeliveryIsInFlight(t *testing.T) {
	for _, answer := range []int{http.StatusOK, http.StatusInternalServerError} {
		t.Run(strconv.Itoa(answer), func(t *testing.T) {
			run(t, func(c *service.Config) { c.WebhookBackoffBase = time.Hour; c.WebhookBackoffCap = time.Hour }, func(t *testing.T, svc *servicetest.Service) {
				arrived, release := make(chan struct{}, 1), make(chan struct{})
				target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
					body, _ := io.ReadAll(req.Body)
					servicetest.CheckWebhook(t, req.Header, body)
					arrived <- struct{}{}
					<-release
					w.WriteHeader(answer)
				}))
				t.Cleanup(target.Close)
				t.Cleanup(func() {
					select {
					case <-release:
					default:
						close(release)
					}
				})
				acc := svc.NewAccount(t)
				form := newForm(t, svc, acc.ID, "Signup")
				id, _ := subscribe(t, svc, acc.ID, map[string]any{"url": target.URL, "events": []string{"form.submitted"}})
				submit(t, svc, acc.ID, form, "inflight@example.com")
				select {
				case <-arrived:
				case <-time.After(10 * time.Second):
					t.Fatal("the delivery was never sent")
				}
				svc.Operator.Delete(t, "/admin/v1/accounts/"+acc.ID+"/webhooks/"+id, "").Expect(t, http.StatusOK)
				waitDelivery(t, svc, acc.ID, "failed", 5*time.Second)
				close(release)
				// The attempt ends and is recorded; the delivery stays given up.
				deadline := time.Now().Add(10 * time.Second)
				for {
					d := deliveries(t, svc, acc.ID, "")[0]
					if attempts, _ := d["attempts"].([]any); len(attempts) == 1 {
						if d["status"] != "failed" || !strings.Contains(d["lastError"].(string), "deleted") {
							t.Fatalf("after the attempt in flight ended the delivery is %v", d)
						}
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("the attempt in flight was never recorded: %v", d)
					}
					time.Sleep(20 * time.Millisecond)
				}
				metrics := string(svc.Operator.Get(t, "/metrics", "").Expect(t, http.StatusOK).Raw)
				if !strings.Contains(metrics, `funnel_webhook_deliveries_total{outcome="given_up"} 1`+"\n") {
					t.Fatalf("given_up is not counted exactly once:\n%s", grepLines(metrics, "funnel_webhook_deliveries_total"))
				}
			})
		})
	}
}

// Many deliveries in flight end while their subscription is deleted: the dispatcher records
// their attempts while the projector gives the same deliveries up. Both lock the rows in one
// order, so one waits for the other: every attempt made is recorded, none lost to a deadlock
// (which rolled back the dispatcher's record and lost its attempts).
func TestEndingASubscriptionWhileManyAttemptsAreRecorded(t *testing.T) {
	const inFlight, rounds = 40, 4
	run(t, func(c *service.Config) { c.WebhookBackoffBase = time.Hour; c.WebhookBackoffCap = time.Hour }, func(t *testing.T, svc *servicetest.Service) {
		for round := range rounds {
			// Each request waits for an answer of its own, so that the test chooses the order
			// in which the attempts end.
			arrived := make(chan chan struct{}, inFlight)
			target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				io.Copy(io.Discard, req.Body)
				answer := make(chan struct{})
				arrived <- answer
				<-answer
				w.WriteHeader(http.StatusInternalServerError)
			}))
			t.Cleanup(target.Close)
			acc := svc.NewAccount(t)
			form := newForm(t, svc, acc.ID, "Signup")
			id, _ := subscribe(t, svc, acc.ID, map[string]any{"url": target.URL, "events": []string{"form.submitted"}})
			for i := range inFlight {
				submit(t, svc, acc.ID, form, fmt.Sprintf("r%d-%d@example.com", round, i))
			}
			var waiting []chan struct{}
			for range inFlight {
				select {
				case answer := <-arrived:
					waiting = append(waiting, answer)
				case <-time.After(10 * time.Second):
					for _, answer := range waiting {
						close(answer)
					}
					t.Fatalf("round %d: only %d of %d deliveries were sent", round, len(waiting), inFlight)
				}
			}
			// The attempts end a few at a time, the last sent first, while the deletion is made
			// and projected: records of several deliveries, in an order of their own, overlap
			// the giving up of the same deliveries.
			answered := make(chan struct{})
			go func() {
				defer close(answered)
				for i := len(waiting) - 1; i >= 0; i-- {
					close(waiting[i])
					if i%4 == 0 {
						time.Sleep(time.Millisecond)
					}
				}
			}()
			time.Sleep(3 * time.Millisecond)
			svc.Operator.Delete(t, "/admin/v1/accounts/"+acc.ID+"/webhooks/"+id, "").Expect(t, http.StatusOK)
			<-answered
			for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				list := deliveries(t, svc, acc.ID, "?limit=100")
				attempted, failed := 0, 0
				for _, d := range list {
					attempted += len(d["attempts"].([]any))
					if d["status"] == "failed" {
						failed++
					}
				}
				if attempted == inFlight && failed == inFlight {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("round %d: %d of %d attempts recorded, %d of %d deliveries failed", round, attempted, inFlight, failed, inFlight)
				}
			}
		}
	})
}

func grepLines(text, prefix string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// A subscription made while private targets were allowed keeps its http:// URL once they no
// longer are (a restart without FUNNEL_WEBHOOK_ALLOW_PRIVATE): the scheme is checked again before
// every attempt, and the delivery fails with an error that says so, no request sent.
func TestHTTPTargetRefusedAtSendOnceNoLongerAllowed(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		url := sqldbtest.URL(t, d)
		allowed := servicetest.StartOn(t, url, fast)
		acc := allowed.NewAccount(t)
		rcv := newReceiver(t)
		form := newForm(t, allowed, acc.ID, "Signup")
		subscribe(t, allowed, acc.ID, map[string]any{"url": rcv.URL + "/hook", "events": []string{"form.submitted"}})
		allowed.Stop()

		svc := servicetest.StartOn(t, url, func(c *service.Config) { fast(c); c.WebhookAllowPrivate = false })
		submit(t, svc, acc.ID, form, "plain@example.com")
		deadline := time.Now().Add(10 * time.Second)
		for {
			list := deliveries(t, svc, acc.ID, "")
			if len(list) == 1 && len(list[0]["attempts"].([]any)) > 0 {
				attempt := list[0]["attempts"].([]any)[0].(map[string]any)
				if attempt["statusCode"] != float64(0) || !strings.Contains(attempt["error"].(string), "not https") {
					t.Fatalf("attempt = %v", attempt)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no attempt recorded: %v", list)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if rcv.count() != 0 {
			t.Fatal("a request was sent to the http target")
		}
	})
}
