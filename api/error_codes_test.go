package api_test

import (
	"context"
	"database/sql"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// codesNotYetAnswered are codes of domain.ErrorCodes that no endpoint answers yet, with the
// reason: each must leave this list, for a case below, with the feature that answers it.
var codesNotYetAnswered = map[domain.ErrorCode]string{}

// errorCodes collects what a test provoked, to tell at the end which codes no case provoked.
type errorCodes struct {
	t    *testing.T
	seen map[domain.ErrorCode]bool
}

// expect checks that an answer is the error a user would read: the status of code, code itself
// and param (the JSON path of the field at fault, or "" for none: then no param at all).
func (c *errorCodes) expect(what string, res servicetest.Response, code domain.ErrorCode, param string) {
	c.t.Helper()
	c.seen[code] = true
	got, hasParam := res.Body["param"]
	switch {
	case res.Status != code.Status() || res.Body["code"] != string(code):
		c.t.Errorf("%s: %d %s, want %d with code %s", what, res.Status, res.Raw, code.Status(), code)
	case param == "" && hasParam:
		c.t.Errorf("%s: param %v, want none: %s", what, got, res.Raw)
	case param != "" && got != param:
		c.t.Errorf("%s: param %v, want %q: %s", what, got, param, res.Raw)
	case res.Body["error"] == "":
		c.t.Errorf("%s: no message: %s", what, res.Raw)
	}
}

// Every code of domain.ErrorCodes is answered through HTTP with its status, on both APIs where
// they can answer it, on both stores, with param naming the field at fault and no param where
// no single field is.
func TestEveryErrorCodeThroughHTTP(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		c := &errorCodes{t: t, seen: map[domain.ErrorCode]bool{}}
		provokeRequestErrors(t, c, servicetest.Shared(t, d))
		provokeStateErrors(t, c, d)
		provokeRateLimit(t, c, d)
		provokeDatabaseFaults(t, c, d)
		for _, info := range domain.ErrorCodes {
			if _, later := codesNotYetAnswered[info.Code]; !c.seen[info.Code] && !later {
				t.Errorf("no case provokes %s", info.Code)
			}
			if _, later := codesNotYetAnswered[info.Code]; c.seen[info.Code] && later {
				t.Errorf("%s is provoked: take it off codesNotYetAnswered", info.Code)
			}
		}
	})
}

