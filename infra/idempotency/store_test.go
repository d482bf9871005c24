package idempotency_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/funnelhq/funnel/api/httpapi/idempotent"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/idempotency"
	"github.com/funnelhq/funnel/infra/sealing/sealingtest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// clock is the store's clock, moved by the tests.
type clock struct{ now atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Unix(0, c.now.Load()).UTC() }
func (c *clock) Advance(d time.Duration) { c.now.Add(int64(d)) }

type fixture struct {
	keys  *idempotency.Store
	log   *eventstore.Store
	db    *sqldb.DB
	clock *clock
}

func newFixture(t *testing.T, d sqldb.Dialect) fixture { return newFixtureB(t, d) }

func newFixtureB(t testing.TB, d sqldb.Dialect) fixture {
	t.Helper()
	db := sqldbtest.Open(t, d)
	log := eventstore.New(db)
	t.Cleanup(log.Close)
	c := &clock{}
	c.now.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	_, sealer := sealingtest.NewKey(t)
	return fixture{keys: idempotency.New(db, log, sealer, c.Now), log: log, db: db, clock: c}
}

func request(key, body string) idempotent.Request {
	return idempotent.Request{Scope: "account:acc_1", Key: key, Fingerprint: sha256.Sum256([]byte(body))}
}

func (f fixture) claim(t *testing.T, req idempotent.Request, want idempotent.Decision) idempotent.Claim {
	t.Helper()
	c, err := f.keys.Claim(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if c.Decision != want {
		t.Fatalf("claim of %q: decision %d, want %d", req.Key, c.Decision, want)
	}
	return c
}

// perform appends an event stamped with the claim's id, as a command of its request does.
func (f fixture) perform(t *testing.T, c idempotent.Claim) {
	t.Helper()
	meta := domain.Metadata{AccountID: "acc_1", Actor: "operator", IdempotencyID: c.ID}
	stream := domain.NewID("ct")
	if _, err := f.log.Append(context.Background(), meta, domain.StreamAppend{StreamID: stream, Events: []domain.Event{domain.TagApplied{ContactID: stream, TagID: "tag_1"}}}); err != nil {
		t.Fatal(err)
	}
}

func TestClaimDecisions(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		f := newFixture(t, d)
		ctx := context.Background()
		req := request("k1", `{"a":1}`)
		c := f.claim(t, req, idempotent.Perform)
		if !strings.HasPrefix(c.ID, "idem_") {
			t.Fatalf("claim id %q", c.ID)
		}
		f.claim(t, req, idempotent.InProgress)
		f.claim(t, request("k1", `{"a":2}`), idempotent.Mismatch)
		// Other scopes have keys of their own.
		f.claim(t, idempotent.Request{Scope: "account:acc_2", Key: "k1", Fingerprint: req.Fingerprint}, idempotent.Perform)

		answer := idempotent.Response{Status: 201, ContentType: "application/json", Body: []byte(`{"success":true}` + "\n")}
		if err := f.keys.Complete(ctx, c, answer); err != nil {
			t.Fatal(err)
		}
		replay := f.claim(t, req, idempotent.Replay)
		if replay.Response.Status != 201 || replay.Response.ContentType != answer.ContentType || string(replay.Response.Body) != string(answer.Body) {
			t.Fatalf("replayed %+v, want %+v", replay.Response, answer)
		}
		f.claim(t, request("k1", `{"a":2}`), idempotent.Mismatch)

		// Kept 24 hours from its first use; then the key is new again, for any request.
		f.clock.Advance(idempotency.Retention - time.Millisecond)
		f.claim(t, req, idempotent.Replay)
		f.clock.Advance(time.Millisecond)
		renewed := f.claim(t, request("k1", `{"a":2}`), idempotent.Perform)
		if renewed.ID == c.ID {
			t.Fatal("a key used again after 24 hours kept its old claim id")
		}
		f.claim(t, request("k1", `{"a":2}`), idempotent.InProgress)
	})
}

func TestReleasedKeyIsPerformedAgain(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		f := newFixture(t, d)
		c := f.claim(t, request("k", "bad"), idempotent.Perform)
		if err := f.keys.Release(context.Background(), c); err != nil {
			t.Fatal(err)
		}
		f.claim(t, request("k", "corrected"), idempotent.Perform)
	})
}

