package api_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

func TestActivationValidateAndComplete(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		before := time.Now().UTC()
		res := buyDirect(t, svc, purchaseOf(acc.ID, pro, 1, "linus@example.com", "Linus"))
		if res.ActivationToken == "" {
			t.Fatal("a purchase of a saas_signup product issued no activation token")
		}
		path := "/api/v1/checkout/activations/" + res.ActivationToken

		a := svc.API.Get(t, path, acc.Key).Expect(t, http.StatusOK).Object(t, "activation")
		product := a["product"].(map[string]any)
		link, err := url.Parse(a["activationUrl"].(string))
		if err != nil {
			t.Fatal(err)
		}
		expires, err := time.Parse(time.RFC3339, a["expiresAt"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if a["status"] != "pending" || a["email"] != "linus@example.com" || product["id"] != pro.ID || product["name"] != "Pro Plan" ||
			link.Host != "app.example.com" || link.Path != "/signup" || link.Query().Get("token") != res.ActivationToken ||
			a["customerId"] != res.CustomerID || a["transactionId"] != res.TransactionID || a["subscriptionId"] != res.SubscriptionID ||
			a["externalUserId"] != nil || a["completedAt"] != nil || a["id"] != res.ActivationID {
			t.Fatalf("activation = %v", a)
		}
		if d := expires.Sub(before); d < 7*24*time.Hour-time.Minute || d > 7*24*time.Hour+time.Minute {
			t.Fatalf("expiresAt %v is not 7 days after the purchase (%v)", expires, before)
		}

		done := svc.API.Post(t, path+"/complete", acc.Key, map[string]any{"externalUserId": "user-42"}).Expect(t, http.StatusOK).Object(t, "activation")
		if done["status"] != "completed" || done["externalUserId"] != "user-42" || done["completedAt"] == nil || done["activationUrl"] != a["activationUrl"] {
			t.Fatalf("completed = %v", done)
		}
		// Idempotent: again with the same id, or none (no body at all), changes nothing.
		again := svc.API.Post(t, path+"/complete", acc.Key, map[string]any{"externalUserId": "user-42"}).Expect(t, http.StatusOK).Object(t, "activation")
		bare := svc.API.Do(t, servicetest.Request{Method: http.MethodPost, Path: path + "/complete", Token: acc.Key}).Expect(t, http.StatusOK).Object(t, "activation")
		// An empty body sent chunked (no length) is no body too.
		chunked := svc.API.Do(t, servicetest.Request{Method: http.MethodPost, Path: path + "/complete", Token: acc.Key, Body: io.MultiReader(strings.NewReader(""))}).
			Expect(t, http.StatusOK).Object(t, "activation")
		for _, got := range []map[string]any{again, bare, chunked} {
			if got["status"] != "completed" || got["externalUserId"] != "user-42" || got["completedAt"] != done["completedAt"] {
				t.Fatalf("completed again = %v, want %v", got, done)
			}
		}
		if msg := svc.API.Post(t, path+"/complete", acc.Key, map[string]any{"externalUserId": "user-43"}).ExpectError(t, http.StatusConflict); !strings.Contains(msg, "externalUserId") {
			t.Fatalf("409 message %q", msg)
		}
		if got := svc.API.Get(t, path, acc.Key).Expect(t, http.StatusOK).Object(t, "activation"); got["status"] != "completed" || got["externalUserId"] != "user-42" {
			t.Fatalf("read after completion = %v", got)
		}
		svc.API.Post(t, path+"/complete", acc.Key, map[string]any{"externalUserId": 42}).ExpectError(t, http.StatusBadRequest)
		svc.API.Post(t, path+"/complete", acc.Key, map[string]any{"externalUserId": strings.Repeat("x", 256)}).ExpectError(t, http.StatusBadRequest)

		// A product without forwarding issues none.
		plain := svc.NewProduct(t, acc.ID, simpleProduct("Ebook"))
		if res := buyDirect(t, svc, purchaseOf(acc.ID, plain, 0, "linus@example.com", "")); res.ActivationToken != "" || res.ActivationID != "" {
			t.Fatalf("plain purchase = %+v", res)
		}
	})
}

