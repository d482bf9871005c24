package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/webhooks"
)

// The console's pages are the service's own files with a strict Content-Security-Policy, need no
// token (they hold no data), and answer a wrong method 405.
func TestConsolePagesAreServedWithAStrictPolicy(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		for _, path := range []string{"/console/", "/console/js/app.js", "/console/console.css"} {
			res, err := client.Get(svc.Operator.URL() + path)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			csp := res.Header.Get("Content-Security-Policy")
			if res.StatusCode != http.StatusOK || !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") ||
				strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "frame-ancestors 'none'") || res.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("GET %s: %d, Content-Security-Policy %q", path, res.StatusCode, csp)
			}
		}
		res, err := client.Get(svc.Operator.URL() + "/console")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "/console/" {
			t.Errorf("GET /console: %d to %q", res.StatusCode, res.Header.Get("Location"))
		}
		res, err = client.Post(svc.Operator.URL()+"/console/", "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("POST /console/: %d", res.StatusCode)
		}
		if res := svc.Operator.Get(t, "/console/nothing.js", ""); res.Status != http.StatusNotFound {
			t.Errorf("GET /console/nothing.js: %d", res.Status)
		}
	})
}

// An operator's day in the console, in headless Chromium, on each store: a wrong token is
// refused with its error; with the right one, find a contact by email, read its timeline and its
// purchases, follow its billing subscription's timeline, open the failing delivery of a webhook
// and retry it once the receiver is back, replay a time window of it and see the receiver get the
// event again, enable it once disabled, open an erased contact's timeline, and rebuild a read model. With
// FUNNEL_CONSOLE_SCREENSHOTS=1 it writes a screenshot of each page to docs/console/ (SQLite run).
func TestConsoleInChromium(t *testing.T) {
	browser := startChromium(t)
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		d := seedDemo(t, svc)
		shots := os.Getenv("FUNNEL_CONSOLE_SCREENSHOTS") != "" && svc.Dialect == sqldb.SQLite
		shot := func(name string, capture chromedp.Action[[]byte]) {}
		tab := newTab(t, browser)
		if shots {
			shot = func(name string, capture chromedp.Action[[]byte]) {
				t.Helper()
				var png []byte
				run(t, tab, "screenshot "+name, chromedp.Sleep(300*time.Millisecond), into(&png, capture))
				if err := os.WriteFile(filepath.Join("..", "..", "docs", "console", name+".png"), png, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		accountPage := "#/accounts/" + d.accountID

		// A wrong token: the service refuses it and the page says so.
		var loginError string
		run(t, tab, "wrong token",
			chromedp.Navigate(svc.Operator.URL()+"/console/"),
			chromedp.WaitVisible(css("#token")),
			chromedp.SendKeys(css("#token"), "not-the-operator-token"),
			chromedp.Click(css(`form.login button[type="submit"]`)),
			chromedp.WaitVisible(css("#login-error .error")),
			into(&loginError, chromedp.Text(css("#login-error"))))
		if !strings.Contains(loginError, "refused") {
			t.Errorf("after a wrong token: %q", loginError)
		}
		shot("login-refused", chromedp.FullScreenshot(100))

		// The right token opens the accounts.
		var accounts string
		run(t, tab, "sign in",
			chromedp.Clear(css("#token")),
			chromedp.SendKeys(css("#token"), servicetest.AdminToken),
			chromedp.Click(css(`form.login button[type="submit"]`)),
			chromedp.WaitVisible(css(`main table a[href="`+accountPage+`/contacts"]`)),
			into(&accounts, chromedp.Text(css("main table"))))
		if !strings.Contains(accounts, "Demo Account") {
			t.Errorf("accounts page: %q", accounts)
		}
		var stored string
		run(t, tab, "where the token is", into(&stored, chromedp.Evaluate[string](`JSON.stringify([sessionStorage.getItem('funnel.operatorToken'), localStorage.length, location.href, document.cookie])`)))
		if want := `["` + servicetest.AdminToken + `",0,"`; !strings.HasPrefix(stored, want) || strings.Contains(strings.TrimPrefix(stored, want), servicetest.AdminToken) {
			t.Errorf("token kept as %s: want it in sessionStorage only", stored)
		}
		shot("accounts", chromedp.FullScreenshot(100))

		// Find Ada by email (typed in another case) and open her timeline.
		var found []string
		run(t, tab, "search by email",
			chromedp.Click(css(`main table a[href="`+accountPage+`/contacts"]`)),
			chromedp.WaitVisible(css("#email-search")),
			chromedp.WaitVisible(css("table.contacts tbody tr")),
			chromedp.SendKeys(css("#email-search"), "ADA@example.com"),
			chromedp.SendKeys(css("#email-search"), "\r"),
			// The search's page, not the list still shown while it loads: its table names the search.
			chromedp.WaitVisible(css(`table.contacts[data-search] a[href="`+accountPage+`/contacts/`+d.adaID+`"]`)),
			into(&found, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('table.contacts tbody tr')).map(r => r.textContent)`)))
		if len(found) != 1 || !strings.Contains(found[0], "ada@example.com") {
			t.Errorf("search for ADA@example.com found %q", found)
		}
		shot("contacts-search", chromedp.FullScreenshot(100))

		var types []string
		var facts, data string
		run(t, tab, "open the timeline",
			chromedp.Click(css(`table.contacts a[href="`+accountPage+`/contacts/`+d.adaID+`"]`)),
			chromedp.WaitVisible(css(".events .event")),
			chromedp.WaitVisible(css(".facts dl")),
			into(&types, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('.events .event')).map(e => e.dataset.type)`)),
			into(&facts, chromedp.Text(css(".facts"))),
			chromedp.Click(css(".events .event details summary")),
			chromedp.WaitVisible(css(".events .event details pre.json")),
			into(&data, chromedp.Text(css(".events .event details pre.json"))))
		for _, want := range []string{"ContactCreated", "TagApplied", "LeadCreated", "EmailQueued"} {
			if !slices.Contains(types, want) {
				t.Errorf("timeline %v: no %s", types, want)
			}
		}
		for _, want := range []string{"Lead", "Newsletter", "Customer", "Analytical Engines Ltd", "Sales", "Won", "Pro Plan", "$248.00"} {
			if !strings.Contains(facts, want) {
				t.Errorf("beside the timeline: no %q in %q", want, facts)
			}
		}
		if !strings.Contains(data, "ada@example.com") {
			t.Errorf("the first event's data: %q", data)
		}
		shot("contact-timeline", chromedp.FullScreenshot(100))

		// Newest first: the purchase, the last thing that happened to Ada, comes first.
		var newest []string
		run(t, tab, "newest first",
			chromedp.Click(css(`.timeline button[data-order="newest"]`)),
			chromedp.WaitVisible(css(`ol.events[data-order="newest"] .event`)),
			into(&newest, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('.events .event')).map(e => e.dataset.type)`)))
		if len(newest) != len(types) || len(newest) == 0 || newest[0] != types[len(types)-1] || newest[len(newest)-1] != types[0] {
			t.Errorf("newest first %v, oldest first %v: want one the other reversed", newest, types)
		}

		var subTypes []string
		run(t, tab, "a billing subscription's timeline",
			chromedp.Click(css(`.facts a[href="`+accountPage+`/subscriptions/`+d.subscriptionID+`"]`)),
			chromedp.WaitVisible(css(`.events .event[data-type="SubscriptionStarted"]`)),
			into(&subTypes, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('.events .event')).map(e => e.dataset.type)`)))
		if !slices.Contains(subTypes, "CheckoutPurchased") || !slices.Contains(subTypes, "ActivationIssued") || !slices.Contains(subTypes, "CheckoutRebilled") {
			t.Errorf("subscription timeline: %v", subTypes)
		}
		shot("subscription-timeline", chromedp.FullScreenshot(100))

		// The webhook's failing delivery: its attempt shows the 500; retried once the receiver is
		// back, it succeeds.
		row := `tr.delivery[data-delivery="` + d.deliveryID + `"]`
		var attempts string
		run(t, tab, "the delivery log",
			goTo(accountPage+"/webhooks"),
			chromedp.WaitVisible(css(`main table a[href="`+accountPage+`/webhooks/`+d.webhookID+`"]`)))
		shot("webhooks", chromedp.FullScreenshot(100))
		run(t, tab, "open a failing delivery",
			chromedp.Click(css(`main table a[href="`+accountPage+`/webhooks/`+d.webhookID+`"]`)),
			chromedp.WaitVisible(css(row+`[data-status="pending"]`)),
			chromedp.Click(css(row+` button[aria-controls]`)),
			chromedp.WaitVisible(css(`tr.attempts table.inner`)),
			into(&attempts, chromedp.Text(css(`tr.attempts table.inner`))))
		if !strings.Contains(attempts, "500") || !strings.Contains(attempts, "ms") {
			t.Errorf("attempts of the failing delivery: %q", attempts)
		}
		shot("deliveries", chromedp.FullScreenshot(100))
		d.receiver.recovered.Store(true)
		before := d.receiver.received.Load()
		run(t, tab, "retry it",
			chromedp.Click(css(row+` button.retry`)),
			chromedp.WaitVisible(css(`#confirm[open] #confirm-ok`)),
			chromedp.Click(css(`#confirm-ok`)),
			chromedp.WaitVisible(css(row+`[data-status="succeeded"]`)))
		if d.receiver.received.Load() <= before {
			t.Errorf("the receiver got nothing after the retry")
		}

		// A replay of a time window, driven with the keyboard: the purchase's event ticked, the
		// form sent with Enter, the confirmation reached with Tab. The console says how many
		// deliveries the replay recorded, the receiver gets the purchase's envelope again under a
		// new delivery id, and the log shows the replayed delivery succeeded.
		purchase := d.receiver.got()[0].envelopeID
		var replayed, replayResult string
		run(t, tab, "replay a window",
			chromedp.WaitVisible(css(`form.replay #replay-from`)),
			chromedp.Focus(css(`form.replay input[name="types"][value="checkout.purchased"]`)),
			chromedp.KeyEvent(" "),
			chromedp.Focus(css(`#replay-submit`)),
			chromedp.KeyEvent("\r"),
			chromedp.WaitVisible(css(`#confirm[open] #confirm-ok`)),
			chromedp.KeyEvent("\t"),
			chromedp.KeyEvent("\r"),
			chromedp.WaitVisible(css(`#replay-result [data-replayed]`)),
			into(&replayed, chromedp.Evaluate[string](`document.querySelector('#replay-result [data-replayed]').dataset.replayed`)),
			into(&replayResult, chromedp.Text(css(`#replay-result`))))
		if replayed != "1" || !strings.Contains(replayResult, "recorded 1 delivery") {
			t.Errorf("the replay of the window: %s deliveries, %q; want the purchase's 1", replayed, replayResult)
		}
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			again := false
			for _, r := range d.receiver.got() {
				again = again || (r.envelopeID == purchase && r.deliveryID != d.deliveryID)
			}
			if again {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the receiver never got the purchase's envelope %s again: %v", purchase, d.receiver.got())
			}
		}
		run(t, tab, "the replayed delivery in the log",
			chromedp.WaitVisible(css(`tr.delivery[data-status="succeeded"]:not([data-delivery="`+d.deliveryID+`"])`)))
		shot("replay", chromedp.FullScreenshot(100))

		// A disabled webhook (as after a 410) offers Enable, in the list and on its page:
		// confirmed, the API enables it and the page shows it active, and so does the list.
		ctx := context.Background()
		pos, err := svc.App.Commands().DisableWebhookSubscription.Handle(ctx, commands.DisableWebhookSubscription{
			AccountID: d.accountID, SubscriptionID: d.webhookID, Reason: webhooks.ReasonGone})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.App.ReadModels().WaitReadModels(ctx, pos); err != nil {
			t.Fatal(err)
		}
		var enabledNotice string
		listed := `tr.webhook[data-webhook="` + d.webhookID + `"]`
		run(t, tab, "enable the disabled webhook",
			goTo(accountPage+"/webhooks"),
			chromedp.WaitVisible(css(listed+`[data-status="disabled"] button.enable`)),
			chromedp.Click(css(listed+` a`)),
			chromedp.WaitVisible(css(`p.webhook-summary[data-status="disabled"] button.enable`)),
			chromedp.Click(css(`p.webhook-summary button.enable`)),
			chromedp.WaitVisible(css(`#confirm[open] #confirm-ok`)),
			chromedp.Click(css(`#confirm-ok`)),
			chromedp.WaitVisible(css(`p.webhook-summary[data-status="active"]`)),
			into(&enabledNotice, chromedp.Text(css(`[data-enabled]`))))
		if !strings.Contains(enabledNotice, "active again") {
			t.Errorf("after enabling: %q", enabledNotice)
		}
		run(t, tab, "the enabled webhook in the list",
			goTo(accountPage+"/webhooks"),
			chromedp.WaitVisible(css(listed+`[data-status="active"]`)))
		if hooks := svc.Operator.Get(t, "/admin/v1/accounts/"+d.accountID+"/webhooks", "").Expect(t, http.StatusOK).List(t, "webhooks"); hooks[0]["status"] != "active" {
			t.Errorf("the API lists the enabled webhook as %v", hooks[0]["status"])
		}

		// An erased contact (erased through the operator API) still has its timeline: every event
		// with the erased values shown as erased, and ContactErased last; no error, no blank.
		svc.Operator.Post(t, "/admin/v1/accounts/"+d.accountID+"/contacts/"+d.graceID+"/erase", "", map[string]any{}).Expect(t, http.StatusOK)
		var erasedTypes []string
		var erasedNotice, createdSummary, createdData string
		var errorsShown int
		run(t, tab, "an erased contact's timeline",
			goTo(accountPage+"/contacts/"+d.graceID),
			chromedp.WaitVisible(css(`.events .event[data-type="ContactErased"]`)),
			chromedp.WaitVisible(css(`.facts .notice`)),
			into(&erasedTypes, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('.events .event')).map(e => e.dataset.type)`)),
			into(&erasedNotice, chromedp.Text(css(`.facts .notice`))),
			into(&createdSummary, chromedp.Text(css(`.events .event[data-type="ContactCreated"] .event-summary`))),
			chromedp.Click(css(`.events .event[data-type="ContactCreated"] details summary`)),
			chromedp.WaitVisible(css(`.events .event[data-type="ContactCreated"] details pre.json`)),
			into(&createdData, chromedp.Text(css(`.events .event[data-type="ContactCreated"] details pre.json`))),
			into(&errorsShown, chromedp.Evaluate[int](`document.querySelectorAll('main .error').length`)))
		if len(erasedTypes) < 3 || erasedTypes[0] != "ContactCreated" || erasedTypes[len(erasedTypes)-1] != "ContactErased" || !slices.Contains(erasedTypes, "TagApplied") {
			t.Errorf("the erased contact's timeline: %v, want its events from ContactCreated to ContactErased", erasedTypes)
		}
		if !strings.Contains(erasedNotice, "erased") || errorsShown != 0 {
			t.Errorf("the erased contact's page: %q, %d errors shown", erasedNotice, errorsShown)
		}
		if !strings.Contains(strings.ToLower(createdSummary), "email: erased") {
			t.Errorf("the erased contact's first event reads %q, want its email shown as erased", createdSummary)
		}
		for _, gone := range []string{"grace@example.com", "Grace", "Hopper", "null"} {
			if strings.Contains(createdData, gone) {
				t.Errorf("the erased contact's first event shows %q: %s", gone, createdData)
			}
		}
		if data := strings.ToLower(createdData); !strings.Contains(data, `"email": erased`) || !strings.Contains(data, `"firstname": erased`) || !strings.Contains(data, `"lastname": erased`) {
			t.Errorf("the erased contact's first event: %s, want email, first and last name shown as erased", createdData)
		}
		shot("contact-erased", chromedp.FullScreenshot(100))

		// On a phone's width the replay form fits the screen: nothing is wider than the page (the
		// delivery log scrolls inside its own box).
		var overflow string
		run(t, tab, "the replay form on a phone",
			chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)),
			goTo(accountPage+"/webhooks/"+d.webhookID),
			chromedp.WaitVisible(css(`form.replay #replay-submit`)),
			chromedp.WaitVisible(css(`tr.delivery`)),
			into(&overflow, chromedp.Evaluate[string](`(() => {
				const wide = [document.documentElement, ...document.querySelectorAll('form.replay, form.replay *')]
					.filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1);
				return wide.map((e) => e.tagName + (e.id ? '#' + e.id : '')).join(' ');
			})()`)))
		if overflow != "" {
			t.Errorf("on a phone's width these are wider than the screen: %s", overflow)
		}
		shot("replay-phone", chromedp.CaptureScreenshot())
		run(t, tab, "back to a laptop's screen", chromedp.EmulateViewport(1280, 900))

		// A rebuild, confirmed, runs to its end.
		var rebuilt string
		run(t, tab, "rebuild a projection",
			goTo("#/projections"),
			chromedp.WaitVisible(css(`button.rebuild[data-projection="contacts"]`)))
		shot("projections", chromedp.FullScreenshot(100))
		run(t, tab, "rebuild contacts",
			chromedp.Click(css(`button.rebuild[data-projection="contacts"]`)),
			chromedp.WaitVisible(css(`#confirm[open] #confirm-ok`)),
			chromedp.Click(css(`#confirm-ok`)),
			chromedp.WaitVisible(css(`[data-rebuilt="contacts"]`)),
			into(&rebuilt, chromedp.Text(css(`[data-rebuilt="contacts"]`))))
		if !strings.Contains(rebuilt, "rebuilt from the log up to position") {
			t.Errorf("after the rebuild: %q", rebuilt)
		}

		// The cluster view lists this very process (the one serving the console) with its role
		// and the work it runs.
		var process string
		run(t, tab, "the cluster view", goTo("#/cluster"),
			chromedp.WaitVisible(css(`main table tr.process[data-process="`+svc.App.ProcessID()+`"]`)),
			into(&process, chromedp.Text(css(`main table tr.process[data-process="`+svc.App.ProcessID()+`"]`))))
		if !strings.Contains(process, "dispatcher") {
			t.Errorf("this process in the cluster view: %q, want it to run the dispatcher", process)
		}
		shot("cluster", chromedp.FullScreenshot(100))

		// A token that stops being valid mid-session (FUNNEL_ADMIN_TOKEN changed): the next call is
		// refused and the console asks for the token again, saying why, and forgets the old one.
		var expired, kept string
		run(t, tab, "an expired token",
			into(&kept, chromedp.Evaluate[string](`sessionStorage.setItem('funnel.operatorToken', 'an-old-token'), 'set'`)),
			goTo("#/projections"),
			chromedp.WaitVisible(css("#login-error .error")),
			into(&expired, chromedp.Text(css("#login-error"))),
			into(&kept, chromedp.Evaluate[string](`String(sessionStorage.getItem('funnel.operatorToken'))`)))
		if !strings.Contains(expired, "refused") || kept != "null" {
			t.Errorf("after the token expired: %q, token kept %q", expired, kept)
		}

		if shots {
			run(t, tab, "sign in again",
				chromedp.SendKeys(css("#token"), servicetest.AdminToken),
				chromedp.Click(css(`form.login button[type="submit"]`)),
				chromedp.WaitVisible(css("main table")))
			run(t, tab, "a phone's screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)),
				goTo(accountPage+"/contacts/"+d.adaID), chromedp.WaitVisible(css(".events .event")), chromedp.WaitVisible(css(".facts dl")))
			shot("contact-phone", chromedp.CaptureScreenshot())
		}
	})
}

