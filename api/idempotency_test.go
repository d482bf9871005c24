package api_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// The Idempotency-Key header (decisions.md "General", issue 10 part 3), through HTTP on both APIs.

// leadBody opens a lead for ada@example.com.
const leadBody = `{"contactEmail": "ada@example.com", "title": "Pilot"}`

// leadsEndpoint makes an account with a CRM of one stage, and returns them and the path that opens its leads.
func leadsEndpoint(t *testing.T, svc *servicetest.Service) (servicetest.Account, servicetest.CRM, string) {
	t.Helper()
	acc := svc.NewAccount(t)
	crm := svc.NewCRM(t, acc.ID, "Sales", "New")
	return acc, crm, "/api/v1/crms/" + crm.ID + "/leads"
}

// withKey sends a request with an Idempotency-Key; body is sent as these exact bytes.
func withKey(c *servicetest.Client, t *testing.T, method, path, token, key, body string) servicetest.Response {
	t.Helper()
	return c.Do(t, servicetest.Request{Method: method, Path: path, Token: token, Body: body, Headers: map[string]string{"Idempotency-Key": key}})
}

// expectReplay fails unless res is a replay of first: same status, same bytes, marked.
func expectReplay(t *testing.T, res, first servicetest.Response) {
	t.Helper()
	if res.Status != first.Status || !bytes.Equal(res.Raw, first.Raw) {
		t.Fatalf("retry answered %d %s, want the first answer %d %s", res.Status, res.Raw, first.Status, first.Raw)
	}
	if res.Header.Get("Idempotent-Replayed") != "true" || res.Header.Get("Content-Type") != first.Header.Get("Content-Type") {
		t.Fatalf("retry headers %v: want Idempotent-Replayed: true and the first Content-Type", res.Header)
	}
}

func TestIdempotentRetryReplaysTheFirstAnswer(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		crm := svc.NewCRM(t, acc.ID, "Sales", "New", "Won")
		path := "/api/v1/crms/" + crm.ID + "/leads"
		body := `{"contactEmail": "ada@example.com", "title": "Pilot"}`

		first := withKey(svc.API, t, http.MethodPost, path, acc.Key, "lead-1", body).Expect(t, http.StatusCreated)
		if first.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("a first answer is marked replayed: %v", first.Header)
		}
		lead := first.Object(t, "lead")
		expectReplay(t, withKey(svc.API, t, http.MethodPost, path, acc.Key, "lead-1", body), first)

		// The kept answer, not a new reading: after the lead moved, the retry still shows it as created.
		svc.API.Patch(t, path+"/"+lead["id"].(string), acc.Key, map[string]any{"stageId": crm.Stages[1]}).Expect(t, http.StatusOK)
		expectReplay(t, withKey(svc.API, t, http.MethodPost, path, acc.Key, "lead-1", body), first)

		// Performed once: one lead, one contact created, one lead opened in the log.
		if leads := leadsOf(t, svc, acc.ID, crm.ID, ""); len(leads) != 1 {
			t.Fatalf("%d leads after three tries with one key, want 1", len(leads))
		}
		counts := countTypes(history(t, svc, acc.ID, lead["contactId"].(string)))
		if counts["ContactCreated"] != 1 || counts["LeadCreated"] != 1 {
			t.Fatalf("history of the contact: %v, want one ContactCreated and one LeadCreated", counts)
		}

		// PATCH too: the retry is the first answer, even after the lead moved on.
		patched := withKey(svc.API, t, http.MethodPatch, path+"/"+lead["id"].(string), acc.Key, "move-1", `{"stageId": "`+crm.Stages[0]+`"}`).Expect(t, http.StatusOK)
		svc.API.Patch(t, path+"/"+lead["id"].(string), acc.Key, map[string]any{"title": "Renamed"}).Expect(t, http.StatusOK)
		expectReplay(t, withKey(svc.API, t, http.MethodPatch, path+"/"+lead["id"].(string), acc.Key, "move-1", `{"stageId": "`+crm.Stages[0]+`"}`), patched)
	})
}