// An erased buyer's activation reads as it completes: 404 with a message that says the buyer was
// erased, on GET as on complete, so that an integrator that validates a token before creating its
// user does not create one for a completion that will fail. The activation itself is kept: its
// stream and its (blanked) row, as the erasure keeps every record that is not the person's.
func TestAnErasedBuyersActivationIsNotFoundOnReadAndComplete(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		bought := buy(t, svc, acc.ID, map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[0], "email": "erased-activation@example.com"})
		token := bought.Object(t, "activation")["token"].(string)
		path := "/api/v1/checkout/activations/" + token
		svc.API.Get(t, path, acc.Key).Expect(t, http.StatusOK)
		svc.API.Delete(t, "/api/v1/contacts/"+bought.Object(t, "customer")["contactId"].(string), acc.Key).Expect(t, http.StatusOK)

		read := svc.API.Get(t, path, acc.Key).ExpectError(t, http.StatusNotFound)
		completed := svc.API.Post(t, path+"/complete", acc.Key, map[string]any{"externalUserId": "user-1"}).ExpectError(t, http.StatusNotFound)
		if !strings.Contains(read, "erased") || read != completed {
			t.Errorf("after the buyer's erasure GET answers %q and complete %q, want one message saying the buyer was erased", read, completed)
		}
		id := domain.ActivationIDFor(token)
		events, err := svc.App.Store().ReadStream(context.Background(), id)
		if err != nil || len(events) != 1 || events[0].Type != "ActivationIssued" {
			t.Fatalf("the erased buyer's activation stream holds %v (err %v), want its issue alone", events, err)
		}
		var rows int
		if err := svc.App.DB().Read.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM activations WHERE id = $1`, id).Scan(&rows); err != nil || rows != 1 {
			t.Fatalf("the erased buyer's activation has %d rows (err %v), want its row kept", rows, err)
		}
	})
}

func TestActivationTenancyAndScopes(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		res := buyDirect(t, svc, purchaseOf(acc.ID, pro, 0, "margaret@example.com", "Margaret"))
		path := "/api/v1/checkout/activations/" + res.ActivationToken

		svc.API.Get(t, path, other.Key).ExpectError(t, http.StatusForbidden)
		svc.API.Post(t, path+"/complete", other.Key, map[string]any{"externalUserId": "theirs"}).ExpectError(t, http.StatusForbidden)
		// A token never issued, or one that only looks alike: 404.
		for _, token := range []string{"nope", alike(res.ActivationToken), strings.Repeat("t", 200)} {
			svc.API.Get(t, "/api/v1/checkout/activations/"+token, acc.Key).ExpectError(t, http.StatusNotFound)
			svc.API.Post(t, "/api/v1/checkout/activations/"+token+"/complete", acc.Key, map[string]any{}).ExpectError(t, http.StatusNotFound)
		}
		svc.API.Get(t, path, "").ExpectError(t, http.StatusUnauthorized)
		svc.API.Post(t, path+"/complete", "", map[string]any{}).ExpectError(t, http.StatusUnauthorized)

		readOnly := svc.NewKey(t, acc.ID, []string{"checkout:read"})
		writeOnly := svc.NewKey(t, acc.ID, []string{"checkout:write"})
		if msg := svc.API.Get(t, path, writeOnly).ExpectError(t, http.StatusForbidden); !strings.Contains(msg, "checkout:read") {
			t.Fatalf("403 message %q does not name checkout:read", msg)
		}
		if msg := svc.API.Post(t, path+"/complete", readOnly, map[string]any{}).ExpectError(t, http.StatusForbidden); !strings.Contains(msg, "checkout:write") {
			t.Fatalf("403 message %q does not name checkout:write", msg)
		}
		if a := svc.API.Get(t, path, readOnly).Expect(t, http.StatusOK).Object(t, "activation"); a["status"] != "pending" {
			t.Fatalf("the refused calls changed the activation: %v", a)
		}
		svc.API.Post(t, path+"/complete", writeOnly, map[string]any{}).Expect(t, http.StatusOK)
	})
}

// alike is a token that differs from token in its first character only.
func alike(token string) string {
	first := "A"
	if token[0] == 'A' {
		first = "B"
	}
	return first + token[1:]
}

// clock is a settable clock for a service's commands.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestActivationExpiresAfterSevenDays(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		c := &clock{now: time.Date(2030, 1, 31, 12, 0, 0, 0, time.UTC)}
		svc := servicetest.Start(t, d, func(cfg *service.Config) { cfg.Now = c.Now })
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		pending := buyDirect(t, svc, purchaseOf(acc.ID, pro, 0, "ken@example.com", "Ken"))
		completed := buyDirect(t, svc, purchaseOf(acc.ID, pro, 1, "ken@example.com", "Ken"))
		path := func(token string) string { return "/api/v1/checkout/activations/" + token }
		svc.API.Post(t, path(completed.ActivationToken)+"/complete", acc.Key, map[string]any{"externalUserId": "u1"}).Expect(t, http.StatusOK)

		c.advance(7*24*time.Hour - time.Second)
		if a := svc.API.Get(t, path(pending.ActivationToken), acc.Key).Expect(t, http.StatusOK).Object(t, "activation"); a["status"] != "pending" ||
			a["expiresAt"] != "2030-02-07T12:00:00.000Z" {
			t.Fatalf("a second before expiry = %v", a)
		}
		c.advance(time.Second)
		a := svc.API.Get(t, path(pending.ActivationToken), acc.Key).Expect(t, http.StatusOK).Object(t, "activation")
		if a["status"] != "expired" || a["email"] != "ken@example.com" {
			t.Fatalf("at expiry = %v", a)
		}
		if msg := svc.API.Post(t, path(pending.ActivationToken)+"/complete", acc.Key, map[string]any{}).ExpectError(t, http.StatusBadRequest); !strings.Contains(msg, "expired") {
			t.Fatalf("400 message %q", msg)
		}
		// The expiry was recorded once, when the token was first used after it, dated at expiresAt.
		svc.API.Get(t, path(pending.ActivationToken), acc.Key).Expect(t, http.StatusOK)
		events, err := svc.App.Store().ReadStream(context.Background(), pending.ActivationID)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) != 2 || events[1].Type != "ActivationExpired" {
			t.Fatalf("activation stream = %v, want ActivationIssued, ActivationExpired", events)
		}
		// A completed activation never expires.
		if a := svc.API.Get(t, path(completed.ActivationToken), acc.Key).Expect(t, http.StatusOK).Object(t, "activation"); a["status"] != "completed" {
			t.Fatalf("completed activation after 7 days = %v", a)
		}
		svc.API.Post(t, path(completed.ActivationToken)+"/complete", acc.Key, map[string]any{"externalUserId": "u1"}).Expect(t, http.StatusOK)
	})
}