// provokeRequestErrors provokes the codes of a request that is wrong whatever the state.
func provokeRequestErrors(t *testing.T, c *errorCodes, svc *servicetest.Service) {
	acc, other := svc.NewAccount(t), svc.NewAccount(t)
	api := func(method, path string, body any) servicetest.Response {
		return svc.API.Do(t, servicetest.Request{Method: method, Path: path, Token: acc.Key, Body: body})
	}
	admin := func(method, path string, body any) servicetest.Response {
		return svc.Operator.Do(t, servicetest.Request{Method: method, Path: "/admin/v1/accounts/" + acc.ID + path, Body: body})
	}

	c.expect("a body that is not JSON", api(http.MethodPost, "/api/v1/contacts", `{"email": `), domain.CodeInvalidJSON, "")
	c.expect("a body that is no object", api(http.MethodPost, "/api/v1/contacts", `["a@example.com"]`), domain.CodeInvalidJSON, "")
	c.expect("operator: a body that is not JSON", admin(http.MethodPost, "/tags", `name=x`), domain.CodeInvalidJSON, "")

	c.expect("an invalid email", api(http.MethodPost, "/api/v1/contacts", map[string]any{"email": "nobody"}), domain.CodeInvalidRequest, "email")
	c.expect("a member of the wrong type", api(http.MethodPost, "/api/v1/contacts", map[string]any{"email": 7}), domain.CodeInvalidRequest, "email")
	c.expect("an over-long tag name, second in its list",
		api(http.MethodPost, "/api/v1/contacts", map[string]any{"email": "a@example.com", "tagNames": []string{"ok", strings.Repeat("x", 256)}}),
		domain.CodeInvalidRequest, "tagNames[1]")
	c.expect("an unknown custom field",
		api(http.MethodPost, "/api/v1/contacts", map[string]any{"email": "a@example.com", "customFields": map[string]string{"cf_nope": "1"}}),
		domain.CodeInvalidRequest, "customFields.cf_nope")
	formID, fields := svc.NewForm(t, acc.ID, "Survey", nil, servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"},
		servicetest.Field{"label": "Age", "type": "number"})
	c.expect("a form value of the wrong kind",
		api(http.MethodPost, "/api/v1/forms/"+formID+"/submissions", map[string]any{"values": map[string]any{fields[0]: "a@example.com", fields[1]: "old"}}),
		domain.CodeInvalidRequest, "values."+fields[1])
	c.expect("a bad limit", api(http.MethodGet, "/api/v1/contacts?limit=0", nil), domain.CodeInvalidRequest, "limit")
	c.expect("a cursor this service did not hand out", api(http.MethodGet, "/api/v1/contacts?cursor=bm9wZQ", nil), domain.CodeInvalidRequest, "cursor")
	c.expect("several fields at fault at once", api(http.MethodPost, "/api/v1/contacts/tags", map[string]any{"email": "a@example.com", "action": "add"}),
		domain.CodeInvalidRequest, "")
	c.expect("operator: an amount that is no price",
		admin(http.MethodPost, "/products", map[string]any{"name": "Free", "pricingTiers": []any{map[string]any{"name": "Zero", "amount": 0, "currency": "USD", "interval": "one_time"}}}),
		domain.CodeInvalidRequest, "pricingTiers[0].amount")
	c.expect("operator: an automation without its type",
		admin(http.MethodPost, "/tags", map[string]any{"name": "VIP", "automations": []any{map[string]any{"type": "campaign.enroll", "campaignId": "c1"}, map[string]any{}}}),
		domain.CodeInvalidRequest, "automations[1].type")

	c.expect("no API key", svc.API.Do(t, servicetest.Request{Method: http.MethodGet, Path: "/api/v1/contacts", Token: "-"}), domain.CodeUnauthenticated, "")
	c.expect("an unknown API key", svc.API.Get(t, "/api/v1/contacts", "sk_live_nope"), domain.CodeUnauthenticated, "")
	c.expect("operator: a wrong token", svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID, "wrong"), domain.CodeUnauthenticated, "")

	tagsOnly := svc.NewKey(t, acc.ID, []string{"tags:read"})
	c.expect("a key without the scope", svc.API.Get(t, "/api/v1/contacts", tagsOnly), domain.CodeInsufficientScope, "")

	theirs := svc.API.Post(t, "/api/v1/contacts", other.Key, map[string]any{"email": "theirs@example.com"}).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
	c.expect("another account's contact", api(http.MethodGet, "/api/v1/contacts/"+theirs, nil), domain.CodeForbidden, "")
	theirProduct := svc.NewProduct(t, other.ID, simpleProduct("Theirs"))
	c.expect("operator: another account's product", admin(http.MethodGet, "/products/"+theirProduct.ID, nil), domain.CodeForbidden, "")

	c.expect("a contact that exists nowhere", api(http.MethodGet, "/api/v1/contacts/ct_00000000000000000000000000", nil), domain.CodeNotFound, "")
	c.expect("an unknown path", api(http.MethodGet, "/api/v1/nowhere", nil), domain.CodeNotFound, "")
	c.expect("operator: an unknown account", svc.Operator.Get(t, "/admin/v1/accounts/acc_nope", ""), domain.CodeNotFound, "")
	c.expect("operator: an unknown path", admin(http.MethodGet, "/nowhere", nil), domain.CodeNotFound, "")

	c.expect("a wrong method", api(http.MethodPut, "/api/v1/contacts", nil), domain.CodeMethodNotAllowed, "")
	c.expect("operator: a wrong method", admin(http.MethodPut, "/tags", nil), domain.CodeMethodNotAllowed, "")

	huge := `{"email": "a@example.com", "firstName": "` + strings.Repeat("x", httpMaxBody) + `"}`
	c.expect("a body over 256 KB", api(http.MethodPost, "/api/v1/contacts", huge), domain.CodeBodyTooLarge, "")
	c.expect("operator: a body over 256 KB", admin(http.MethodPost, "/tags", huge), domain.CodeBodyTooLarge, "")
}

