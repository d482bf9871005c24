package api_test

import (
	"net/http"
	"testing"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// A path with an empty segment is not one of the API's: a JSON 404 on either listener, never a
// redirect to the path without it (which a client would follow as a GET, without its body).
func TestDoubleSlashIsNotFound(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		crm := svc.NewCRM(t, acc.ID, "Sales", "New")
		for _, c := range []struct {
			client       *servicetest.Client
			method, path string
		}{
			{svc.API, http.MethodPost, "/api/v1/crms//leads"},
			{svc.API, http.MethodGet, "/api/v1//contacts"},
			{svc.API, http.MethodPost, "/api/v1//contacts"},
			{svc.API, http.MethodGet, "/api/v1/crms/" + crm.ID + "//stages"},
			{svc.API, http.MethodGet, "//llms-full.txt"},
			{svc.API, http.MethodGet, "//healthz"},
			{svc.Operator, http.MethodPost, "/admin/v1//accounts"},
			{svc.Operator, http.MethodGet, "/admin/v1/accounts//" + acc.ID},
			{svc.Operator, http.MethodGet, "/admin/v1/accounts/" + acc.ID + "//tags"},
			{svc.Operator, http.MethodGet, "//metrics"},
		} {
			token := acc.Key // the operator client sends the operator token by default
			if c.client == svc.Operator {
				token = ""
			}
			res := c.client.Do(t, servicetest.Request{Method: c.method, Path: c.path, Token: token, Body: map[string]any{"name": "x", "email": "x@example.com"}})
			if msg := res.ExpectError(t, http.StatusNotFound); msg != "not found" || res.Header.Get("Location") != "" {
				t.Errorf("%s %s: %q, Location %q", c.method, c.path, msg, res.Header.Get("Location"))
			}
		}
	})
}

// An encoded slash (%2F) is part of a segment, not a separator: no path of either API has one,
// so such a path is unknown (404) and writes nothing, where the router, matching the decoded
// path, served /api/v1/contacts%2Ftags as /api/v1/contacts/tags.
func TestAnEncodedSlashIsNotAPathSeparator(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		crm := svc.NewCRM(t, acc.ID, "Sales", "New")
		for _, c := range []struct {
			client       *servicetest.Client
			method, path string
		}{
			{svc.API, http.MethodPost, "/api/v1/contacts%2Ftags"},
			{svc.API, http.MethodPost, "/api/v1/contacts%2ftags"},
			{svc.API, http.MethodGet, "/api/v1/crms/" + crm.ID + "%2Fstages"},
			{svc.Operator, http.MethodGet, "/admin/v1/accounts%2F" + acc.ID},
		} {
			token := acc.Key
			if c.client == svc.Operator {
				token = ""
			}
			res := c.client.Do(t, servicetest.Request{Method: c.method, Path: c.path, Token: token, Body: map[string]any{"email": "slash@example.com", "tagNames": []string{"VIP"}}})
			if msg := res.ExpectError(t, http.StatusNotFound); msg != "not found" {
				t.Errorf("%s %s: %q", c.method, c.path, msg)
			}
		}
		if c := contactByEmail(t, svc, acc.Key, "slash@example.com"); c != nil {
			t.Fatalf("a request to an unknown path wrote a contact: %v", c)
		}
	})
}