// A retry that took the key over from an attempt whose lease ran out, and was then refused
// (a 4xx: it performed nothing), frees the key only if the slow attempt made no write meanwhile:
// when it did, the key stays taken and the next retry finds the write in the log.
func TestReleaseAfterATakeoverLeavesAWriteMadeMeanwhile(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		f := newFixture(t, d)
		ctx := context.Background()
		req := request("k", "body")
		slow := f.claim(t, req, idempotent.Perform)
		f.clock.Advance(idempotency.Lease)
		retry := f.claim(t, req, idempotent.Perform) // took over: nothing in the log yet
		f.perform(t, slow)                           // the slow attempt writes after all
		if err := f.keys.Release(ctx, retry); err != nil {
			t.Fatal(err)
		}
		orphaned := f.claim(t, req, idempotent.Orphaned)
		if orphaned.ID != slow.ID {
			t.Fatalf("the next retry claims %s, want the slow attempt's %s", orphaned.ID, slow.ID)
		}

		// Without a write meanwhile, the refused retry frees the key: a corrected request performs.
		other := request("k2", "bad")
		first := f.claim(t, other, idempotent.Perform)
		f.clock.Advance(idempotency.Lease)
		taken := f.claim(t, other, idempotent.Perform)
		if err := f.keys.Release(ctx, taken); err != nil {
			t.Fatal(err)
		}
		if corrected := f.claim(t, request("k2", "corrected"), idempotent.Perform); corrected.ID == first.ID {
			t.Fatal("the corrected request kept the released claim's id")
		}
	})
}

// An attempt that stops (its process crashed) without a word: its lease runs out, and the next
// retry asks the log whether the attempt made its write.
func TestStoppedAttemptIsTakenOver(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		f := newFixture(t, d)
		req := request("k", "body")
		first := f.claim(t, req, idempotent.Perform)
		f.clock.Advance(idempotency.Lease - time.Millisecond)
		f.claim(t, req, idempotent.InProgress)
		f.clock.Advance(time.Millisecond)

		// It wrote nothing: the retry performs, under the same claim id (so that, should the
		// stopped attempt only be slow, the log still takes one write of the two).
		second := f.claim(t, req, idempotent.Perform)
		if second.ID != first.ID {
			t.Fatalf("the retry claims %s, want the stopped attempt's %s", second.ID, first.ID)
		}
		f.claim(t, req, idempotent.InProgress)

		// This one writes, then stops before keeping its outcome: the next retry finds the write.
		f.perform(t, second)
		f.clock.Advance(idempotency.Lease)
		orphaned := f.claim(t, req, idempotent.Orphaned)
		if orphaned.ID != first.ID {
			t.Fatalf("orphaned claim %s, want %s", orphaned.ID, first.ID)
		}
		f.claim(t, req, idempotent.InProgress) // the retry that found it holds the key, to keep its answer
	})
}

// A command's outcome kept while its request goes on (its answer is late): a retry after a crash,
// or after an answer that could not be kept (a 503), resumes from it.
func TestKeptOutcomeIsResumed(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		f := newFixture(t, d)
		ctx := context.Background()
		req := request("k", "body")
		c := f.claim(t, req, idempotent.Perform)
		f.perform(t, c)
		if err := f.keys.KeepOutcomes(ctx, c, []byte(`[{"command":"CreateLead"}]`)); err != nil {
			t.Fatal(err)
		}
		f.claim(t, req, idempotent.InProgress)
		f.clock.Advance(idempotency.Lease) // crashed
		resumed := f.claim(t, req, idempotent.Resume)
		if string(resumed.Outcomes) != `[{"command":"CreateLead"}]` || resumed.ID != c.ID {
			t.Fatalf("resumed %+v", resumed)
		}
		// The resuming attempt answered 503 again and gave its lease up: the next retry resumes at once.
		if err := f.keys.Yield(ctx, resumed); err != nil {
			t.Fatal(err)
		}
		again := f.claim(t, req, idempotent.Resume)
		if err := f.keys.Complete(ctx, again, idempotent.Response{Status: 201, Body: []byte("done")}); err != nil {
			t.Fatal(err)
		}
		f.claim(t, req, idempotent.Replay)

		// An attempt that yields with nothing kept (a 500 of unknown outcome) leaves the log to decide.
		other := request("k2", "body")
		c2 := f.claim(t, other, idempotent.Perform)
		if err := f.keys.Yield(ctx, c2); err != nil {
			t.Fatal(err)
		}
		f.claim(t, other, idempotent.Perform)
	})
}

