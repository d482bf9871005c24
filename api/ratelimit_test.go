package api_test

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/ratelimit/redistest"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// limited starts a service of its own with the section 8 limits on, kept in its memory, on a
// clock the test moves (the windows slide on it).
func limited(t *testing.T, d sqldb.Dialect, configure ...func(*service.Config)) (*servicetest.Service, *clock) {
	t.Helper()
	c := &clock{now: time.Date(2030, 1, 31, 12, 0, 0, 0, time.UTC)}
	svc := servicetest.Start(t, d, func(cfg *service.Config) {
		cfg.RateLimits = true
		cfg.Now = c.Now
		for _, f := range configure {
			f(cfg)
		}
	})
	return svc, c
}

// sharedThroughRedis keeps the windows in the test Redis, under a prefix of the test's own.
func sharedThroughRedis(t *testing.T) func(*service.Config) {
	url, prefix := redistest.URL(t), redistest.Prefix(t)
	return func(cfg *service.Config) {
		cfg.RateLimits = true
		cfg.RedisURL = url
		cfg.RedisKeyPrefix = prefix
	}
}

// expectLimitHeaders checks the RateLimit headers of an answer: the tightest window's limit, the
// requests it has left, and the seconds until its oldest request leaves it.
func expectLimitHeaders(t *testing.T, what string, res servicetest.Response, limit, remaining, reset int) {
	t.Helper()
	got := fmt.Sprintf("%s/%s/%s", res.Header.Get("RateLimit-Limit"), res.Header.Get("RateLimit-Remaining"), res.Header.Get("RateLimit-Reset"))
	if want := fmt.Sprintf("%d/%d/%d", limit, remaining, reset); got != want {
		t.Fatalf("%s (%d): RateLimit-Limit/Remaining/Reset = %s, want %s", what, res.Status, got, want)
	}
	if res.Status != http.StatusTooManyRequests && res.Header.Get("Retry-After") != "" {
		t.Fatalf("%s: Retry-After on a %d", what, res.Status)
	}
}

// expectRefused checks a 429: its body {"error", "code": "rate_limited", "retryAfterSeconds"}, Retry-After, and the
// refusing window in the headers. It returns the error message.
func expectRefused(t *testing.T, what string, res servicetest.Response, limit, retryAfter int) string {
	t.Helper()
	res.Expect(t, http.StatusTooManyRequests)
	msg, _ := res.Body["error"].(string)
	if len(res.Body) != 3 || !strings.HasPrefix(msg, "rate limit exceeded: ") || res.Body["code"] != "rate_limited" || res.Body["retryAfterSeconds"] != float64(retryAfter) {
		t.Fatalf("%s: body %s, want {error, code: rate_limited, retryAfterSeconds: %d}", what, res.Raw, retryAfter)
	}
	if got := res.Header.Get("Retry-After"); got != strconv.Itoa(retryAfter) {
		t.Fatalf("%s: Retry-After %q, want %d", what, got, retryAfter)
	}
	expectLimitHeaders(t, what, res, limit, 0, retryAfter)
	return msg
}

// A subscription body without its members: a write answered 400, which counts all the same.
var badSubscription = map[string]any{}

func TestPerAddressLimit(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		svc, c := limited(t, d)
		acc := svc.NewAccount(t)
		for i := 1; i <= 300; i++ {
			res := svc.API.Get(t, "/api/v1/nope", "-").Expect(t, http.StatusNotFound)
			expectLimitHeaders(t, "unknown path", res, 300, 300-i, 60)
		}
		c.advance(10 * time.Second)
		msg := expectRefused(t, "a valid key over the address's limit", svc.API.Get(t, "/api/v1/tags", acc.Key), 300, 50)
		if !strings.Contains(msg, "300 requests per minute") {
			t.Fatalf("message %q does not name the limit", msg)
		}
		expectRefused(t, "a wrong method", svc.API.Do(t, servicetest.Request{Method: http.MethodPut, Path: "/api/v1/tags", Token: acc.Key}), 300, 50)
		// Only /api/v1 on the API host is limited: the health endpoints, the reference for
		// machines and the operator API answer.
		for _, res := range []servicetest.Response{svc.API.Get(t, "/healthz", "-"), svc.API.Get(t, "/llms-full.txt", "-"),
			svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID, "")} {
			res.Expect(t, http.StatusOK)
			if res.Header.Get("RateLimit-Limit") != "" {
				t.Fatal("a RateLimit header outside /api/v1")
			}
		}
		c.advance(50*time.Second - time.Nanosecond)
		expectRefused(t, "a nanosecond before the window frees", svc.API.Get(t, "/api/v1/tags", acc.Key), 300, 1)
		c.advance(time.Nanosecond)
		res := svc.API.Get(t, "/api/v1/tags", acc.Key).Expect(t, http.StatusOK)
		expectLimitHeaders(t, "a minute after: the reads window is the tightest", res, 200, 199, 60)
	})
}

