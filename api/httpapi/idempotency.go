package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/api/httpapi/idempotent"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
)

// The Idempotency-Key request header, on every POST and PATCH of both APIs (decisions.md
// "General"; the rules are in docs/integration-api.md "Idempotency-Key").
const (
	IdempotencyKeyHeader = "Idempotency-Key"
	// ReplayedHeader marks an answer that performed nothing: the kept answer of an earlier
	// attempt, or one made from what an earlier attempt performed.
	ReplayedHeader = "Idempotent-Replayed"
	// MaxIdempotencyKey is the longest key accepted, in characters (printable ASCII).
	MaxIdempotencyKey = 255
)

// Idempotent wraps the handler of a route so that a POST or PATCH carrying an Idempotency-Key is
// performed once per key and scope, and its retries get the same answer. scope names whose keys
// these are (the account of the API key, or the operator token); it runs after authentication.
// Other methods, and requests without the header, pass through untouched. A nil store turns the
// header off.
func Idempotent(store idempotent.Store, scope func(*http.Request) string, next http.Handler) http.Handler {
	return idempotentKeepingAfter(store, scope, next, keepOutcomesAfter)
}

// idempotentKeepingAfter is Idempotent with the delay after which the outcomes of a request that
// has not answered are kept (keepOutcomesAfter; the tests set their own).
func idempotentKeepingAfter(store idempotent.Store, scope func(*http.Request) string, next http.Handler, after time.Duration) http.Handler {
	if store == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost && r.Method != http.MethodPatch {
			next.ServeHTTP(w, r)
			return
		}
		keys := r.Header.Values(IdempotencyKeyHeader)
		if len(keys) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		if msg := checkIdempotencyKey(keys); msg != "" {
			WriteError(w, http.StatusBadRequest, msg)
			return
		}
		body, ok := readBody(w, r)
		if !ok {
			return
		}
		claim, err := store.Claim(r.Context(), idempotent.Request{Scope: scope(r), Key: keys[0], Fingerprint: fingerprint(r, body)})
		if err != nil {
			Fail(w, r, err)
			return
		}
		switch claim.Decision {
		case idempotent.Replay:
			writeKept(w, claim.Response, true)
		case idempotent.Mismatch:
			WriteCodedError(w, domain.CodeIdempotencyKeyReused, "", "this Idempotency-Key was used for another request (another method, path or body); use a new key for a new request")
		case idempotent.InProgress:
			answerInProgress(w)
		case idempotent.Unreadable:
			w.Header().Set(ReplayedHeader, "true")
			WriteError(w, http.StatusConflict, "the request with this Idempotency-Key was performed, but its kept answer is sealed with a server key "+
				"that is no longer configured: it is not performed again; read its outcome with a GET")
		case idempotent.Orphaned:
			res := orphanedAnswer()
			noteFailure(r, "complete", store.Complete(context.WithoutCancel(r.Context()), claim, res))
			writeKept(w, res, true)
		default: // Perform, Resume
			perform(w, r, store, claim, body, next, after)
		}
	})
}

// checkIdempotencyKey returns what is wrong with the header's values, or "".
func checkIdempotencyKey(values []string) string {
	if len(values) > 1 {
		return "send one Idempotency-Key header"
	}
	key := values[0] // net/http trims the spaces around a header value
	switch {
	case key == "":
		return "Idempotency-Key must not be empty"
	case len(key) > MaxIdempotencyKey:
		return "Idempotency-Key must be at most 255 characters"
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return "Idempotency-Key must be printable ASCII characters (no control characters)"
		}
	}
	return ""
}