// An attempt that ends with a 5xx after its write keeps its outcome and gives its lease up in one
// statement: the next retry resumes from it at once. An attempt that no longer holds the key
// keeps the outcome but leaves the holder's lease alone. Neither turns a done key back.
func TestOutcomeKeptWithTheYieldIsResumed(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		f := newFixture(t, d)
		ctx := context.Background()
		req := request("k", "body")
		c := f.claim(t, req, idempotent.Perform)
		f.perform(t, c)
		if err := f.keys.KeepOutcomesAndYield(ctx, c, []byte(`[{"command":"CreateLead"}]`)); err != nil {
			t.Fatal(err)
		}
		resumed := f.claim(t, req, idempotent.Resume)
		if string(resumed.Outcomes) != `[{"command":"CreateLead"}]` || resumed.ID != c.ID {
			t.Fatalf("resumed %+v", resumed)
		}

		// The first attempt, taken over, keeps newer outcomes: the resuming attempt keeps its lease.
		if err := f.keys.KeepOutcomesAndYield(ctx, c, []byte(`[{"command":"CreateLead"},{"command":"MoveLead"}]`)); err != nil {
			t.Fatal(err)
		}
		f.claim(t, req, idempotent.InProgress)
		if err := f.keys.Yield(ctx, resumed); err != nil {
			t.Fatal(err)
		}
		again := f.claim(t, req, idempotent.Resume)
		if string(again.Outcomes) != `[{"command":"CreateLead"},{"command":"MoveLead"}]` {
			t.Fatalf("resumed %s", again.Outcomes)
		}

		// Once done, a late write of outcomes changes nothing.
		if err := f.keys.Complete(ctx, again, idempotent.Response{Status: 201, Body: []byte("done")}); err != nil {
			t.Fatal(err)
		}
		if err := f.keys.KeepOutcomes(ctx, c, []byte(`[]`)); err != nil {
			t.Fatal(err)
		}
		if err := f.keys.KeepOutcomesAndYield(ctx, again, []byte(`[]`)); err != nil {
			t.Fatal(err)
		}
		if replay := f.claim(t, req, idempotent.Replay); string(replay.Response.Body) != "done" {
			t.Fatalf("replayed %s", replay.Response.Body)
		}
	})
}

func TestConcurrentClaimsOfOneKey(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		f := newFixture(t, d)
		req := request("k", "body")
		decisions := make([]idempotent.Decision, 12)
		var wg sync.WaitGroup
		for i := range decisions {
			wg.Go(func() {
				c, err := f.keys.Claim(context.Background(), req)
				if err != nil {
					t.Error(err)
				}
				decisions[i] = c.Decision
			})
		}
		wg.Wait()
		performers := 0
		for _, dec := range decisions {
			switch dec {
			case idempotent.Perform:
				performers++
			case idempotent.InProgress:
			default:
				t.Fatalf("decision %d", dec)
			}
		}
		if performers != 1 {
			t.Fatalf("%d claims to perform one key at once, want 1", performers)
		}
	})
}

// What a kept answer holds (an API key, a webhook secret) is sealed with the server key, and the
// Idempotency-Key itself is kept only as its SHA-256.
func TestKeptAnswersAreSealed(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		f := newFixture(t, d)
		ctx := context.Background()
		req := request("my-idempotency-key", "body")
		c := f.claim(t, req, idempotent.Perform)
		if err := f.keys.KeepOutcomes(ctx, c, []byte(`{"secret":"fnl_outcome_secret"}`)); err != nil {
			t.Fatal(err)
		}
		if err := f.keys.Complete(ctx, c, idempotent.Response{Status: 201, Body: []byte(`{"key":"fnl_answer_secret"}`)}); err != nil {
			t.Fatal(err)
		}
		for _, row := range sqldbtest.Dump(t, f.db.Read, "idempotency_keys", "key_hash") {
			for _, secret := range []string{"fnl_outcome_secret", "fnl_answer_secret", "my-idempotency-key"} {
				if strings.Contains(row, secret) {
					t.Fatalf("the table holds %q in the clear: %s", secret, row)
				}
			}
		}
		if got := f.claim(t, req, idempotent.Replay); string(got.Response.Body) != `{"key":"fnl_answer_secret"}` {
			t.Fatalf("replayed %s", got.Response.Body)
		}
	})
}