// 30 failed authentications from one address in 15 minutes; the address's failing attempts are
// then refused until its oldest failure leaves the window, while its valid keys go on working
// (decisions.md "Failed authentication": one broken client behind a shared address).
func TestFailedAuthenticationLimit(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		svc, c := limited(t, d)
		acc := svc.NewAccount(t)
		revoked := svc.NewKey(t, acc.ID, nil)
		keyID := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/api-keys", "").Expect(t, http.StatusOK).List(t, "apiKeys")[1]["id"].(string)
		svc.Operator.Delete(t, "/admin/v1/accounts/"+acc.ID+"/api-keys/"+keyID, "").Expect(t, http.StatusOK)
		for i := 1; i <= 30; i++ {
			c.advance(time.Second) // failure i at t0 + i s
			token := []string{"fnl_not_a_key", "-", revoked}[i%3]
			res := svc.API.Get(t, "/api/v1/tags", token)
			res.ExpectError(t, http.StatusUnauthorized)
			expectLimitHeaders(t, fmt.Sprintf("failure %d", i), res, 30, 30-i, 901-i)
		}
		// The first failure leaves the window at t0 + 1 s + 15 min; it is t0 + 30 s.
		msg := expectRefused(t, "failure 31", svc.API.Get(t, "/api/v1/tags", "fnl_not_a_key"), 30, 871)
		if !strings.Contains(msg, "30 failed authentications per 15 minutes") {
			t.Fatalf("message %q does not name the limit", msg)
		}
		// A valid key from the same address is not refused by it, and its answer shows its own
		// windows: its account's reads (199 left) are tighter than its address's (300 - 31).
		res := svc.API.Get(t, "/api/v1/tags", acc.Key).Expect(t, http.StatusOK)
		expectLimitHeaders(t, "a valid key after 31 failures", res, 200, 199, 60)
		svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, badSubscription).Expect(t, http.StatusBadRequest)
		for _, token := range []string{"fnl_not_a_key", "-", revoked} {
			expectRefused(t, "a failing attempt ("+token+")", svc.API.Get(t, "/api/v1/tags", token), 30, 871)
		}
		// A path that needs no key is no attempt: it answers as usual.
		svc.API.Get(t, "/api/v1/nope", "-").Expect(t, http.StatusNotFound)
		c.advance(871*time.Second - time.Nanosecond)
		expectRefused(t, "a nanosecond before the first failure leaves", svc.API.Get(t, "/api/v1/tags", "fnl_not_a_key"), 30, 1)
		svc.API.Get(t, "/api/v1/tags", acc.Key).Expect(t, http.StatusOK)
		c.advance(time.Nanosecond)
		svc.API.Get(t, "/api/v1/tags", "fnl_not_a_key").ExpectError(t, http.StatusUnauthorized) // takes the slot that freed
		expectRefused(t, "the window is full again", svc.API.Get(t, "/api/v1/tags", "fnl_not_a_key"), 30, 1)
		svc.API.Get(t, "/api/v1/tags", acc.Key).Expect(t, http.StatusOK)
	})
}

