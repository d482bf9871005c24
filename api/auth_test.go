package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

func TestAuthentication(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		for name, header := range map[string]string{
			"missing":      "",
			"not bearer":   "Basic " + acc.Key,
			"empty bearer": "Bearer ",
			"unknown key":  "Bearer fnl_doesnotexist",
		} {
			t.Run(name, func(t *testing.T) {
				req := servicetest.Request{Method: http.MethodGet, Path: "/api/v1/contacts", Token: "-"}
				if header != "" {
					req.Headers = map[string]string{"Authorization": header}
				}
				res := svc.API.Do(t, req)
				res.ExpectError(t, http.StatusUnauthorized)
				if !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
					t.Fatalf("WWW-Authenticate = %q", res.Header.Get("WWW-Authenticate"))
				}
			})
		}
		// A revoked key stops working at once; the account's other keys do not.
		second := svc.NewKey(t, acc.ID, nil)
		keys := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/api-keys", "").Expect(t, http.StatusOK).List(t, "apiKeys")
		if len(keys) != 2 {
			t.Fatalf("keys = %v", keys)
		}
		for _, k := range keys {
			if _, leaked := k["key"]; leaked {
				t.Fatal("the key list shows a secret")
			}
		}
		svc.Operator.Delete(t, "/admin/v1/accounts/"+acc.ID+"/api-keys/"+keys[0]["id"].(string), "").Expect(t, http.StatusOK)
		svc.API.Get(t, "/api/v1/contacts", acc.Key).ExpectError(t, http.StatusUnauthorized)
		svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "after-revoke@example.com"}).ExpectError(t, http.StatusUnauthorized)
		svc.API.Get(t, "/api/v1/contacts", second).Expect(t, http.StatusOK)
		svc.Operator.Delete(t, "/admin/v1/accounts/"+acc.ID+"/api-keys/"+keys[0]["id"].(string), "").ExpectError(t, http.StatusNotFound)
		svc.Operator.Delete(t, "/admin/v1/accounts/"+acc.ID+"/api-keys/key_unknown", "").ExpectError(t, http.StatusNotFound)
	})
}

// Each endpoint needs its scope (integration-api.md section 5): a key without it gets 403 and
// changes nothing.
func TestScopes(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		svc.NewTag(t, acc.ID, "T")
		id := upsert(t, svc, acc.Key, map[string]any{"email": "scoped@example.com"}).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
		endpoints := []struct {
			scope, method, path string
			body                any
		}{
			{"contacts:read", http.MethodGet, "/api/v1/contacts", nil},
			{"contacts:read", http.MethodGet, "/api/v1/contacts/" + id, nil},
			{"contacts:write", http.MethodPost, "/api/v1/contacts", map[string]any{"email": "new-by-scope@example.com"}},
			{"tags:write", http.MethodPost, "/api/v1/contacts/tags", map[string]any{"email": "scoped@example.com", "tagNames": []string{"T"}}},
			{"tags:write", http.MethodPost, "/api/v1/contacts/" + id + "/tags", map[string]any{"tagNames": []string{"T"}}},
			{"tags:read", http.MethodGet, "/api/v1/tags", nil},
		}
		for _, ep := range endpoints {
			t.Run(ep.method+" "+ep.path, func(t *testing.T) {
				var others []string
				for _, s := range []string{"contacts:read", "contacts:write", "tags:read", "tags:write", "forms:read"} {
					if s != ep.scope {
						others = append(others, s)
					}
				}
				without := svc.NewKey(t, acc.ID, others)
				msg := svc.API.Do(t, servicetest.Request{Method: ep.method, Path: ep.path, Token: without, Body: ep.body}).ExpectError(t, http.StatusForbidden)
				if !strings.Contains(msg, ep.scope) {
					t.Fatalf("403 message %q does not name %s", msg, ep.scope)
				}
				with := svc.NewKey(t, acc.ID, []string{ep.scope})
				svc.API.Do(t, servicetest.Request{Method: ep.method, Path: ep.path, Token: with, Body: ep.body}).Expect(t, http.StatusOK)
			})
		}
		if list := svc.API.Get(t, "/api/v1/contacts?email=new-by-scope@example.com", acc.Key).List(t, "contacts"); len(list) != 1 {
			t.Fatalf("only the key with the scope should have created the contact: %v", list)
		}
	})
}

