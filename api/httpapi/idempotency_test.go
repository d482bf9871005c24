package httpapi_test

import (
	"context"
	"database/sql"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/httpapi/idempotent"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/idempotency"
	"github.com/funnelhq/funnel/infra/sealing/sealingtest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// The answers a write with an Idempotency-Key cannot keep: a 503 after its write went through
// (the read models lagged), and a client that went away mid-request. The handler here creates an
// account through the real command, on a real database, and answers as the API's handlers do.

type writeHandler struct {
	commands    commands.Handlers
	panics      atomic.Bool // panic before writing anything
	panicsAfter atomic.Bool // panic after the write
	unreadable  atomic.Bool // answer 503 after the write, as AwaitReadModels does when it times out
	hangUp      func()      // called first: the client goes away
	// hold, when set, is waited for after the write by the first request that gets there, as a
	// request waits for a relayed read model.
	hold    chan struct{}
	holding atomic.Bool
}

func (h *writeHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.hangUp != nil {
		h.hangUp()
	}
	if h.panics.Load() {
		panic("handler bug")
	}
	res, err := h.commands.CreateAccount.Handle(r.Context(), commands.CreateAccount{Name: "Acme"})
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	if h.hold != nil && h.holding.CompareAndSwap(false, true) {
		<-h.hold
	}
	if h.panicsAfter.Load() {
		panic("handler bug after the write")
	}
	if h.unreadable.Load() {
		w.Header().Set("Retry-After", "1")
		httpapi.WriteError(w, http.StatusServiceUnavailable, "the change was saved but is not readable yet; retry the request")
		return
	}
	httpapi.Answer(w, http.StatusCreated, map[string]any{"success": true, "accountId": res.AccountID})
}

func newWrite(t *testing.T, d sqldb.Dialect) (*writeHandler, http.Handler, *eventstore.Store) {
	t.Helper()
	h, mw, log, _ := newWriteOn(t, d)
	return h, mw, log
}

func newWriteOn(t *testing.T, d sqldb.Dialect) (*writeHandler, http.Handler, *eventstore.Store, *sqldb.DB) {
	t.Helper()
	h, keys, log, db := newWriteStore(t, d)
	return h, httpapi.Idempotent(keys, operatorScope, h), log, db
}

func newWriteStore(t *testing.T, d sqldb.Dialect) (*writeHandler, *idempotency.Store, *eventstore.Store, *sqldb.DB) {
	t.Helper()
	db := sqldbtest.Open(t, d)
	log := eventstore.New(db)
	t.Cleanup(log.Close)
	h := &writeHandler{commands: commands.NewHandlers(commands.Dependencies{Store: log, Log: zap.NewNop(), Observer: noObserver{}})}
	_, sealer := sealingtest.NewKey(t)
	return h, idempotency.New(db, log, sealer, time.Now), log, db
}

func operatorScope(*http.Request) string { return "operator:test" }

// countingStore counts the calls of the store's methods that write a key's row.
type countingStore struct {
	idempotent.Store
	mu    sync.Mutex
	calls map[string]int
}

func (s *countingStore) count(method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[method]++
}

// taken returns the calls counted so far, and starts counting afresh.
func (s *countingStore) taken() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	calls := s.calls
	s.calls = map[string]int{}
	return calls
}

func (s *countingStore) Claim(ctx context.Context, req idempotent.Request) (idempotent.Claim, error) {
	s.count("Claim")
	return s.Store.Claim(ctx, req)
}

func (s *countingStore) KeepOutcomes(ctx context.Context, c idempotent.Claim, outcomes []byte) error {
	s.count("KeepOutcomes")
	return s.Store.KeepOutcomes(ctx, c, outcomes)
}

func (s *countingStore) KeepOutcomesAndYield(ctx context.Context, c idempotent.Claim, outcomes []byte) error {
	s.count("KeepOutcomesAndYield")
	return s.Store.KeepOutcomesAndYield(ctx, c, outcomes)
}

func (s *countingStore) Complete(ctx context.Context, c idempotent.Claim, res idempotent.Response) error {
	s.count("Complete")
	return s.Store.Complete(ctx, c, res)
}

func (s *countingStore) Release(ctx context.Context, c idempotent.Claim) error {
	s.count("Release")
	return s.Store.Release(ctx, c)
}

func (s *countingStore) Yield(ctx context.Context, c idempotent.Claim) error {
	s.count("Yield")
	return s.Store.Yield(ctx, c)
}

// keyState is the state of the one key in db ("" while there is none).
func keyState(t *testing.T, db *sqldb.DB) string {
	t.Helper()
	var state string
	err := db.Read.QueryRow(`SELECT state FROM idempotency_keys`).Scan(&state)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	return state
}

type noObserver struct{}

func (noObserver) CommandHandled(string, time.Duration, error) {}