func TestIdempotentRetryOfEveryKindOfWrite(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		svc.NewTag(t, acc.ID, "Lead")
		form, fields := svc.NewForm(t, acc.ID, "Signup", nil, servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email", "required": true})
		calendar, questions := svc.NewEventType(t, acc.ID, "Call", 30, servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email", "required": true})
		for i, w := range []struct{ path, body string }{
			{"/api/v1/contacts", `{"email": "grace@example.com", "tagNames": ["Lead"]}`},
			{"/api/v1/contacts/tags", `{"email": "alan@example.com", "tagNames": ["Lead"]}`},
			{"/api/v1/forms/" + form + "/submissions", `{"values": {"` + fields[0] + `": "sub@example.com"}}`},
			{"/api/v1/scheduling/" + calendar + "/bookings", `{"startTime": "2031-03-04T10:00:00Z", "answers": {"` + questions[0] + `": "book@example.com"}}`},
			{"/api/v1/webhooks/subscriptions", `{"url": "http://127.0.0.1:9/hook", "event": "form.submitted"}`},
		} {
			key := fmt.Sprintf("write-%d", i)
			first := withKey(svc.API, t, http.MethodPost, w.path, acc.Key, key, w.body)
			if first.Status != http.StatusOK && first.Status != http.StatusCreated {
				t.Fatalf("POST %s: %d %s", w.path, first.Status, first.Raw)
			}
			expectReplay(t, withKey(svc.API, t, http.MethodPost, w.path, acc.Key, key, w.body), first)
		}
		// Each write happened once: one submission, one booking, one subscription (whose secret,
		// shown once, the retry showed again).
		op := "/admin/v1/accounts/" + acc.ID
		if n := len(svc.Operator.Get(t, op+"/forms/"+form+"/submissions", "").Expect(t, http.StatusOK).List(t, "submissions")); n != 1 {
			t.Fatalf("%d submissions, want 1", n)
		}
		if n := len(svc.Operator.Get(t, op+"/event-types/"+calendar+"/bookings", "").Expect(t, http.StatusOK).List(t, "bookings")); n != 1 {
			t.Fatalf("%d bookings, want 1", n)
		}
		if n := len(svc.Operator.Get(t, op+"/webhooks", "").Expect(t, http.StatusOK).List(t, "webhooks")); n != 1 {
			t.Fatalf("%d webhooks, want 1", n)
		}
	})
}

// TestEveryPostAndPatchTakesAnIdempotencyKey walks the routes of both APIs and sends each write
// an over-long key: each must refuse it, which only the idempotency layer does. The routes come
// from the routers, so a new write cannot escape.
func TestEveryPostAndPatchTakesAnIdempotencyKey(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) { checkEveryWriteTakesAKey(t, svc) })
}

func checkEveryWriteTakesAKey(t *testing.T, svc *servicetest.Service) {
	acc := svc.NewAccount(t)
	tooLong := strings.Repeat("k", 256)
	for _, api := range []struct {
		router *mux.Router
		client *servicetest.Client
		token  string
		least  int // writes the API has at least, so that a walk that finds none fails
	}{
		{svc.App.APIRouter(), svc.API, acc.Key, 8},
		{svc.App.OperatorRouter(), svc.Operator, "", 15},
	} {
		writes := writeRoutes(t, api.router)
		if len(writes) < api.least {
			t.Fatalf("found only %d writes among the routes: %v", len(writes), writes)
		}
		for _, w := range writes {
			method, path, _ := strings.Cut(w, " ")
			// The account in an operator path must exist (it is checked first); any other id
			// will do: {crmId} → crmId.
			path = strings.ReplaceAll(path, "{accountId}", acc.ID)
			path = strings.NewReplacer("{", "", "}", "").Replace(path)
			msg := withKey(api.client, t, method, path, api.token, tooLong, `{}`).ExpectError(t, http.StatusBadRequest)
			if !strings.Contains(msg, "Idempotency-Key") {
				t.Errorf("%s: %q", w, msg)
			}
		}
	}
}