func TestAPIHostAndRoutes(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		// Any port on the API host; never another host.
		svc.API.Do(t, servicetest.Request{Method: http.MethodGet, Path: "/api/v1/contacts", Token: acc.Key, Host: "api.localhost:9999"}).Expect(t, http.StatusOK)
		svc.API.Do(t, servicetest.Request{Method: http.MethodGet, Path: "/api/v1/contacts", Token: acc.Key, Host: "API.LOCALHOST"}).Expect(t, http.StatusOK)
		svc.API.Do(t, servicetest.Request{Method: http.MethodGet, Path: "/api/v1/contacts", Token: acc.Key, Host: "localhost"}).ExpectError(t, http.StatusNotFound)
		svc.API.Do(t, servicetest.Request{Method: http.MethodGet, Path: "/llms-full.txt", Host: "evil.example"}).ExpectError(t, http.StatusNotFound)
		llms := svc.API.Do(t, servicetest.Request{Method: http.MethodGet, Path: "/llms-full.txt"}).Expect(t, http.StatusOK)
		if !strings.Contains(string(llms.Raw), "/api/v1/contacts") {
			t.Fatal("llms-full.txt does not describe the contacts endpoint")
		}
		svc.API.Get(t, "/api/v1/nothing-here", acc.Key).ExpectError(t, http.StatusNotFound)
		svc.API.Get(t, "/api/v2/contacts", acc.Key).ExpectError(t, http.StatusNotFound)
		if res := svc.API.Delete(t, "/api/v1/contacts", acc.Key); res.ExpectError(t, http.StatusMethodNotAllowed) != "" && res.Header.Get("Allow") != "GET, HEAD, POST" {
			t.Fatalf("Allow = %q", res.Header.Get("Allow"))
		}
		svc.API.Do(t, servicetest.Request{Method: http.MethodPut, Path: "/api/v1/tags", Token: acc.Key}).ExpectError(t, http.StatusMethodNotAllowed)
		for _, host := range []string{"api.localhost", "anything.example"} {
			svc.API.Do(t, servicetest.Request{Method: http.MethodGet, Path: "/healthz", Host: host}).Expect(t, http.StatusOK)
			svc.API.Do(t, servicetest.Request{Method: http.MethodGet, Path: "/readyz", Host: host}).Expect(t, http.StatusOK)
		}
		res := svc.API.Get(t, "/api/v1/contacts", acc.Key)
		if res.Header.Get("X-Request-Id") == "" || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("headers = %v", res.Header)
		}
	})
}

// FUNNEL_API_HOST is "the only host (port ignored)" on which /api/v1 answers (operator-api.md):
// configured as the load balancer's host:port, with stray spaces or in capitals, it is read as a
// request's Host is, so its requests are answered, on any port, instead of every one being 404
// while the service looks healthy.
func TestAPIHostConfiguredWithAPortAndSpaces(t *testing.T) {
	const configured = " API.Example.com:8443 "
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		svc := servicetest.Start(t, dialect, func(c *service.Config) { c.APIHost = configured })
		acc := svc.NewAccount(t)
		for _, host := range []string{"api.example.com", "api.example.com:8443", "API.EXAMPLE.COM:443"} {
			svc.API.Do(t, servicetest.Request{Method: http.MethodGet, Path: "/api/v1/contacts", Token: acc.Key, Host: host}).Expect(t, http.StatusOK)
			svc.API.Do(t, servicetest.Request{Method: http.MethodGet, Path: "/llms-full.txt", Host: host}).Expect(t, http.StatusOK)
		}
		svc.API.Do(t, servicetest.Request{Method: http.MethodGet, Path: "/api/v1/contacts", Token: acc.Key, Host: "api.localhost"}).ExpectError(t, http.StatusNotFound)
	})
}

// Once the revoke of a key is answered, no process accepts the key: not the one that revoked it
// (on either store), nor another process on the same PostgreSQL database that had the key in
// memory, asked at once, with no time for its relay to see the revocation.
func TestRevokedKeyIsRefusedAtOnceByEveryProcess(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		for range 5 {
			id, key := newKeyWithID(t, svc, acc.ID)
			svc.API.Get(t, "/api/v1/contacts", key).Expect(t, http.StatusOK)
			svc.Operator.Delete(t, "/admin/v1/accounts/"+acc.ID+"/api-keys/"+id, "").Expect(t, http.StatusOK)
			svc.API.Get(t, "/api/v1/contacts", key).ExpectError(t, http.StatusUnauthorized)
		}
	})
	t.Run("two processes", func(t *testing.T) {
		url := sqldbtest.URL(t, sqldb.Postgres)
		first := servicetest.StartOn(t, url, func(*service.Config) {})
		second := servicetest.StartOn(t, url, func(*service.Config) {})
		acc := first.NewAccount(t)
		for i := range 20 {
			id, key := newKeyWithID(t, first, acc.ID)
			// The other process knows the key (and keeps it in memory) before the revoke.
			second.API.Get(t, "/api/v1/contacts", key).Expect(t, http.StatusOK)
			first.Operator.Delete(t, "/admin/v1/accounts/"+acc.ID+"/api-keys/"+id, "").Expect(t, http.StatusOK)
			if res := second.API.Get(t, "/api/v1/contacts", key); res.Status != http.StatusUnauthorized {
				t.Fatalf("key %d: the other process answered %d right after the revoke", i, res.Status)
			}
			second.API.Post(t, "/api/v1/contacts", key, map[string]any{"email": "after-revoke@example.com"}).ExpectError(t, http.StatusUnauthorized)
		}
	})
}

// newKeyWithID issues a key with every scope and returns its id and secret.
func newKeyWithID(t *testing.T, svc *servicetest.Service, accountID string) (string, string) {
	t.Helper()
	k := svc.Operator.Post(t, "/admin/v1/accounts/"+accountID+"/api-keys", "", map[string]any{}).Expect(t, http.StatusCreated).Object(t, "apiKey")
	return k["id"].(string), k["key"].(string)
}