// A contact with 6,000 events opens at once: the timeline reads its first page of the log (50
// events) and offers the rest a page at a time, on each store. The test checks the requests the
// page made, not how long it took: a wall-clock limit fails on a busy machine and proves less.
func TestConsoleOpensALongTimelineAtOnce(t *testing.T) {
	browser := startChromium(t)
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		tag := svc.NewTag(t, acc.ID, "Newsletter")
		res := svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "busy@example.com"})
		contact := res.Object(t, "contact")["id"].(string)
		// 6,000 events: the newsletter tag applied and removed 3,000 times, straight in the log.
		events := make([]domain.Event, 0, 6000)
		for len(events) < 6000 {
			events = append(events, domain.TagApplied{ContactID: contact, TagID: tag, TagName: "Newsletter"}, domain.TagRemoved{ContactID: contact, TagID: tag, TagName: "Newsletter"})
		}
		pos, err := svc.App.Store().Append(t.Context(), domain.Metadata{AccountID: acc.ID, Actor: "test"},
			domain.StreamAppend{StreamID: contact, ExpectedVersion: domain.AnyVersion, Events: events})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.App.ReadModels().WaitReadModels(t.Context(), pos); err != nil {
			t.Fatal(err)
		}

		tab := newTab(t, browser)
		signIn(t, svc, tab)
		var shown int
		var pages []string
		historyPages := into(&pages, chromedp.Evaluate[[]string](`performance.getEntriesByType('resource').map((e) => e.name).filter((u) => u.includes('/history?'))`))
		run(t, tab, "open the long timeline",
			goTo("#/accounts/"+acc.ID+"/contacts/"+contact),
			chromedp.WaitVisible(css(".events .event")),
			chromedp.WaitVisible(css(".pager button.more")),
			into(&shown, chromedp.Evaluate[int](`document.querySelectorAll('.events .event').length`)),
			historyPages)
		if shown != 50 {
			t.Errorf("first page of the timeline: %d events, want 50", shown)
		}
		// At once means by one page of the log: the page read the history once, 50 events of it,
		// whatever the machine's speed (the query's plan, which keeps that page cheap on a big
		// log, is checked in infra/eventstore).
		if len(pages) != 1 || !strings.Contains(pages[0], "limit=50") || strings.Contains(pages[0], "cursor=") {
			t.Errorf("opening the timeline read the history as %q, want one page of 50", pages)
		}
		run(t, tab, "the next page",
			chromedp.Click(css(".pager button.more")),
			chromedp.WaitVisible(css(".events .event:nth-child(100)")),
			into(&shown, chromedp.Evaluate[int](`document.querySelectorAll('.events .event').length`)),
			historyPages)
		if shown != 100 || len(pages) != 2 || !strings.Contains(pages[1], "limit=50") || !strings.Contains(pages[1], "cursor=") {
			t.Errorf("after the next page: %d events shown, history read as %q, want 100 from a second page of 50", shown, pages)
		}
	})
}