func post(ctx context.Context, h http.Handler, key string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/accounts", strings.NewReader(`{"name": "Acme"}`))
	req.Header.Set("Idempotency-Key", key)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func head(t *testing.T, log *eventstore.Store) int64 {
	t.Helper()
	n, err := log.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRetryAfterA503IsAnsweredFromTheWrite(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		write, h, log := newWrite(t, d)
		ctx := context.Background()
		write.unreadable.Store(true)
		if res := post(ctx, h, "k"); res.Code != http.StatusServiceUnavailable || res.Header().Get("Retry-After") != "1" {
			t.Fatalf("first attempt: %d %s", res.Code, res.Body)
		}
		if head(t, log) != 1 {
			t.Fatalf("log head %d after the first attempt, want its one event", head(t, log))
		}
		// Still unreadable: a 503 again, and nothing written again.
		if res := post(ctx, h, "k"); res.Code != http.StatusServiceUnavailable {
			t.Fatalf("second attempt: %d %s", res.Code, res.Body)
		}
		write.unreadable.Store(false)
		resumed := post(ctx, h, "k")
		if resumed.Code != http.StatusCreated || resumed.Header().Get("Idempotent-Replayed") != "true" {
			t.Fatalf("third attempt: %d %v %s", resumed.Code, resumed.Header(), resumed.Body)
		}
		head(t, log) // waits for the horizon to pass the store's commits
		events, err := log.ReadLog(ctx, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) != 1 || !strings.Contains(resumed.Body.String(), events[0].StreamID) {
			t.Fatalf("answered %s; the log holds %d events", resumed.Body, len(events))
		}
		if events[0].Metadata.IdempotencyID == "" {
			t.Fatal("the write does not carry its claim's id")
		}
		// From now on the kept answer, byte for byte.
		if again := post(ctx, h, "k"); again.Code != http.StatusCreated || again.Body.String() != resumed.Body.String() {
			t.Fatalf("fourth attempt: %d %s, want %s", again.Code, again.Body, resumed.Body)
		}
		if head(t, log) != 1 {
			t.Fatalf("log head %d after four attempts, want 1", head(t, log))
		}
	})
}

// A client that hangs up does not cut its request short: the write and its answer are finished
// and kept, and the client's retry gets them.
func TestRequestFinishesWhenTheClientGoesAway(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		write, h, log := newWrite(t, d)
		ctx, hangUp := context.WithCancel(context.Background())
		write.hangUp = hangUp
		first := post(ctx, h, "k")
		if first.Code != http.StatusCreated {
			t.Fatalf("the request the client left: %d %s", first.Code, first.Body)
		}
		write.hangUp = nil
		retry := post(context.Background(), h, "k")
		if retry.Code != http.StatusCreated || retry.Body.String() != first.Body.String() || retry.Header().Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry: %d %s, want the kept %s", retry.Code, retry.Body, first.Body)
		}
		if head(t, log) != 1 {
			t.Fatalf("log head %d, want 1", head(t, log))
		}
	})
}

// A process that stops in the instant between a write and the keeping of its outcome leaves a
// key that is running, whose write the log holds, and nothing to answer from. The retry must not
// perform it again: it answers, and keeps, a 409 that says so. (The instant is made by hand: the
// key is set back to how such a crash leaves it.)
func TestWriteWithoutKeptOutcomeIsNotPerformedAgain(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		write, h, log, db := newWriteOn(t, d)
		ctx := context.Background()
		write.unreadable.Store(true)
		post(ctx, h, "k")
		if _, err := db.Write.ExecContext(ctx, `UPDATE idempotency_keys SET state = 'running', outcome = ''`); err != nil {
			t.Fatal(err)
		}
		write.unreadable.Store(false)
		orphaned := post(ctx, h, "k")
		if orphaned.Code != http.StatusConflict || !strings.Contains(orphaned.Body.String(), "was performed") || orphaned.Header().Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry of an orphaned write: %d %v %s", orphaned.Code, orphaned.Header(), orphaned.Body)
		}
		if again := post(ctx, h, "k"); again.Code != http.StatusConflict || again.Body.String() != orphaned.Body.String() {
			t.Fatalf("next retry: %d %s", again.Code, again.Body)
		}
		if head(t, log) != 1 {
			t.Fatalf("log head %d, want the one write", head(t, log))
		}
	})
}

// A handler that panics before it wrote anything leaves the key free for the retry.
func TestPanicBeforeTheWriteLeavesTheKeyFree(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		write, h, log := newWrite(t, d)
		write.panics.Store(true)
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("the panic was swallowed")
				}
			}()
			post(context.Background(), h, "k")
		}()
		write.panics.Store(false)
		if res := post(context.Background(), h, "k"); res.Code != http.StatusCreated || head(t, log) != 1 {
			t.Fatalf("retry after a panic: %d %s, log head %d", res.Code, res.Body, head(t, log))
		}
	})
}