func TestPerAccountReadLimit(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		svc, _ := limited(t, d)
		acc, other := svc.NewAccount(t), svc.NewAccount(t)
		for i := 1; i <= 200; i++ {
			method := http.MethodGet
			if i%10 == 0 {
				method = http.MethodHead // a read like GET
			}
			res := svc.API.Do(t, servicetest.Request{Method: method, Path: "/api/v1/tags", Token: acc.Key}).Expect(t, http.StatusOK)
			expectLimitHeaders(t, method, res, 200, 200-i, 60)
		}
		msg := expectRefused(t, "read 201", svc.API.Get(t, "/api/v1/contacts", acc.Key), 200, 60)
		if !strings.Contains(msg, "200 reads per minute per account") {
			t.Fatalf("message %q does not name the limit", msg)
		}
		svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, badSubscription).ExpectError(t, http.StatusBadRequest) // writes are counted apart
		// Another account reads on; its address has the fewer requests left (300 - 202), so the
		// headers show the address's window: the tightest.
		res := svc.API.Get(t, "/api/v1/tags", other.Key).Expect(t, http.StatusOK)
		expectLimitHeaders(t, "another account", res, 300, 98, 60)
	})
}

// 60 contact and tag writes per minute, and they count against the 100 writes too.
func TestPerAccountWriteLimits(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		svc, _ := limited(t, d)
		acc := svc.NewAccount(t)
		var contactID string
		for i := 1; i <= 60; i++ {
			var res servicetest.Response
			switch {
			case i == 1:
				res = upsert(t, svc, acc.Key, map[string]any{"email": "first@example.com"}).Expect(t, http.StatusOK)
				contactID = res.Object(t, "contact")["id"].(string)
			case i%3 == 0:
				res = svc.API.Post(t, "/api/v1/contacts/tags", acc.Key, map[string]any{"email": "first@example.com", "tagNames": []string{"Lead"}, "action": "add"}).Expect(t, http.StatusOK)
			case i%3 == 1:
				res = svc.API.Post(t, "/api/v1/contacts/"+contactID+"/tags", acc.Key, map[string]any{"tagNames": []string{"Lead"}, "action": "add"}).Expect(t, http.StatusOK)
			default:
				res = upsert(t, svc, acc.Key, map[string]any{"email": fmt.Sprintf("c%d@example.com", i)}).Expect(t, http.StatusOK)
			}
			expectLimitHeaders(t, fmt.Sprintf("contact write %d", i), res, 60, 60-i, 60)
		}
		msg := expectRefused(t, "contact write 61", upsert(t, svc, acc.Key, map[string]any{"email": "late@example.com"}), 60, 60)
		if !strings.Contains(msg, "60 contact and tag writes per minute per account") {
			t.Fatalf("message %q does not name the limit", msg)
		}
		expectRefused(t, "tag write 61", svc.API.Post(t, "/api/v1/contacts/"+contactID+"/tags", acc.Key, map[string]any{"tagNames": []string{"X"}}), 60, 60)
		// 40 writes of other kinds remain: the contact writes took 60 of the 100.
		for i := 1; i <= 40; i++ {
			var res servicetest.Response
			if i%2 == 0 {
				res = svc.API.Patch(t, "/api/v1/crms/crm_nope/leads/lead_nope", acc.Key, map[string]any{"title": "x"})
			} else {
				res = svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, badSubscription).Expect(t, http.StatusBadRequest)
			}
			if res.Status >= 500 || res.Status == http.StatusTooManyRequests {
				t.Fatalf("write %d: %d %s", 60+i, res.Status, res.Raw)
			}
			expectLimitHeaders(t, fmt.Sprintf("write %d", 60+i), res, 100, 40-i, 60)
		}
		msg = expectRefused(t, "write 101", svc.API.Delete(t, "/api/v1/webhooks/subscriptions/wh_nope", acc.Key), 100, 60)
		if !strings.Contains(msg, "100 writes per minute per account") {
			t.Fatalf("message %q does not name the limit", msg)
		}
		svc.API.Get(t, "/api/v1/contacts/"+contactID, acc.Key).Expect(t, http.StatusOK) // reads are counted apart
		// Nothing refused was written.
		if n := len(svc.API.Get(t, "/api/v1/contacts?email=late@example.com", acc.Key).Expect(t, http.StatusOK).List(t, "contacts")); n != 0 {
			t.Fatalf("a refused upsert was written")
		}
	})
}