// Amounts are kept in the currency's minor unit (decisions.md "Checkout"), and the minor unit is
// not a hundredth everywhere: a yen has no smaller unit (ISO 4217 exponent 0) and a Kuwaiti dinar
// has a thousandth (exponent 3). Beside the contact's timeline, a purchase of 5000 JPY reads
// ¥5,000 and one of 5000 KWD reads 5.000 KWD: a console dividing every amount by 100 showed ¥50
// and 50.000 KWD, financial records wrong by a factor of 100 and 10.
func TestTheConsoleShowsAmountsInTheCurrencysMinorUnit(t *testing.T) {
	browser := startChromium(t)
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		var contact string
		for _, p := range []struct{ name, currency string }{{"Yen plan", "JPY"}, {"Dinar plan", "KWD"}} {
			product := svc.NewProduct(t, acc.ID, map[string]any{"name": p.name, "pricingTiers": []any{
				map[string]any{"name": "Once", "amount": 5000, "currency": p.currency, "interval": "one_time"},
			}})
			bought := svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/checkout/purchases", "", map[string]any{
				"productId": product.ID, "pricingTierId": product.TierIDs[0], "email": "minor@example.com", "name": "Minor Units"}).Expect(t, http.StatusCreated)
			if tx := bought.Object(t, "transaction"); tx["amount"] != float64(5000) || tx["currency"] != p.currency {
				t.Fatalf("the purchase of %s: %v", p.name, tx)
			}
			contact = bought.Object(t, "customer")["contactId"].(string)
		}

		tab := newTab(t, browser)
		signIn(t, svc, tab)
		var purchases []string
		run(t, tab, "the contact's purchases",
			goTo("#/accounts/"+acc.ID+"/contacts/"+contact),
			chromedp.WaitVisible(css(".facts dl")),
			into(&purchases, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('.facts ul.plain li')).map((li) => li.textContent)`)))
		for _, want := range []struct{ product, amount string }{{"Yen plan", "¥5,000"}, {"Dinar plan", "5.000"}} {
			found := false
			for _, p := range purchases {
				found = found || (strings.HasPrefix(p, want.product) && strings.Contains(p, want.amount))
			}
			if !found {
				t.Errorf("the purchases read %q: want %s for 5000 in minor units", purchases, want.amount)
			}
		}
	})
}

// Tags and custom fields are shown by name (docs/operator-api.md "Console"), including those made
// after the operator opened the account: integrators make tags all the time, and a console that
// read the names once per tab showed every later one as its id (tag_…) until the tab was
// reloaded. Here a tag made while the contact's page was open is named on the contact's page
// when it is opened again, and another made after that is named on the contacts list.
func TestTheConsoleNamesTagsMadeAfterTheAccountWasOpened(t *testing.T) {
	browser := startChromium(t)
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		newsletter := svc.NewTag(t, acc.ID, "Newsletter")
		contact := svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "late@example.com", "tagIds": []string{newsletter}}).
			Object(t, "contact")["id"].(string)
		page := "#/accounts/" + acc.ID + "/contacts/" + contact
		tag := func(name string, tags int) {
			t.Helper()
			id := svc.NewTag(t, acc.ID, name)
			svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "late@example.com", "tagIds": []string{id}}).Expect(t, http.StatusOK)
			waitForTags(t, svc, acc.ID, contact, tags)
		}
		tab := newTab(t, browser)
		signIn(t, svc, tab)
		run(t, tab, "the contact with its one tag", goTo(page), chromedp.WaitVisible(css(".facts .chips .chip")))

		tag("VIP", 2)
		var onPage []string
		run(t, tab, "the contact again",
			goTo("#/accounts/"+acc.ID+"/webhooks"),
			chromedp.WaitVisible(css("#main .tabs")),
			goTo(page),
			chromedp.WaitVisible(css(".facts .chips .chip:nth-child(2)")),
			into(&onPage, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('.facts .chips .chip')).map((c) => c.textContent)`)))
		slices.Sort(onPage)
		if !slices.Equal(onPage, []string{"Newsletter", "VIP"}) {
			t.Errorf("the contact's tags read %q, want Newsletter and VIP by name", onPage)
		}

		tag("Gold", 3)
		var listed []string
		run(t, tab, "the contacts list",
			goTo("#/accounts/"+acc.ID+"/contacts"),
			chromedp.WaitVisible(css("table.contacts tbody tr .chip:nth-child(3)")),
			into(&listed, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('table.contacts tbody tr .chip')).map((c) => c.textContent)`)))
		slices.Sort(listed)
		if !slices.Equal(listed, []string{"Gold", "Newsletter", "VIP"}) {
			t.Errorf("the contacts list shows the tags %q, want Gold, Newsletter and VIP by name", listed)
		}
	})
}

// The names are every one the account has, read a page at a time as the API pages them: a
// console that read the first 200 of each list showed a tag past the 200th of the account as its
// id.
func TestTheConsoleNamesEveryTagOfABigAccount(t *testing.T) {
	browser := startChromium(t)
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		var last string
		for i := 0; i <= 200; i++ {
			last = svc.NewTag(t, acc.ID, fmt.Sprintf("Tag %03d", i))
		}
		contact := svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "many@example.com", "tagIds": []string{last}}).
			Object(t, "contact")["id"].(string)
		waitForTags(t, svc, acc.ID, contact, 1)

		tab := newTab(t, browser)
		signIn(t, svc, tab)
		var chips []string
		run(t, tab, "the contact's tag",
			goTo("#/accounts/"+acc.ID+"/contacts/"+contact),
			chromedp.WaitVisible(css(".facts .chips .chip")),
			into(&chips, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('.facts .chips .chip')).map((c) => c.textContent)`)))
		if len(chips) != 1 || chips[0] != "Tag 200" {
			t.Errorf("the contact's tag, the account's 201st, reads %q, want %q", chips, "Tag 200")
		}
	})
}