// A request answered at once writes its key's row twice: the claim and the answer. A 503 after
// the write also writes it twice: the claim, then the outcome kept with the lease given up.
// (A fresh key's claim is one statement.) The delay before outcomes are kept on their own is an
// hour here, so that a slow machine cannot make it pass.
func TestARequestAnsweredAtOnceWritesItsKeyTwice(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		write, keys, log, _ := newWriteStore(t, d)
		counted := &countingStore{Store: keys, calls: map[string]int{}}
		h := httpapi.IdempotentKeepingAfter(counted, operatorScope, write, time.Hour)
		ctx := context.Background()

		if res := post(ctx, h, "answered"); res.Code != http.StatusCreated {
			t.Fatalf("answered: %d %s", res.Code, res.Body)
		}
		if got, want := counted.taken(), map[string]int{"Claim": 1, "Complete": 1}; !maps.Equal(got, want) {
			t.Fatalf("a request answered at once wrote its key by %v, want %v", got, want)
		}

		write.unreadable.Store(true)
		if res := post(ctx, h, "unreadable"); res.Code != http.StatusServiceUnavailable {
			t.Fatalf("unreadable: %d %s", res.Code, res.Body)
		}
		if got, want := counted.taken(), map[string]int{"Claim": 1, "KeepOutcomesAndYield": 1}; !maps.Equal(got, want) {
			t.Fatalf("a 503 after the write wrote its key by %v, want %v", got, want)
		}
		write.unreadable.Store(false)
		if res := post(ctx, h, "unreadable"); res.Code != http.StatusCreated || res.Header().Get("Idempotent-Replayed") != "true" {
			t.Fatalf("the retry of the 503: %d %s", res.Code, res.Body)
		}
		if head(t, log) != 2 {
			t.Fatalf("log head %d, want the two writes", head(t, log))
		}
	})
}

// A request that waits after its write (for a relayed read model, say) longer than the delay
// keeps its outcome meanwhile: if its process stops during the wait, the retry answers from it.
// The stop is the lease run out by hand while the request still waits.
func TestALateAnswerKeepsTheOutcomeMeanwhile(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		write, h, log, db := newWriteOn(t, d)
		ctx := context.Background()
		write.hold = make(chan struct{})
		release := sync.OnceFunc(func() { close(write.hold) })
		t.Cleanup(release) // should the test stop first
		answered := make(chan *httptest.ResponseRecorder, 1)
		go func() { answered <- post(ctx, h, "k") }()
		for deadline := time.Now().Add(10 * time.Second); keyState(t, db) != "performed"; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the waiting request's key is %q, want performed", keyState(t, db))
			}
		}
		if _, err := db.Write.ExecContext(ctx, `UPDATE idempotency_keys SET lease_until = 0`); err != nil {
			t.Fatal(err)
		}
		resumed := post(ctx, h, "k")
		if resumed.Code != http.StatusCreated || resumed.Header().Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry during the wait: %d %v %s", resumed.Code, resumed.Header(), resumed.Body)
		}
		head(t, log) // waits for the horizon to pass the store's commits
		events, err := log.ReadLog(ctx, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) != 1 || !strings.Contains(resumed.Body.String(), events[0].StreamID) {
			t.Fatalf("answered %s; the log holds %d events", resumed.Body, len(events))
		}

		// The waiting attempt answers too, and keeps nothing over the retry's kept answer.
		release()
		if first := <-answered; first.Code != http.StatusCreated || !strings.Contains(first.Body.String(), events[0].StreamID) {
			t.Fatalf("the waiting request answered %d %s", first.Code, first.Body)
		}
		if again := post(ctx, h, "k"); again.Code != http.StatusCreated || again.Body.String() != resumed.Body.String() {
			t.Fatalf("next retry: %d %s, want %s", again.Code, again.Body, resumed.Body)
		}
		if state := keyState(t, db); state != "done" || head(t, log) != 1 {
			t.Fatalf("the key is %q, log head %d; want done and the one write", state, head(t, log))
		}
	})
}

// A handler that panics after its write leaves its outcome kept and the key given up: the retry
// answers from the write at once, without performing it again.
func TestPanicAfterTheWriteIsResumed(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		write, h, log := newWrite(t, d)
		write.panicsAfter.Store(true)
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("the panic was swallowed")
				}
			}()
			post(context.Background(), h, "k")
		}()
		write.panicsAfter.Store(false)
		res := post(context.Background(), h, "k")
		if res.Code != http.StatusCreated || res.Header().Get("Idempotent-Replayed") != "true" || head(t, log) != 1 {
			t.Fatalf("retry after a panic: %d %v %s, log head %d", res.Code, res.Header(), res.Body, head(t, log))
		}
	})
}