// A slot frees exactly when the oldest request leaves the window (a minute after it), one at a
// time: 100 writes in any minute, never 101, however they are spread.
func TestWriteWindowSlides(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		svc, c := limited(t, d)
		acc := svc.NewAccount(t)
		write := func() servicetest.Response {
			return svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, badSubscription)
		}
		write().Expect(t, http.StatusBadRequest) // t0
		c.advance(30 * time.Second)
		for range 99 {
			write().Expect(t, http.StatusBadRequest) // t0 + 30 s
		}
		expectRefused(t, "at t0 + 30 s", write(), 100, 30)
		c.advance(30*time.Second - time.Nanosecond)
		expectRefused(t, "a nanosecond before t0 + 60 s", write(), 100, 1)
		c.advance(time.Nanosecond)
		res := write().Expect(t, http.StatusBadRequest)
		expectLimitHeaders(t, "at t0 + 60 s", res, 100, 0, 30)
		expectRefused(t, "only one slot freed", write(), 100, 30)
		c.advance(30 * time.Second)
		for i := 1; i <= 99; i++ {
			expectLimitHeaders(t, "at t0 + 90 s", write().Expect(t, http.StatusBadRequest), 100, 99-i, 30)
		}
	})
}

// Every /api/v1 answer carries the headers of the tightest window that counted it, errors
// included: here the account's windows (reads 200, writes 100, contact writes 60), the
// address's failed authentications (30), and the address's window (300) where no account is
// known.
func TestRateLimitHeadersOnEveryAnswer(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		svc, _ := limited(t, d)
		acc := svc.NewAccount(t)
		contactsOnly := svc.NewKey(t, acc.ID, []string{"contacts:read"})
		huge := `{"email": "big@example.com", "firstName": "` + strings.Repeat("x", 300<<10) + `"}`
		for _, c := range []struct {
			what                    string
			req                     servicetest.Request
			status                  int
			limit, remaining, reset int
		}{
			{"200", servicetest.Request{Method: http.MethodGet, Path: "/api/v1/tags", Token: acc.Key}, 200, 200, 199, 60},
			{"400 of a handler", servicetest.Request{Method: http.MethodPost, Path: "/api/v1/webhooks/subscriptions", Token: acc.Key, Body: badSubscription}, 400, 100, 99, 60},
			{"400 of the URL guard", servicetest.Request{Method: http.MethodGet, Path: "/api/v1/contacts/%00", Token: acc.Key}, 400, 300, 297, 60},
			{"401", servicetest.Request{Method: http.MethodGet, Path: "/api/v1/tags", Token: "fnl_wrong"}, 401, 30, 29, 900},
			{"403", servicetest.Request{Method: http.MethodGet, Path: "/api/v1/tags", Token: contactsOnly}, 403, 200, 198, 60},
			{"404", servicetest.Request{Method: http.MethodGet, Path: "/api/v1/nope", Token: acc.Key}, 404, 300, 294, 60},
			{"405", servicetest.Request{Method: http.MethodDelete, Path: "/api/v1/contacts", Token: acc.Key}, 405, 300, 293, 60},
			{"413", servicetest.Request{Method: http.MethodPost, Path: "/api/v1/contacts", Token: acc.Key, Body: huge}, 413, 60, 59, 60},
		} {
			res := svc.API.Do(t, c.req)
			if res.Status != c.status {
				t.Fatalf("%s: status %d: %s", c.what, res.Status, res.Raw)
			}
			expectLimitHeaders(t, c.what, res, c.limit, c.remaining, c.reset)
		}
	})
}

// FUNNEL_RATE_LIMITS=off (the shared test services run so): nothing is refused and no
// RateLimit header is sent.
func TestRateLimitsOff(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		for i := range 40 {
			res := svc.API.Get(t, "/api/v1/tags", "fnl_wrong").Expect(t, http.StatusUnauthorized)
			if res.Header.Get("RateLimit-Limit") != "" || res.Header.Get("RateLimit-Remaining") != "" {
				t.Fatalf("failure %d: RateLimit headers with the limits off", i)
			}
		}
		for range 310 {
			res := svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, badSubscription).Expect(t, http.StatusBadRequest)
			if res.Header.Get("RateLimit-Reset") != "" {
				t.Fatal("RateLimit headers with the limits off")
			}
		}
		svc.API.Get(t, "/api/v1/tags", acc.Key).Expect(t, http.StatusOK)
	})
}

