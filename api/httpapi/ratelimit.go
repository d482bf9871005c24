package httpapi

import (
	"context"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/api/httpapi/limits"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/domain"
)

// RateLimits applies rate limits to the requests of a listener and tells every client where it
// stands. A request may be decided several times as it goes (per address before
// authentication, per account after); each decision is atomic over its windows, and a request
// refused by a later one gets back what the earlier ones counted: a 429 counts in no window.
//
// Every answer to a limited request carries RateLimit-Limit, RateLimit-Remaining and
// RateLimit-Reset of the tightest window that counted it: the one with the fewest requests
// remaining, on a tie the one that frees a slot last. Reset is the seconds until the oldest
// request in that window leaves it (a slot frees), rounded up. A refusal is a 429
// {"error", "retryAfterSeconds"} with Retry-After, both the whole seconds (rounded up, at least
// 1) until the refusing window frees a slot, and the headers of that window.
//
// A nil *RateLimits admits everything and sends no header (FUNNEL_RATE_LIMITS=off).
type RateLimits struct {
	limiter   limits.Limiter
	clientIPs ClientIPs
}

// NewRateLimits decides in limiter, counting clients by the address clientIPs finds.
func NewRateLimits(limiter limits.Limiter, clientIPs ClientIPs) *RateLimits {
	return &RateLimits{limiter: limiter, clientIPs: clientIPs}
}

type rateLimitKey struct{}

// limitedRequest is what the decisions on one request leave for the next ones.
type limitedRequest struct {
	client string         // the client's address as counted
	slots  []limits.Slot  // what the decisions so far counted
	shown  *limits.Status // the window in the headers
}

// Middleware decides on every request for which applies is true, before anything else, under
// the counts of its client (Client): requests it refuses are answered 429 there.
func (l *RateLimits) Middleware(applies func(*http.Request) bool, counts func(client string) []limits.Count) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if l == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !applies(r) {
				next.ServeHTTP(w, r)
				return
			}
			lr := &limitedRequest{client: clientSubject(l.clientIPs.Of(r))}
			r = r.WithContext(context.WithValue(r.Context(), rateLimitKey{}, lr))
			if l.Admit(w, r, counts(lr.client)...) {
				next.ServeHTTP(w, r)
			}
		})
	}
}

// Client is the subject a request's client is counted as: its IPv4 address, or the /64 network
// of its IPv6 address (what one host or site is given: counting single IPv6 addresses would let
// one client rotate through billions).
func (l *RateLimits) Client(r *http.Request) string {
	if lr, ok := r.Context().Value(rateLimitKey{}).(*limitedRequest); ok {
		return lr.client
	}
	if l == nil {
		return ""
	}
	return clientSubject(l.clientIPs.Of(r))
}

func clientSubject(addr netip.Addr) string {
	switch {
	case !addr.IsValid():
		return "unknown"
	case addr.Is6():
		prefix, _ := addr.Prefix(64)
		return prefix.String()
	default:
		return addr.String()
	}
}

// Admit decides on the request under counts. Admitted, it sets the RateLimit headers and returns
// true; refused, it gives back what earlier decisions on the request counted, answers 429, and
// returns false. A nil *RateLimits admits everything.
func (l *RateLimits) Admit(w http.ResponseWriter, r *http.Request, counts ...limits.Count) bool {
	if l == nil {
		return true
	}
	lr, ok := r.Context().Value(rateLimitKey{}).(*limitedRequest)
	if !ok {
		lr = &limitedRequest{}
	}
	d, err := l.limiter.Decide(r.Context(), counts)
	if err != nil { // the client went away (the limiter decides locally when Redis fails)
		logOf(r).Debug("rate limit decision", zap.Error(err))
		return true
	}
	if !d.Allowed {
		l.release(r, lr)
		refusing := refusingStatus(d.Statuses)
		setRateLimitHeaders(w, refusing)
		retry := wholeSeconds(refusing.Reset)
		w.Header().Set("Retry-After", strconv.Itoa(retry))
		writeBody(w, http.StatusTooManyRequests, wire.RateLimited{Error: "rate limit exceeded: " + refusing.Rule.Description,
			Code: wire.ErrorCode(domain.CodeRateLimited), RetryAfterSeconds: retry})
		return false
	}
	lr.slots = append(lr.slots, d.Slot)
	for _, s := range d.Statuses {
		if s.Counted && (lr.shown == nil || tighter(s, *lr.shown)) {
			lr.shown = &s
		}
	}
	if lr.shown != nil {
		setRateLimitHeaders(w, *lr.shown)
	}
	return true
}

// release gives back what the decisions on a refused request counted, even if its client left.
func (l *RateLimits) release(r *http.Request, lr *limitedRequest) {
	for _, slot := range lr.slots {
		if err := l.limiter.Release(context.WithoutCancel(r.Context()), slot); err != nil {
			// The slot stays counted until it leaves its window: stricter, never looser.
			logOf(r).Debug("rate limit release", zap.Error(err))
		}
	}
	lr.slots = nil
}

// refusingStatus is the refusing window that frees a slot last: the request would be refused
// until then.
func refusingStatus(statuses []limits.Status) limits.Status {
	var worst limits.Status
	for _, s := range statuses {
		if s.Refused && s.Reset >= worst.Reset {
			worst = s
		}
	}
	return worst
}

// tighter tells whether a leaves a client less room than b: fewer requests remaining, or as
// many and longer to wait for the next slot.
func tighter(a, b limits.Status) bool {
	if a.Remaining != b.Remaining {
		return a.Remaining < b.Remaining
	}
	return a.Reset > b.Reset
}

func setRateLimitHeaders(w http.ResponseWriter, s limits.Status) {
	h := w.Header()
	h.Set("RateLimit-Limit", strconv.Itoa(s.Rule.Max))
	h.Set("RateLimit-Remaining", strconv.Itoa(s.Remaining))
	h.Set("RateLimit-Reset", strconv.Itoa(wholeSeconds(s.Reset)))
}

// wholeSeconds rounds a wait up to whole seconds, at least 1: a client told 0 would retry at once.
func wholeSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