// writeRoutes are the POST and PATCH routes of a router, as "METHOD /path/{template}".
func writeRoutes(t *testing.T, router *mux.Router) []string {
	t.Helper()
	var writes []string
	err := router.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tpl, err := route.GetPathTemplate()
		methods, merr := route.GetMethods()
		if err != nil || merr != nil {
			return nil
		}
		for _, m := range methods {
			if m == http.MethodPost || m == http.MethodPatch {
				writes = append(writes, m+" "+tpl)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return writes
}

func TestIdempotencyKeyWithAnotherRequestConflicts(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		crm := svc.NewCRM(t, acc.ID, "Sales", "New")
		other := svc.NewCRM(t, acc.ID, "Partners", "New")
		path := "/api/v1/crms/" + crm.ID + "/leads"
		body := `{"contactEmail": "ada@example.com", "title": "Pilot"}`
		first := withKey(svc.API, t, http.MethodPost, path, acc.Key, "k", body).Expect(t, http.StatusCreated)

		for _, retry := range []struct{ path, body string }{
			{path, `{"contactEmail": "ada@example.com", "title": "Another"}`},
			{path, `{"contactEmail": "ada@example.com",  "title": "Pilot"}`}, // the same JSON, other bytes
			{"/api/v1/crms/" + other.ID + "/leads", body},                    // the same body on another path
			{"/api/v1/contacts", `{"email": "ada@example.com"}`},
		} {
			msg := withKey(svc.API, t, http.MethodPost, retry.path, acc.Key, "k", retry.body).ExpectError(t, http.StatusConflict)
			if !strings.Contains(msg, "another request") {
				t.Fatalf("conflict message %q", msg)
			}
		}
		// The conflicts changed nothing: one lead, and the key still answers its first request.
		if n := len(leadsOf(t, svc, acc.ID, crm.ID, "")) + len(leadsOf(t, svc, acc.ID, other.ID, "")); n != 1 {
			t.Fatalf("%d leads, want 1", n)
		}
		expectReplay(t, withKey(svc.API, t, http.MethodPost, path, acc.Key, "k", body), first)
	})
}

func TestIdempotentConcurrentRequestsPerformOnce(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc, crm, path := leadsEndpoint(t, svc)
		body := leadBody
		answers := sendAtOnce(t, 8, func() servicetest.Response { return withKey(svc.API, t, http.MethodPost, path, acc.Key, "same", body) })
		created := checkOnePerformed(t, answers)
		if n := len(leadsOf(t, svc, acc.ID, crm.ID, "")); n != 1 {
			t.Fatalf("%d leads after %d concurrent requests with one key, want 1", n, len(answers))
		}
		expectReplay(t, withKey(svc.API, t, http.MethodPost, path, acc.Key, "same", body), created)
	})
}

// sendAtOnce sends n requests at the same moment and returns their answers.
func sendAtOnce(t *testing.T, n int, send func() servicetest.Response) []servicetest.Response {
	t.Helper()
	answers := make([]servicetest.Response, n)
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range n {
		done.Go(func() {
			start.Wait()
			answers[i] = send()
		})
	}
	start.Done()
	done.Wait()
	return answers
}

// checkOnePerformed checks the answers of concurrent requests with one key: each is the one
// answer (identical bytes) or a retryable 409, and at least one is the answer. It returns it.
func checkOnePerformed(t *testing.T, answers []servicetest.Response) servicetest.Response {
	t.Helper()
	var created *servicetest.Response
	for i, res := range answers {
		switch res.Status {
		case http.StatusCreated:
			if created != nil && !bytes.Equal(created.Raw, res.Raw) {
				t.Fatalf("two different answers to one key: %s and %s", created.Raw, res.Raw)
			}
			created = &answers[i]
		case http.StatusConflict:
			if msg := res.ExpectError(t, http.StatusConflict); !strings.Contains(msg, "in progress") || res.Header.Get("Retry-After") != "1" {
				t.Fatalf("concurrent retry answered %q with Retry-After %q", msg, res.Header.Get("Retry-After"))
			}
		default:
			t.Fatalf("concurrent request answered %d %s", res.Status, res.Raw)
		}
	}
	if created == nil {
		t.Fatal("no request performed the write")
	}
	return *created
}

func TestIdempotencyKeyValidation(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc, crm, path := leadsEndpoint(t, svc)
		body := leadBody
		for key, want := range map[string]string{
			strings.Repeat("k", 256): "at most 255 characters",
			"tab\there":              "printable ASCII",
			"clé":                    "printable ASCII",
		} {
			msg := withKey(svc.API, t, http.MethodPost, path, acc.Key, key, body).ExpectError(t, http.StatusBadRequest)
			if !strings.Contains(msg, want) {
				t.Errorf("key %q: %q, want it to say %q", key, msg, want)
			}
		}
		// An empty key and two keys, sent by hand: the test client sets one value per header.
		for _, values := range [][]string{{""}, {"   "}, {"a", "b"}} {
			req, err := http.NewRequest(http.MethodPost, svc.API.URL()+path, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Host = "api.localhost"
			req.Header.Set("Authorization", "Bearer "+acc.Key)
			req.Header["Idempotency-Key"] = values
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), "Idempotency-Key") {
				t.Errorf("Idempotency-Key %q: %d %s, want 400", values, res.StatusCode, raw)
			}
		}
		if n := len(leadsOf(t, svc, acc.ID, crm.ID, "")); n != 0 {
			t.Fatalf("refused keys wrote %d leads", n)
		}
		// 255 printable characters, spaces and symbols included, are a key.
		key := strings.Repeat("Az09 -_.:/~!", 22)[:255]
		first := withKey(svc.API, t, http.MethodPost, path, acc.Key, key, body).Expect(t, http.StatusCreated)
		expectReplay(t, withKey(svc.API, t, http.MethodPost, path, acc.Key, key, body), first)
		// Other methods ignore the header.
		svc.API.Do(t, servicetest.Request{Method: http.MethodGet, Path: "/api/v1/crms", Token: acc.Key, Headers: map[string]string{"Idempotency-Key": "\t"}}).Expect(t, http.StatusOK)
	})
}