func TestSweepDeletesExpiredKeys(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		f := newFixture(t, d)
		ctx := context.Background()
		const old = 1100 // more than one statement of the sweep deletes
		for i := range old {
			f.claim(t, request(fmt.Sprintf("old-%d", i), "body"), idempotent.Perform)
		}
		f.clock.Advance(12 * time.Hour)
		recent := f.claim(t, request("recent", "body"), idempotent.Perform)
		if err := f.keys.Complete(ctx, recent, idempotent.Response{Status: 200}); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(12 * time.Hour)
		n, err := f.keys.Sweep(ctx)
		if err != nil || n != old {
			t.Fatalf("swept %d, %v; want %d", n, err, old)
		}
		var left int
		if err := f.db.Read.QueryRow(`SELECT COUNT(*) FROM idempotency_keys`).Scan(&left); err != nil || left != 1 {
			t.Fatalf("%d keys left, %v; want the recent one", left, err)
		}
		f.claim(t, request("recent", "body"), idempotent.Replay)
	})
}

// What was kept under a server key that is no longer configured cannot be given back: the
// request is not performed again, and the claim says so instead of failing.
func TestKeptUnderARetiredKeyIsUnreadable(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		f := newFixture(t, d)
		ctx := context.Background()
		answered, resumable := request("answered", "body"), request("resumable", "body")
		c := f.claim(t, answered, idempotent.Perform)
		f.perform(t, c)
		if err := f.keys.Complete(ctx, c, idempotent.Response{Status: 201, Body: []byte("done")}); err != nil {
			t.Fatal(err)
		}
		r := f.claim(t, resumable, idempotent.Perform)
		f.perform(t, r)
		if err := f.keys.KeepOutcomes(ctx, r, []byte(`[{"command":"CreateLead"}]`)); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(idempotency.Lease) // the attempt that kept the outcome stopped

		_, newSealer := sealingtest.NewKey(t) // the old key is gone from the configuration
		rotated := fixture{keys: idempotency.New(f.db, f.log, newSealer, f.clock.Now), log: f.log, db: f.db, clock: f.clock}
		rotated.claim(t, answered, idempotent.Unreadable)
		rotated.claim(t, resumable, idempotent.Unreadable)
	})
}

// Kept outcomes that name a contact erased since are not resumed: a retry would rebuild the
// answer from them. It is answered, and kept, as a kept answer naming the contact is (the 404
// "contact not found"), and the outcomes are dropped. The erasure's own outcomes, which name the
// contact it erased, are resumed as they were.
func TestKeptOutcomeOfAnErasedContactIsNotResumed(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		f := newFixture(t, d)
		ctx := context.Background()
		contactID := domain.NewID("ct")
		meta := domain.Metadata{AccountID: "acc_1", Actor: "operator"}
		if _, err := f.log.Append(ctx, meta, domain.StreamAppend{StreamID: contactID, Events: []domain.Event{domain.ContactCreated{ContactID: contactID, AccountID: "acc_1", Email: "qzkept@example.com"}}}); err != nil {
			t.Fatal(err)
		}
		keep := func(key, outcomes string) idempotent.Request {
			req := request(key, "body")
			c := f.claim(t, req, idempotent.Perform)
			if err := f.keys.KeepOutcomes(ctx, c, []byte(outcomes)); err != nil {
				t.Fatal(err)
			}
			return req
		}
		upsert := keep("upsert", `[{"command":"UpsertContact","result":{"ContactID":"`+contactID+`"}}]`)
		erase := keep("erase", `[{"command":"EraseContact","result":{"ContactID":"`+contactID+`"}}]`)
		if _, err := f.log.Append(ctx, meta, domain.StreamAppend{StreamID: contactID, ExpectedVersion: domain.AnyVersion,
			Events: []domain.Event{domain.ContactErased{ContactID: contactID, AccountID: "acc_1", ErasedAt: f.clock.Now()}}}); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(idempotency.Lease) // both attempts stopped unanswered

		for range 2 { // the 404 is kept: the next retry replays it
			replay := f.claim(t, upsert, idempotent.Replay)
			if replay.Response.Status != 404 || !strings.Contains(string(replay.Response.Body), "contact not found") {
				t.Fatalf("the retry of the upsert answers %d %s", replay.Response.Status, replay.Response.Body)
			}
		}
		var outcome string
		if err := f.db.Read.QueryRowContext(ctx, `SELECT outcome FROM idempotency_keys WHERE key_hash = $1`, fmt.Sprintf("%x", sha256.Sum256([]byte("upsert")))).Scan(&outcome); err != nil || outcome != "" {
			t.Errorf("the upsert's key still keeps an outcome %q (%v)", outcome, err)
		}
		f.claim(t, erase, idempotent.Resume)
	})
}