// waitForTags waits until the operator API shows the contact with n tags (its read model caught
// up), so that the page then reads them.
func waitForTags(t *testing.T, svc *servicetest.Service, accountID, contactID string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c := svc.Operator.Get(t, "/admin/v1/accounts/"+accountID+"/contacts/"+contactID, "").Expect(t, http.StatusOK).Object(t, "contact")
		if tags, _ := c["tagIds"].([]any); len(tags) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the contact never had %d tags: %v", n, c["tagIds"])
		}
	}
}

// A retry is sent in the background (the API answers it pending) and a receiver may take up to
// 10 s to answer, so after Retry the deliveries page reads the log again until the retried
// attempt is in it: here a receiver that takes 4 s shows as succeeded once the API has it so (a
// page that read the log at 0, 1 and 3 s only kept showing it pending). Then the page stops
// reading, and it stops too when the reader leaves it before the attempt is done.
func TestTheConsoleShowsTheRetriedAttemptOfASlowReceiver(t *testing.T) {
	browser := startChromium(t)
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		var recovered atomic.Bool
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !recovered.Load() {
				http.Error(w, "down", http.StatusInternalServerError)
				return
			}
			time.Sleep(4 * time.Second) // slow, within the 10 s a delivery may take
		}))
		t.Cleanup(receiver.Close)
		acc := svc.NewAccount(t)
		base := "/admin/v1/accounts/" + acc.ID
		product := svc.NewProduct(t, acc.ID, map[string]any{"name": "Plan", "pricingTiers": []any{
			map[string]any{"name": "Once", "amount": 1000, "currency": "USD", "interval": "one_time"},
		}})
		webhook := svc.Operator.Post(t, base+"/webhooks", "", map[string]any{"url": receiver.URL + "/hook", "events": []string{"checkout.purchased"}}).
			Expect(t, http.StatusCreated).Object(t, "webhook")["id"].(string)
		svc.Operator.Post(t, base+"/checkout/purchases", "", map[string]any{"productId": product.ID, "pricingTierId": product.TierIDs[0], "email": "slow@example.com"}).
			Expect(t, http.StatusCreated)
		deliveries := func() []map[string]any {
			return svc.Operator.Get(t, base+"/webhook-deliveries?webhookId="+webhook, "").Expect(t, http.StatusOK).List(t, "deliveries")
		}
		var delivery string
		for deadline := time.Now().Add(15 * time.Second); delivery == ""; time.Sleep(50 * time.Millisecond) {
			if list := deliveries(); len(list) == 1 && len(list[0]["attempts"].([]any)) >= 1 {
				delivery = list[0]["id"].(string)
			} else if time.Now().After(deadline) {
				t.Fatalf("the purchase's delivery was not attempted: %v", list)
			}
		}

		tab := newTab(t, browser)
		signIn(t, svc, tab)
		page := "#/accounts/" + acc.ID + "/webhooks/" + webhook
		row := `tr.delivery[data-delivery="` + delivery + `"]`
		// How many times the page read the delivery log.
		logReads := chromedp.Evaluate[int](`performance.getEntriesByType('resource').filter((e) => e.name.includes('/webhook-deliveries?')).length`)
		retry := []chromedp.Action[chromedp.Void]{
			chromedp.Click(css(row + ` button.retry`)),
			chromedp.WaitVisible(css(`#confirm[open] #confirm-ok`)),
			chromedp.Click(css(`#confirm-ok`)),
			chromedp.WaitVisible(css(`[role="status"]`)),
		}
		run(t, tab, "the failing delivery", goTo(page), chromedp.WaitVisible(css(row+`[data-status="pending"]`)))
		recovered.Store(true)
		run(t, tab, "retry it", retry...)
		for deadline := time.Now().Add(12 * time.Second); deliveries()[0]["status"] != "succeeded"; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the retried delivery did not succeed: %v", deliveries())
			}
		}
		// The page reads the log every 1.5 s: it shows the success within 3 s of the API.
		shown, cancel := context.WithTimeout(tab, 3*time.Second)
		defer cancel()
		if err := chromedp.Do(shown, chromedp.WaitVisible(css(row+`[data-status="succeeded"]`))); err != nil {
			t.Fatalf("the API has the retried delivery succeeded; the page still shows it as it was (%v)", err)
		}

		var before, after int
		run(t, tab, "once the attempt shows", into(&before, logReads), chromedp.Sleep(3*time.Second), into(&after, logReads))
		if after != before {
			t.Errorf("the page read the log %d times more after the retried attempt showed, want it to stop", after-before)
		}

		// Retried again, the page reads the log (its notice says so); the reader leaves at once.
		var ignored any
		run(t, tab, "retry it again and leave", append([]chromedp.Action[chromedp.Void]{into(&ignored, chromedp.Evaluate[any](`document.querySelector('[role="status"]').remove()`))},
			append(retry, goTo("#/accounts/"+acc.ID+"/contacts"), into(&before, logReads))...)...)
		run(t, tab, "on another page", chromedp.Sleep(3*time.Second), into(&after, logReads))
		if after > before+1 {
			t.Errorf("the page read the log %d times more after the reader left it, want it to stop", after-before)
		}
	})
}