func TestIdempotencyRefusalsAreNotKept(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc, other := svc.NewAccount(t), svc.NewAccount(t)
		crm := svc.NewCRM(t, acc.ID, "Sales", "New")
		foreign := svc.NewCRM(t, other.ID, "Theirs", "New")
		path := "/api/v1/crms/" + crm.ID + "/leads"
		good := `{"contactEmail": "ada@example.com", "title": "Pilot"}`

		// A 400 performs nothing and is not kept: the corrected request performs with the same key.
		withKey(svc.API, t, http.MethodPost, path, acc.Key, "fix-me", `{"title": "no email"}`).ExpectError(t, http.StatusBadRequest)
		first := withKey(svc.API, t, http.MethodPost, path, acc.Key, "fix-me", good).Expect(t, http.StatusCreated)
		if first.Header.Get("Idempotent-Replayed") != "" {
			t.Fatal("the corrected request was answered as a replay")
		}
		// 413, 403 and 404 are not kept either: each retry is judged afresh.
		huge := `{"title": "` + strings.Repeat("x", 300<<10) + `"}`
		withKey(svc.API, t, http.MethodPost, path, acc.Key, "big", huge).ExpectError(t, http.StatusRequestEntityTooLarge)
		withKey(svc.API, t, http.MethodPost, path, acc.Key, "big", `{"contactEmail": "big@example.com"}`).Expect(t, http.StatusCreated)
		for range 2 {
			withKey(svc.API, t, http.MethodPost, "/api/v1/crms/"+foreign.ID+"/leads", acc.Key, "theirs", good).ExpectError(t, http.StatusForbidden)
			withKey(svc.API, t, http.MethodPost, "/api/v1/crms/crm_nothere/leads", acc.Key, "nowhere", good).ExpectError(t, http.StatusNotFound)
		}
		// A 403 for a missing scope comes before the key is looked at.
		narrow := svc.NewKey(t, acc.ID, []string{"crm:read"})
		withKey(svc.API, t, http.MethodPost, path, narrow, "scope", good).ExpectError(t, http.StatusForbidden)
		withKey(svc.API, t, http.MethodPost, path, acc.Key, "scope", `{"contactEmail": "scope@example.com"}`).Expect(t, http.StatusCreated)
		if n := len(leadsOf(t, svc, acc.ID, crm.ID, "")); n != 3 {
			t.Fatalf("%d leads, want 3", n)
		}
	})
}

func TestIdempotencyKeysOfTwoAccountsNeverCollide(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		a, b := svc.NewAccount(t), svc.NewAccount(t)
		body := `{"email": "ada@example.com", "firstName": "Ada"}`
		inA := withKey(svc.API, t, http.MethodPost, "/api/v1/contacts", a.Key, "shared-key", body).Expect(t, http.StatusOK)
		inB := withKey(svc.API, t, http.MethodPost, "/api/v1/contacts", b.Key, "shared-key", body).Expect(t, http.StatusOK)
		if inB.Header.Get("Idempotent-Replayed") != "" || inB.Body["created"] != true || inA.Object(t, "contact")["id"] == inB.Object(t, "contact")["id"] {
			t.Fatalf("account B's request with A's key: %s", inB.Raw)
		}
		if contactByEmail(t, svc, b.Key, "ada@example.com") == nil {
			t.Fatal("account B's contact was not created")
		}
		// Keys belong to the account, not to one API key of it: another key of A gets A's answer.
		second := svc.NewKey(t, a.ID, nil)
		expectReplay(t, withKey(svc.API, t, http.MethodPost, "/api/v1/contacts", second, "shared-key", body), inA)
		// The operator token has keys of its own.
		acc := withKey(svc.Operator, t, http.MethodPost, "/admin/v1/accounts", "", "shared-key", `{"name": "Op"}`).Expect(t, http.StatusCreated)
		if acc.Header.Get("Idempotent-Replayed") != "" {
			t.Fatal("the operator's key was answered from an account's")
		}
	})
}