// fingerprint is what "the same request" means: the same method, path, query and body bytes.
func fingerprint(r *http.Request, body []byte) [32]byte {
	h := sha256.New()
	for _, part := range []string{r.Method, r.URL.EscapedPath(), r.URL.RawQuery} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	h.Write(body)
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// perform runs the handler for a claimed key and keeps what it answered, by these rules:
//
//   - a 2xx answer is kept, and so is any answer below 500 once a command succeeded (its write
//     went through: a retry must not perform it again);
//   - an answer of 500 or more after a command succeeded is not kept; the command's result is,
//     with the lease given up in the same write, and the next retry answers from it afresh;
//   - any other answer below 500 (400, 403, 404, 409, 413, 422...) performed nothing: the key is
//     released, and a retry with it is performed anew;
//   - any other answer of 500 or more may hide a write (a database failure while committing):
//     the key is left for the next retry, which asks the log.
//
// A request answered within keepOutcomesAfter of its first command's success writes its key
// twice: the claim and the answer. One that takes longer keeps its commands' results meanwhile
// (outcomeKeeper), so that a crash during the wait leaves a retry something to answer from.
//
// The handler runs to its end even when the client goes away, so that the retry the client
// will send finds the answer rather than a request cut short.
func perform(w http.ResponseWriter, r *http.Request, store idempotent.Store, claim idempotent.Claim, body []byte, next http.Handler, after time.Duration) {
	ctx := context.WithoutCancel(r.Context())
	// The answer is kept, or the lease given up, only once no write of the outcomes can follow
	// (keeper.stop), so that none turns a kept answer back, and no retry can find the key running
	// with its write already in the log while this attempt is alive.
	keeper := newOutcomeKeeper(ctx, r, store, claim, after)
	idem := &commands.Idempotent{ID: claim.ID, Performed: keeper.performed}
	if claim.Decision == idempotent.Resume {
		if err := json.Unmarshal(claim.Outcomes, &idem.Earlier); err != nil {
			noteFailure(r, "read the kept outcome", err)
			noteFailure(r, "yield", store.Yield(ctx, claim))
			WriteError(w, http.StatusInternalServerError, "internal error")
			return
		}
	}
	inner := r.WithContext(commands.WithIdempotency(ctx, idem))
	inner.Body = io.NopCloser(bytes.NewReader(body))
	capture := &capturedResponse{header: http.Header{}, status: http.StatusOK}
	finished := false
	defer func() {
		if !finished { // the handler panicked: of unknown outcome, like a 500
			keeper.stop()
			keeper.yield()
		}
	}()
	next.ServeHTTP(capture, inner)
	finished = true
	keeper.stop()

	res := idempotent.Response{Status: capture.status, ContentType: capture.header.Get("Content-Type"), Body: capture.body.Bytes()}
	switch {
	case idem.Lost():
		// Another attempt of this request appended first (it took over from this one, or this
		// one from it): that attempt answers, and keeps its answer.
		answerInProgress(w)
		return
	case res.Status < 300 && res.Status >= 200, idem.HasPerformed() && res.Status < 500:
		if err := store.Complete(ctx, claim, res); err != nil {
			noteFailure(r, "complete", err)
			if idem.HasPerformed() {
				// The answer could not be kept: the outcomes are, so that the retry answers
				// from them rather than being told the request is lost.
				keeper.yield()
			}
		}
	case res.Status < 500 && !idem.HasPerformed():
		noteFailure(r, "release", store.Release(ctx, claim))
	default:
		keeper.yield()
	}
	for name, values := range capture.header {
		w.Header()[name] = values
	}
	if claim.Decision == idempotent.Resume {
		w.Header().Set(ReplayedHeader, "true")
	}
	w.WriteHeader(res.Status)
	_, _ = w.Write(res.Body)
}

// answerInProgress answers a retry that came while its request is still being performed.
func answerInProgress(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	WriteCodedError(w, domain.CodeIdempotencyKeyInProgress, "", "a request with this Idempotency-Key is still in progress; retry it in a moment")
}

// orphanedAnswer is kept for a key whose request was performed by an attempt that stopped (the
// process ended) between its write and the keeping of its outcome or answer (keepOutcomesAfter).
func orphanedAnswer() idempotent.Response {
	var body bytes.Buffer
	_ = json.NewEncoder(&body).Encode(errorBody(domain.CodeConflict, "", "the request with this Idempotency-Key was performed, but the service stopped before it could answer: "+
		"it is not performed again; read its outcome with a GET"))
	return idempotent.Response{Status: http.StatusConflict, ContentType: jsonContentType, Body: body.Bytes()}
}

// writeKept writes a kept answer.
func writeKept(w http.ResponseWriter, res idempotent.Response, replayed bool) {
	if res.ContentType != "" {
		w.Header().Set("Content-Type", res.ContentType)
	}
	if replayed {
		w.Header().Set(ReplayedHeader, "true")
	}
	w.WriteHeader(res.Status)
	_, _ = w.Write(res.Body)
}

// noteFailure logs a failure to keep the state of a key: the request is answered all the same,
// and the key is left to its lease and the log.
func noteFailure(r *http.Request, what string, err error) {
	if err != nil {
		logOf(r).Error("idempotency-key: could not "+what, zap.String("requestId", RequestID(r.Context())), zap.Error(err))
	}
}

// capturedResponse holds what a handler answers, to keep it before it is sent.
type capturedResponse struct {
	header  http.Header
	status  int
	body    bytes.Buffer
	written bool
}

func (c *capturedResponse) Header() http.Header { return c.header }

func (c *capturedResponse) WriteHeader(status int) {
	if !c.written {
		c.status, c.written = status, true
	}
}

func (c *capturedResponse) Write(b []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	return c.body.Write(b)
}