// X-Forwarded-For names the client only when the connection comes from a trusted proxy, and
// then its rightmost address that is not a trusted proxy counts: what a client writes to the
// left is its own claim. IPv6 clients are counted by their /64.
func TestForwardedForFromTrustedProxiesOnly(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		get := func(svc *servicetest.Service, forwardedFor string) servicetest.Response {
			return svc.API.Do(t, servicetest.Request{Method: http.MethodGet, Path: "/api/v1/nope", Token: "-", Headers: map[string]string{"X-Forwarded-For": forwardedFor}})
		}
		t.Run("trusted", func(t *testing.T) {
			svc, _ := limited(t, d, func(c *service.Config) { c.TrustedProxies = "127.0.0.1, 10.0.0.0/8" })
			for i := 1; i <= 300; i++ {
				// each request claims another client; the proxy saw 203.0.113.7
				get(svc, fmt.Sprintf("198.51.100.%d, 203.0.113.7", i%250)).Expect(t, http.StatusNotFound)
			}
			expectRefused(t, "the client the proxy saw", get(svc, "198.51.100.99, 203.0.113.7"), 300, 60)
			expectLimitHeaders(t, "another client", get(svc, "203.0.113.8").Expect(t, http.StatusNotFound), 300, 299, 60)
			expectLimitHeaders(t, "the same behind two proxies", get(svc, "203.0.113.8, 10.1.2.3").Expect(t, http.StatusNotFound), 300, 298, 60)
			expectLimitHeaders(t, "the proxy itself", svc.API.Get(t, "/api/v1/nope", "-").Expect(t, http.StatusNotFound), 300, 299, 60)
			expectLimitHeaders(t, "an IPv6 client", get(svc, "2001:db8:1:2::1").Expect(t, http.StatusNotFound), 300, 299, 60)
			expectLimitHeaders(t, "its /64", get(svc, "2001:db8:1:2:ffff::9").Expect(t, http.StatusNotFound), 300, 298, 60)
			expectLimitHeaders(t, "another /64", get(svc, "2001:db8:1:3::1").Expect(t, http.StatusNotFound), 300, 299, 60)
		})
		t.Run("untrusted", func(t *testing.T) {
			svc, _ := limited(t, d)
			for i := 1; i <= 300; i++ {
				get(svc, "203.0.113.7").Expect(t, http.StatusNotFound)
			}
			expectRefused(t, "a client that names another address", get(svc, "203.0.113.8"), 300, 60)
		})
	})
}

// The windows kept in Redis: one process on each storage mode, its limits exact on Redis's
// clock (so Retry-After is a minute less the little time the test took).
func TestLimitsKeptInRedis(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		svc := servicetest.Start(t, d, sharedThroughRedis(t))
		acc := svc.NewAccount(t)
		for i := 1; i <= 100; i++ {
			res := svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, badSubscription).Expect(t, http.StatusBadRequest)
			if got := res.Header.Get("RateLimit-Remaining"); got != strconv.Itoa(100-i) {
				t.Fatalf("write %d: RateLimit-Remaining %s", i, got)
			}
		}
		res := svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, badSubscription)
		expectRefused(t, "write 101", res, 100, retryAfterOf(t, res, 60))
		for range 30 {
			svc.API.Get(t, "/api/v1/tags", "fnl_wrong").ExpectError(t, http.StatusUnauthorized)
		}
		res = svc.API.Get(t, "/api/v1/tags", "fnl_wrong")
		expectRefused(t, "failure 31", res, 30, retryAfterOf(t, res, 900))
		svc.API.Get(t, "/api/v1/tags", acc.Key).Expect(t, http.StatusOK)
	})
}

