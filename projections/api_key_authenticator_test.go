package projections_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/pipeline"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
	"github.com/funnelhq/funnel/projections"
)

// keyFixture is an account with one key, in the log and in the accounts read model.
type keyFixture struct {
	db       *sqldb.DB
	store    *eventstore.Store
	accounts *projections.Accounts
	auth     *projections.APIKeyAuthenticator
	hash     string
}

func newKeyFixture(tb testing.TB, dialect sqldb.Dialect) keyFixture {
	tb.Helper()
	ctx := context.Background()
	db := sqldbtest.Open(tb, dialect)
	store := eventstore.New(db)
	tb.Cleanup(store.Close)
	_, hash := domain.NewAPIKeySecret()
	if _, err := store.Append(ctx, domain.Metadata{AccountID: "acc_k", Actor: "operator"}, domain.StreamAppend{StreamID: "acc_k", Events: []domain.Event{
		domain.AccountCreated{AccountID: "acc_k", Name: "Keys"},
		domain.APIKeyIssued{AccountID: "acc_k", KeyID: "key_1", Name: "one", Scopes: []domain.Scope{domain.ScopeContactsRead}, KeyHash: hash},
		domain.CustomFieldDefined{AccountID: "acc_k", FieldID: "cf_1", Name: "Company"},
	}}); err != nil {
		tb.Fatal(err)
	}
	events, err := store.ReadStream(ctx, "acc_k")
	if err != nil {
		tb.Fatal(err)
	}
	accounts := projections.NewAccounts(db.Read)
	apply(tb, db, accounts, events)
	return keyFixture{db: db, store: store, accounts: accounts, auth: projections.NewAPIKeyAuthenticator(accounts, store), hash: hash}
}

// issue issues another key of the account, in the log and in the read model, and returns its id
// and hash.
func (fx keyFixture) issue(tb testing.TB, keyID string) (string, string) {
	tb.Helper()
	ctx := context.Background()
	_, hash := domain.NewAPIKeySecret()
	pos, err := fx.store.Append(ctx, domain.Metadata{AccountID: "acc_k", Actor: "operator"}, domain.StreamAppend{StreamID: "acc_k", ExpectedVersion: domain.AnyVersion,
		Events: []domain.Event{domain.APIKeyIssued{AccountID: "acc_k", KeyID: keyID, Name: keyID, Scopes: []domain.Scope{domain.ScopeContactsRead}, KeyHash: hash}}})
	if err != nil {
		tb.Fatal(err)
	}
	fx.store.Head(ctx) // waits for the horizon to pass the append
	events, err := fx.store.ReadLog(ctx, pos-1, 1)
	if err != nil {
		tb.Fatal(err)
	}
	apply(tb, fx.db, fx.accounts, events)
	return keyID, hash
}

// apply applies events to a read model in one transaction, as the pipeline does.
func apply(tb testing.TB, db *sqldb.DB, p pipeline.Projection, events []domain.Recorded) {
	tb.Helper()
	ctx := context.Background()
	tx, err := db.Projections.BeginTx(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback()
	if err := p.Apply(ctx, tx, events); err != nil {
		tb.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}

// Whether a key is revoked is read from the log, not from the read model, which may not have
// applied the revocation yet (another process's projector is on it) or may have lost it (its
// commits do not wait for the disk): once the revocation is in the log, the key is refused.
func TestAPIKeyAuthenticatorChecksRevocationInTheLog(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		fx := newKeyFixture(t, dialect)
		key, err := fx.auth.APIKeyByHash(ctx, fx.hash)
		if err != nil || key.ID != "key_1" || key.AccountID != "acc_k" || key.Revoked || !key.HasScope(domain.ScopeContactsRead) {
			t.Fatalf("key = %+v, %v", key, err)
		}
		// Another key of the account is revoked: this one is not.
		if _, err := fx.store.Append(ctx, domain.Metadata{AccountID: "acc_k", Actor: "operator"}, domain.StreamAppend{StreamID: "acc_k", ExpectedVersion: domain.AnyVersion,
			Events: []domain.Event{domain.APIKeyRevoked{AccountID: "acc_k", KeyID: "key_2"}}}); err != nil {
			t.Fatal(err)
		}
		if key, err := fx.auth.APIKeyByHash(ctx, fx.hash); err != nil || key.Revoked {
			t.Fatalf("after another key's revocation: %+v, %v", key, err)
		}
		// This one is, in the log only.
		if _, err := fx.store.Append(ctx, domain.Metadata{AccountID: "acc_k", Actor: "operator"}, domain.StreamAppend{StreamID: "acc_k", ExpectedVersion: domain.AnyVersion,
			Events: []domain.Event{domain.APIKeyRevoked{AccountID: "acc_k", KeyID: "key_1"}}}); err != nil {
			t.Fatal(err)
		}
		if inReadModel, err := fx.accounts.APIKeyByHash(ctx, fx.hash); err != nil || inReadModel.Revoked {
			t.Fatalf("the read model was to lag: %+v, %v", inReadModel, err)
		}
		if key, err := fx.auth.APIKeyByHash(ctx, fx.hash); err != nil || !key.Revoked {
			t.Fatalf("after its revocation: %+v, %v", key, err)
		}
		// A process that meets the key for the first time reads the whole account stream.
		if key, err := projections.NewAPIKeyAuthenticator(fx.accounts, fx.store).APIKeyByHash(ctx, fx.hash); err != nil || !key.Revoked {
			t.Fatalf("a fresh authenticator: %+v, %v", key, err)
		}
		if _, err := fx.auth.APIKeyByHash(ctx, "0000"); !errors.Is(err, projections.ErrNotFound) {
			t.Fatalf("unknown hash: %v", err)
		}
	})
}