// A kept answer or outcome may show a person while naming only one of the contact's customers or
// activations (an activation's completion answers with the activation and its customer, and
// keeps the activation's view as its outcome). ForgetContact rewrites them with those naming the
// contact, found through the contact's purchase in the log; and a replay or a resumption checks
// them as it checks a contact it names, for an erasure that never got to ForgetContact.
func TestKeptAnswersNamingAnErasedContactsCustomerOrActivation(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		for _, forget := range []bool{true, false} {
			f := newFixture(t, d)
			ctx := context.Background()
			contactID, customerID, activationID, transactionID := domain.NewID("ct"), domain.NewID("cus"), domain.NewID("act"), domain.NewID("txn")
			meta := domain.Metadata{AccountID: "acc_1", Actor: "operator"}
			sale := domain.Sale{Transaction: domain.SaleTransaction{ID: transactionID}, Customer: domain.SaleCustomer{Email: "qzbuyer@example.com", ContactID: contactID},
				Contact: domain.SaleContact{ContactID: contactID, Email: "qzbuyer@example.com"}}
			if _, err := f.log.Append(ctx, meta,
				domain.StreamAppend{StreamID: contactID, Events: []domain.Event{domain.ContactCreated{ContactID: contactID, AccountID: "acc_1", Email: "qzbuyer@example.com"}}},
				domain.StreamAppend{StreamID: customerID, Events: []domain.Event{domain.CustomerCreated{CustomerID: customerID, AccountID: "acc_1", Email: "qzbuyer@example.com", ContactID: contactID}}},
				domain.StreamAppend{StreamID: transactionID, Events: []domain.Event{domain.CheckoutPurchased{AccountID: "acc_1", CustomerID: customerID, Sale: sale,
					Activation: &domain.SealedActivationGrant{ActivationID: activationID}}}},
				domain.StreamAppend{StreamID: activationID, Events: []domain.Event{domain.ActivationIssued{ActivationID: activationID, AccountID: "acc_1",
					Email: "qzbuyer@example.com", ContactID: contactID, CustomerID: customerID}}},
			); err != nil {
				t.Fatal(err)
			}
			answer := f.claim(t, request("answer", "body"), idempotent.Perform)
			if err := f.keys.Complete(ctx, answer, idempotent.Response{Status: 200, ContentType: "application/json",
				Body: []byte(`{"activation":{"customerId":"` + customerID + `","email":"qzbuyer@example.com","externalUserId":"qzuser"}}`)}); err != nil {
				t.Fatal(err)
			}
			outcome := f.claim(t, request("outcome", "body"), idempotent.Perform)
			if err := f.keys.KeepOutcomes(ctx, outcome, []byte(`[{"command":"CompleteActivation","result":{"ActivationID":"`+activationID+`","Email":"qzbuyer@example.com"}}]`)); err != nil {
				t.Fatal(err)
			}
			if _, err := f.log.Append(ctx, meta, domain.StreamAppend{StreamID: contactID, ExpectedVersion: domain.AnyVersion,
				Events: []domain.Event{domain.ContactErased{ContactID: contactID, AccountID: "acc_1", ErasedAt: f.clock.Now()}}}); err != nil {
				t.Fatal(err)
			}
			if forget {
				if n, err := f.keys.ForgetContact(ctx, "acc_1", contactID); err != nil || n != 2 {
					t.Fatalf("ForgetContact rewrote %d kept answers (%v), want 2", n, err)
				}
				var kept int
				if err := f.db.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM idempotency_keys WHERE status = 404 AND state = 'done' AND outcome = ''`).Scan(&kept); err != nil || kept != 2 {
					t.Fatalf("%d keys keep the 404 (%v), want 2", kept, err)
				}
			}
			f.clock.Advance(idempotency.Lease) // the outcome's attempt stopped unanswered
			for _, key := range []string{"answer", "outcome"} {
				replay := f.claim(t, request(key, "body"), idempotent.Replay)
				if replay.Response.Status != 404 || strings.Contains(string(replay.Response.Body), "qzbuyer") {
					t.Errorf("ForgetContact run %v: the retry of %q answers %d %s", forget, key, replay.Response.Status, replay.Response.Body)
				}
			}
		}
	})
}