// Two processes on one database count an address's failed authentications together in Redis:
// 31 failures split across them, then on either a valid key from that address is answered and
// an invalid one refused.
func TestFailedAuthenticationsSharedThroughRedis(t *testing.T) {
	url := sqldbtest.URL(t, sqldb.Postgres)
	shared := sharedThroughRedis(t)
	first, second := servicetest.StartOn(t, url, shared), servicetest.StartOn(t, url, shared)
	acc := first.NewAccount(t)
	for i := 1; i <= 30; i++ {
		svc := []*servicetest.Service{first, second}[i%2]
		svc.API.Get(t, "/api/v1/tags", "fnl_wrong").ExpectError(t, http.StatusUnauthorized)
	}
	for _, svc := range []*servicetest.Service{first, second} {
		res := svc.API.Get(t, "/api/v1/tags", "fnl_wrong")
		expectRefused(t, "an invalid key after 30 failures", res, 30, retryAfterOf(t, res, 900))
		svc.API.Get(t, "/api/v1/tags", acc.Key).Expect(t, http.StatusOK)
		svc.API.Get(t, "/api/v1/tags", "-").Expect(t, http.StatusTooManyRequests)
	}
}

// retryAfterOf reads the Retry-After of an answer decided on a real clock: at most window, and
// not much less on this (loaded) machine.
func retryAfterOf(t *testing.T, res servicetest.Response, window int) int {
	t.Helper()
	n, err := strconv.Atoi(res.Header.Get("Retry-After"))
	if err != nil || n > window || n < window-20 {
		t.Fatalf("Retry-After %q, want about %d: %d %s", res.Header.Get("Retry-After"), window, res.Status, res.Raw)
	}
	return n
}

// Two processes on one database share their windows through Redis: 100 writes split across
// them, and the 101st is refused on either.
func TestTwoProcessesShareTheLimitsThroughRedis(t *testing.T) {
	url := sqldbtest.URL(t, sqldb.Postgres)
	shared := sharedThroughRedis(t)
	first, second := servicetest.StartOn(t, url, shared), servicetest.StartOn(t, url, shared)
	acc := first.NewAccount(t)
	for i := 1; i <= 100; i++ {
		svc := []*servicetest.Service{first, second}[i%2]
		res := svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, badSubscription).Expect(t, http.StatusBadRequest)
		if got := res.Header.Get("RateLimit-Remaining"); got != strconv.Itoa(100-i) {
			t.Fatalf("write %d: RateLimit-Remaining %s, want %d", i, got, 100-i)
		}
	}
	for _, svc := range []*servicetest.Service{first, second} {
		res := svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, badSubscription)
		expectRefused(t, "write 101", res, 100, retryAfterOf(t, res, 60))
	}
}

// Redis away: every request is answered, the limits hold per process, and the metric says so.
func TestLimitsWhileRedisIsAway(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closedPort := ln.Addr().String()
		ln.Close() // nothing listens there now
		svc, _ := limited(t, d, func(c *service.Config) { c.RedisURL = "redis://" + closedPort })
		acc := svc.NewAccount(t)
		for i := 1; i <= 100; i++ {
			res := svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, badSubscription).Expect(t, http.StatusBadRequest)
			expectLimitHeaders(t, fmt.Sprintf("write %d", i), res, 100, 100-i, 60)
		}
		expectRefused(t, "write 101", svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, badSubscription), 100, 60)
		metrics := string(svc.Operator.Get(t, "/metrics", "").Expect(t, http.StatusOK).Raw)
		if !strings.Contains(metrics, "\nfunnel_rate_limit_redis_unreachable 1\n") {
			t.Fatalf("the metric is not raised:\n%s", grepLines(metrics, "funnel_rate_limit"))
		}
		if !strings.Contains(metrics, "\nfunnel_rate_limit_local_decisions_total ") || strings.Contains(metrics, "\nfunnel_rate_limit_local_decisions_total 0\n") {
			t.Fatalf("no local decision counted:\n%s", grepLines(metrics, "funnel_rate_limit"))
		}
	})
}

func grepLines(text, word string) string {
	var out []string
	for line := range strings.SplitSeq(text, "\n") {
		if strings.Contains(line, word) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
