package integration

import (
	"net/http"
	"strings"
	"time"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/httpapi/limits"
)

// Limits are the rate limits of /api/v1 (integration-api.md section 8), each a sliding window.
type Limits struct {
	PerAddress limits.Rule // every request, per client address (the 404s and 405s too)
	FailedAuth limits.Rule // 401 answers, per client address; past it, the failing attempts are refused
	Reads      limits.Rule // GET and HEAD, per account
	Writes     limits.Rule // POST, PATCH and DELETE, per account
	// ContactWrites are POST /contacts, /contacts/tags and /contacts/{contactId}/tags, per
	// account; they count against Writes too.
	ContactWrites limits.Rule
}

// Section8 are the limits of the contract.
func Section8() Limits {
	return Limits{
		PerAddress:    limits.Rule{Name: "ip", Max: 300, Window: time.Minute, Description: "300 requests per minute from one address"},
		FailedAuth:    limits.Rule{Name: "auth-failures", Max: 30, Window: 15 * time.Minute, Description: "30 failed authentications per 15 minutes from one address"},
		Reads:         limits.Rule{Name: "reads", Max: 200, Window: time.Minute, Description: "200 reads per minute per account"},
		Writes:        limits.Rule{Name: "writes", Max: 100, Window: time.Minute, Description: "100 writes per minute per account"},
		ContactWrites: limits.Rule{Name: "contact-writes", Max: 60, Window: time.Minute, Description: "60 contact and tag writes per minute per account"},
	}
}

// contactWrites are the routes of ContactWrites.
var contactWrites = map[string]bool{"/contacts": true, "/contacts/tags": true, "/contacts/{contactId}/tags": true}

// limitAddresses decides on every /api/v1 request on the API host before anything else: it
// counts it against its client's address. The failed authentications are not checked here: an
// address over them is refused only its failing attempts (unauthorized), so that the valid keys
// behind a shared address (a NAT, an automation platform) go on working while one broken client
// there fails (decisions.md "Failed authentication").
func (s *Server) limitAddresses(next http.Handler) http.Handler {
	applies := func(r *http.Request) bool {
		return s.isAPIHost(r, nil) && (r.URL.Path == "/api/v1" || strings.HasPrefix(r.URL.Path, "/api/v1/"))
	}
	return s.limits.Middleware(applies, func(client string) []limits.Count {
		return []limits.Count{{Rule: s.deps.Limits.PerAddress, Subject: client}}
	})(next)
}

// limitAccount counts an authenticated request against its account: a read, or a write (and a
// contact write on the routes of ContactWrites).
func (s *Server) limitAccount(method, path string, next http.Handler) http.Handler {
	if s.limits == nil {
		return next
	}
	rules := []limits.Rule{s.deps.Limits.Reads}
	if method != http.MethodGet { // HEAD is served as GET
		rules = []limits.Rule{s.deps.Limits.Writes}
		if contactWrites[path] {
			rules = append(rules, s.deps.Limits.ContactWrites)
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		counts := make([]limits.Count, len(rules))
		for i, rule := range rules {
			counts[i] = limits.Count{Rule: rule, Subject: principalOf(r.Context()).accountID()}
		}
		if s.limits.Admit(w, r, counts...) {
			next.ServeHTTP(w, r)
		}
	})
}

// unauthorized answers 401, counting the failure against the client's address: an address over
// FailedAuth gets 429 instead for a missing, invalid or revoked key, and keeps getting it until
// its oldest failure leaves the window; its requests with a valid key never come here.
func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request, message string) {
	if s.limits.Admit(w, r, limits.Count{Rule: s.deps.Limits.FailedAuth, Subject: s.limits.Client(r)}) {
		httpapi.Unauthorized(w, message)
	}
}