// httpMaxBody is the largest body accepted (integration-api.md section 8).
const httpMaxBody = 256 << 10

// provokeStateErrors provokes the codes of a request that the state refuses: conflicts of
// every kind, idempotency and an expired activation (on a service whose clock the test moves).
func provokeStateErrors(t *testing.T, c *errorCodes, d sqldb.Dialect) {
	clock := &clock{now: time.Now().UTC()}
	svc := servicetest.Start(t, d, func(cfg *service.Config) { cfg.Now = clock.Now })
	acc := svc.NewAccount(t)

	withKey := func(key string, body any) servicetest.Response {
		return svc.API.Do(t, servicetest.Request{Method: http.MethodPost, Path: "/api/v1/contacts", Token: acc.Key, Body: body,
			Headers: map[string]string{"Idempotency-Key": key}})
	}
	withKey("reused", map[string]any{"email": "first@example.com"}).Expect(t, http.StatusOK)
	c.expect("an Idempotency-Key of another request", withKey("reused", map[string]any{"email": "second@example.com"}),
		domain.CodeIdempotencyKeyReused, "")

	// A retry that comes while its first attempt is still performed: sent at once, the
	// attempts that find the key taken are answered so. A round may see none (the first attempt
	// done before the others claim the key): another round, with a new key, is tried.
	inProgress := false
	for round := 0; round < 20 && !inProgress; round++ {
		key := "racing-" + time.Now().Format(time.RFC3339Nano)
		body := map[string]any{"email": "racer@example.com", "tagNames": []string{key}}
		for _, res := range sendAtOnce(t, 8, func() servicetest.Response { return withKey(key, body) }) {
			if res.Status == http.StatusConflict {
				c.expect("a retry while its request is performed", res, domain.CodeIdempotencyKeyInProgress, "")
				inProgress = true
			}
		}
	}
	if !inProgress {
		t.Error("20 rounds of 8 attempts at once with one key: none found its first attempt in progress")
	}

	calendarID, _ := svc.NewEventType(t, acc.ID, "Call", 30)
	book := func() servicetest.Response {
		return svc.API.Post(t, "/api/v1/scheduling/"+calendarID+"/bookings", acc.Key, map[string]any{"startTime": clock.Now().Add(48 * time.Hour).Format(time.RFC3339)})
	}
	book().Expect(t, http.StatusCreated)
	c.expect("a booking over another", book(), domain.CodeBookingConflict, "")

	pro := svc.NewProduct(t, acc.ID, proPlan())
	completed := buyDirect(t, svc, purchaseOf(acc.ID, pro, 1, "ada@example.com", "Ada"))
	pending := buyDirect(t, svc, purchaseOf(acc.ID, pro, 1, "bob@example.com", "Bob"))
	complete := func(token, user string) servicetest.Response {
		return svc.API.Post(t, "/api/v1/checkout/activations/"+token+"/complete", acc.Key, map[string]any{"externalUserId": user})
	}
	complete(completed.ActivationToken, "user-1").Expect(t, http.StatusOK)
	c.expect("an activation completed by another user", complete(completed.ActivationToken, "user-2"), domain.CodeActivationConflict, "")
	clock.advance(domain.ActivationTTL)
	c.expect("an expired activation", complete(pending.ActivationToken, "user-3"), domain.CodeActivationExpired, "")

	svc.NewTag(t, acc.ID, "VIP")
	c.expect("operator: a tag name taken",
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/tags", "", map[string]any{"name": "vip"}), domain.CodeConflict, "")
	c.expect("a subscription cancelled twice", cancelTwice(t, svc, acc.ID, pro), domain.CodeConflict, "")

	paying := buyDirect(t, svc, purchaseOf(acc.ID, pro, 1, "dora@example.com", "Dora"))
	c.expect("the erasure of a contact paying a subscription",
		svc.API.Delete(t, "/api/v1/contacts/"+paying.ContactID, acc.Key), domain.CodeSubscriptionActive, "")
}

// cancelTwice buys a monthly plan, cancels it and answers the second cancellation.
func cancelTwice(t *testing.T, svc *servicetest.Service, accountID string, pro servicetest.Product) servicetest.Response {
	res := buyDirect(t, svc, purchaseOf(accountID, pro, 1, "carl@example.com", "Carl"))
	path := "/admin/v1/accounts/" + accountID + "/checkout/subscriptions/" + res.SubscriptionID + "/cancel"
	svc.Operator.Post(t, path, "", map[string]any{"atPeriodEnd": false}).Expect(t, http.StatusOK)
	return svc.Operator.Post(t, path, "", map[string]any{"atPeriodEnd": false})
}

// provokeRateLimit provokes rate_limited on a service with the section 8 limits on: past 30
// failed authentications an address's attempts are refused.
func provokeRateLimit(t *testing.T, c *errorCodes, d sqldb.Dialect) {
	svc := servicetest.Start(t, d, func(cfg *service.Config) { cfg.RateLimits = true })
	for range 30 {
		svc.API.Get(t, "/api/v1/contacts", "sk_live_nope").Expect(t, http.StatusUnauthorized)
	}
	res := svc.API.Get(t, "/api/v1/contacts", "sk_live_nope")
	c.expect("an attempt past the failed-authentication limit", res, domain.CodeRateLimited, "")
	if res.Body["retryAfterSeconds"] == nil {
		t.Errorf("429 without retryAfterSeconds: %s", res.Raw)
	}
}

// provokeDatabaseFaults provokes internal (a read model's table gone: a bug's answer, which
// leaks nothing) and unavailable (the database out of reach: PostgreSQL refusing connections,
// the SQLite file locked by another process past the busy timeout), on a service of its own.
func provokeDatabaseFaults(t *testing.T, c *errorCodes, d sqldb.Dialect) {
	dbURL := sqldbtest.URL(t, d)
	svc := servicetest.StartOn(t, dbURL, func(*service.Config) {})
	acc := svc.NewAccount(t)
	ctx := context.Background()
	db := svc.App.DB().Write

	if _, err := db.ExecContext(ctx, `ALTER TABLE tags RENAME TO tags_away`); err != nil {
		t.Fatal(err)
	}
	res := svc.API.Do(t, servicetest.Request{Method: http.MethodGet, Path: "/api/v1/tags", Token: acc.Key, Unlisted: true})
	c.expect("a read model's table gone", res, domain.CodeInternal, "")
	if res.Body["error"] != "internal error" {
		t.Errorf("a 500 says %q, want the message that leaks nothing", res.Body["error"])
	}
	if _, err := db.ExecContext(ctx, `ALTER TABLE tags_away RENAME TO tags`); err != nil {
		t.Fatal(err)
	}

	if d == sqldb.Postgres {
		sqldbtest.RefuseConnections(t, dbURL)
		c.expect("a database that refuses connections", svc.API.Get(t, "/api/v1/contacts", acc.Key), domain.CodeUnavailable, "")
		return
	}
	// Another process's write transaction holds the file past the busy timeout (10 s).
	other, err := sql.Open("sqlite", "file:"+svc.App.DB().Path()+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	tx, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback() })
	if _, err := tx.ExecContext(ctx, `DELETE FROM tags WHERE 1 = 0`); err != nil { // takes the write lock
		t.Fatal(err)
	}
	c.expect("a database file locked by another process",
		svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "locked@example.com"}), domain.CodeUnavailable, "")
}