func TestIdempotentPurchaseAndRefund(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		purchases := checkoutPath(acc.ID, "purchases")
		body := `{"productId": "` + pro.ID + `", "pricingTierId": "` + pro.TierIDs[1] + `", "email": "ada@example.com", "txnId": "PAY-1"}`

		first := withKey(svc.Operator, t, http.MethodPost, purchases, "", "order-1", body).Expect(t, http.StatusCreated)
		expectReplay(t, withKey(svc.Operator, t, http.MethodPost, purchases, "", "order-1", body), first) // its activation token too
		withKey(svc.Operator, t, http.MethodPost, purchases, "", "order-1", strings.Replace(body, "PAY-1", "PAY-2", 1)).ExpectError(t, http.StatusConflict)
		customer := first.Object(t, "customer")["id"].(string)
		txns := func() []any {
			return svc.API.Get(t, "/api/v1/customers/"+customer, acc.Key).Expect(t, http.StatusOK).Object(t, "customer")["transactions"].([]any)
		}
		if n := len(txns()); n != 1 {
			t.Fatalf("%d transactions after a purchase and its retry, want 1", n)
		}

		// A refund retried is refunded once.
		txn := first.Object(t, "transaction")["id"].(string)
		refund := checkoutPath(acc.ID, "transactions/"+txn+"/refund")
		refunded := withKey(svc.Operator, t, http.MethodPost, refund, "", "refund-1", `{"amountCents": 1000}`).Expect(t, http.StatusOK)
		expectReplay(t, withKey(svc.Operator, t, http.MethodPost, refund, "", "refund-1", `{"amountCents": 1000}`), refunded)
		if got := txns()[0].(map[string]any)["refundedAmount"]; got != float64(1000) {
			t.Fatalf("refunded %v after a refund of 1000 and its retry, want 1000", got)
		}
		// Another key is another purchase.
		withKey(svc.Operator, t, http.MethodPost, purchases, "", "order-2", strings.Replace(body, "PAY-1", "PAY-2", 1)).Expect(t, http.StatusCreated)
		if n := len(txns()); n != 2 {
			t.Fatalf("%d transactions after two orders, want 2", n)
		}
	})
}

// testClock is a clock a test moves.
type testClock struct{ now atomic.Int64 }

func (c *testClock) Now() time.Time          { return time.Unix(0, c.now.Load()).UTC() }
func (c *testClock) Set(t time.Time)         { c.now.Store(t.UnixNano()) }
func (c *testClock) Advance(d time.Duration) { c.now.Add(int64(d)) }

func TestIdempotencyKeyIsKept24Hours(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		clock := &testClock{}
		clock.Set(time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC))
		svc := servicetest.Start(t, d, func(c *service.Config) { c.Now = clock.Now })
		acc, crm, path := leadsEndpoint(t, svc)
		body := leadBody
		first := withKey(svc.API, t, http.MethodPost, path, acc.Key, "daily", body).Expect(t, http.StatusCreated)

		clock.Advance(24*time.Hour - time.Millisecond)
		expectReplay(t, withKey(svc.API, t, http.MethodPost, path, acc.Key, "daily", body), first)
		clock.Advance(time.Millisecond)
		again := withKey(svc.API, t, http.MethodPost, path, acc.Key, "daily", body).Expect(t, http.StatusCreated)
		if again.Header.Get("Idempotent-Replayed") != "" || again.Object(t, "lead")["id"] == first.Object(t, "lead")["id"] {
			t.Fatalf("after 24 hours the key answered %s", again.Raw)
		}
		ids := []string{}
		for _, l := range leadsOf(t, svc, acc.ID, crm.ID, "") {
			ids = append(ids, l["id"].(string))
		}
		if len(ids) != 2 || !slices.Contains(ids, again.Object(t, "lead")["id"].(string)) {
			t.Fatalf("leads %v, want the first and the one of the expired key's new use", ids)
		}
		// The new use is kept 24 hours from now.
		expectReplay(t, withKey(svc.API, t, http.MethodPost, path, acc.Key, "daily", body), again)
	})
}