// The search field has the focus on the contacts page (docs/operator-api.md "Console",
// Keyboard), on the page of a search's results too, with the email searched selected: a
// keyboard user types the next search straight over it. A search used to leave the focus on
// the page's body, so the field had to be found again for every search.
func TestTheConsoleKeepsTheFocusInTheSearchFieldAfterASearch(t *testing.T) {
	browser := startChromium(t)
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		for _, email := range []string{"first@example.com", "second@example.com"} {
			svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": email}).Expect(t, http.StatusOK)
		}

		tab := newTab(t, browser)
		signIn(t, svc, tab)
		// Where the focus is: the focused element's id, and the part of its text selected.
		focus := chromedp.Evaluate[string](`(() => {
			const e = document.activeElement;
			return (e && e.id) + ' [' + (e && e.value !== undefined ? e.value.slice(e.selectionStart, e.selectionEnd) : '') + ']';
		})()`)
		var before, after, next string
		var found []string
		run(t, tab, "search by email with the keyboard",
			goTo("#/accounts/"+acc.ID+"/contacts"),
			chromedp.WaitVisible(css("table.contacts tbody tr")),
			into(&before, focus),
			chromedp.KeyEvent("first@example.com\r"),
			chromedp.WaitVisible(css(`table.contacts[data-search="first@example.com"] tbody tr`)),
			into(&after, focus))
		if before != "email-search []" {
			t.Errorf("on the contacts page the focus is on %q, want the search field", before)
		}
		if after != "email-search [first@example.com]" {
			t.Fatalf("on the page of a search the focus is on %q, want the search field with the email searched selected", after)
		}
		run(t, tab, "search again, typed over the first",
			chromedp.KeyEvent("second@example.com\r"),
			chromedp.WaitVisible(css(`table.contacts[data-search="second@example.com"] tbody tr`)),
			into(&next, focus),
			into(&found, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('table.contacts tbody tr')).map((r) => r.cells[0].textContent)`)))
		if next != "email-search [second@example.com]" {
			t.Errorf("on the page of the second search the focus is on %q, want the search field with the email searched selected", next)
		}
		if !slices.Equal(found, []string{"second@example.com"}) {
			t.Errorf("the second search, typed over the first, found %q", found)
		}
	})
}

// Erased values are shown as erased (operator-api.md "Console"), on a billing subscription's
// timeline too: a buyer erased after the subscription ended leaves the sale's events with the
// buyer's values null, and the timeline shows them as erased, as the buyer's own timeline does,
// with a notice naming the erased buyer; not as a null that reads like a value never given.
func TestTheConsoleShowsAnErasedBuyersValuesAsErasedOnTheSubscriptionsTimeline(t *testing.T) {
	browser := startChromium(t)
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		base := "/admin/v1/accounts/" + acc.ID
		product := svc.NewProduct(t, acc.ID, map[string]any{"name": "Monthly plan", "pricingTiers": []any{
			map[string]any{"name": "Monthly", "amount": 1500, "currency": "USD", "interval": "month"},
		}})
		bought := svc.Operator.Post(t, base+"/checkout/purchases", "", map[string]any{
			"productId": product.ID, "pricingTierId": product.TierIDs[0], "email": "erin@example.com", "name": "Erin Erased"}).Expect(t, http.StatusCreated)
		subscription := bought.Object(t, "subscription")["id"].(string)
		buyer := bought.Object(t, "customer")["contactId"].(string)
		// A buyer cannot be erased while a subscription is active: it ends first.
		svc.Operator.Post(t, base+"/checkout/subscriptions/"+subscription+"/cancel", "", map[string]any{"atPeriodEnd": false}).Expect(t, http.StatusOK)
		svc.Operator.Post(t, base+"/contacts/"+buyer+"/erase", "", map[string]any{}).Expect(t, http.StatusOK)

		tab := newTab(t, browser)
		signIn(t, svc, tab)
		var types, data []string
		var notice string
		run(t, tab, "the subscription's timeline",
			goTo("#/accounts/"+acc.ID+"/subscriptions/"+subscription),
			chromedp.WaitVisible(css(`.events .event[data-type="SubscriptionCancelled"]`)),
			into(&notice, chromedp.Evaluate[string](`Array.from(document.querySelectorAll('main p.notice')).map((p) => p.textContent).join(' ')`)),
			into(&types, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('.events .event')).map((e) => e.dataset.type)`)),
			into(&data, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('.events .event details > pre.json:first-of-type')).map((p) => p.textContent)`)))
		if !slices.Contains(types, "CheckoutPurchased") || !slices.Contains(types, "SubscriptionStarted") {
			t.Errorf("the subscription's timeline: %v", types)
		}
		if !strings.Contains(notice, buyer) || !strings.Contains(notice, "erased") {
			t.Errorf("the subscription's page says %q, want that its buyer %s was erased", notice, buyer)
		}
		if len(data) != len(types) {
			t.Fatalf("%d events, %d of them with data", len(types), len(data))
		}
		for i, d := range data {
			for _, gone := range []string{"erin@example.com", "Erin", "null"} {
				if strings.Contains(d, gone) {
					t.Errorf("the data of %s shows %q: %s", types[i], gone, d)
				}
			}
			if types[i] == "CheckoutPurchased" && (!strings.Contains(d, `"email": erased`) || !strings.Contains(d, `"name": erased`)) {
				t.Errorf("the purchase's data: %s, want the buyer's email and name shown as erased", d)
			}
		}
	})
}