// gatedReader is the event store, whose reads can be held once they have queried the log: a read
// that began before a revocation, and answers after it.
type gatedReader struct {
	projections.StreamReader
	mu      sync.Mutex
	hold    chan struct{} // the next read waits on it once it has queried
	queried chan struct{} // told when that read has queried
}

func (g *gatedReader) ReadStreamFrom(ctx context.Context, streamID string, afterVersion int64) ([]domain.Recorded, error) {
	events, err := g.StreamReader.ReadStreamFrom(ctx, streamID, afterVersion)
	g.mu.Lock()
	hold, queried := g.hold, g.queried
	g.hold = nil
	g.mu.Unlock()
	if hold != nil {
		queried <- struct{}{}
		<-hold
	}
	return events, err
}

// Requests of one account share reads of its stream, but a request never trusts a read that
// began before it did: a request that arrives after a revocation, while a read that queried the
// log before it is still running, waits for a read of its own and refuses the key.
func TestAPIKeyAuthenticatorSharesOnlyReadsThatBeganAfterTheRequest(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		fx := newKeyFixture(t, dialect)
		gate := &gatedReader{StreamReader: fx.store}
		auth := projections.NewAPIKeyAuthenticator(fx.accounts, gate)
		for i := range 10 {
			id, hash := fx.issue(t, fmt.Sprintf("key_gated%d", i))
			if key, err := auth.APIKeyByHash(ctx, hash); err != nil || key.Revoked {
				t.Fatalf("%s before its revocation: %+v, %v", id, key, err)
			}
			hold, queried := make(chan struct{}), make(chan struct{})
			gate.mu.Lock()
			gate.hold, gate.queried = hold, queried
			gate.mu.Unlock()
			first := make(chan projections.APIKey, 1)
			go func() {
				key, _ := auth.APIKeyByHash(ctx, hash)
				first <- key
			}()
			<-queried // the first request's read saw the log before the revocation
			if _, err := fx.store.Append(ctx, domain.Metadata{AccountID: "acc_k", Actor: "operator"}, domain.StreamAppend{StreamID: "acc_k", ExpectedVersion: domain.AnyVersion,
				Events: []domain.Event{domain.APIKeyRevoked{AccountID: "acc_k", KeyID: id}}}); err != nil {
				t.Fatal(err)
			}
			started, second := make(chan struct{}), make(chan projections.APIKey, 1)
			go func() {
				close(started)
				key, _ := auth.APIKeyByHash(ctx, hash)
				second <- key
			}()
			<-started
			for range 100 { // let the second request reach the read it shares, if it is to
				runtime.Gosched()
			}
			close(hold)
			if key := <-second; !key.Revoked {
				t.Fatalf("%s: a request that began after its revocation accepted it", id)
			}
			if key := <-first; key.ID != id {
				t.Fatalf("the first request: %+v", key)
			}
		}
	})
}

// BenchmarkAPIKeyCheck measures what authenticating one request costs, the key already known:
// the authenticator's check against the log (a probe of the events' (stream_id, version) index
// that finds nothing), by one client and by 8 concurrent clients of one account, which share
// reads; beside a lookup of the key in the read model, one query (what reading the key on every
// request, with nothing in memory, would cost). Keeping keys in memory with nothing checked, as
// before, cost a map lookup. It reports the reads of the log per request.
func BenchmarkAPIKeyCheck(b *testing.B) {
	for _, dialect := range sqldbtest.Dialects {
		b.Run(string(dialect), func(b *testing.B) {
			ctx := context.Background()
			fx := newKeyFixture(b, dialect)
			b.Run("read-model", func(b *testing.B) {
				for b.Loop() {
					if key, err := fx.accounts.APIKeyByHash(ctx, fx.hash); err != nil || key.Revoked {
						b.Fatal(key, err)
					}
				}
			})
			for _, clients := range []int{1, 8} {
				b.Run(fmt.Sprintf("log-check-%d-clients", clients), func(b *testing.B) {
					log := &countingReader{StreamReader: fx.store}
					auth := projections.NewAPIKeyAuthenticator(fx.accounts, log)
					b.SetParallelism(max(1, clients/runtime.GOMAXPROCS(0))) // goroutines per GOMAXPROCS
					check := func() {
						if key, err := auth.APIKeyByHash(ctx, fx.hash); err != nil || key.Revoked {
							b.Error(key, err)
						}
					}
					check() // knows the key
					log.reads.Store(0)
					b.ResetTimer()
					if clients == 1 {
						for range b.N {
							check()
						}
					} else {
						b.RunParallel(func(pb *testing.PB) {
							for pb.Next() {
								check()
							}
						})
					}
					b.ReportMetric(float64(log.reads.Load())/float64(b.N), "reads/op")
				})
			}
		})
	}
}

// countingReader counts the reads of the log.
type countingReader struct {
	projections.StreamReader
	reads atomic.Int64
}

func (c *countingReader) ReadStreamFrom(ctx context.Context, streamID string, afterVersion int64) ([]domain.Recorded, error) {
	c.reads.Add(1)
	return c.StreamReader.ReadStreamFrom(ctx, streamID, afterVersion)
}
