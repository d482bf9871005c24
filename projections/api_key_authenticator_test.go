package projections_test

import (
	"context"
	"errors"
	"testing"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
	"github.com/funnelhq/funnel/projections"
)

// keyFixture is an account with one key, in the log and in the accounts read model.
type keyFixture struct {
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
	tx, err := db.Projections.BeginTx(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback()
	if err := accounts.Apply(ctx, tx, events); err != nil {
		tb.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
	return keyFixture{store: store, accounts: accounts, auth: projections.NewAPIKeyAuthenticator(accounts, store), hash: hash}
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

// BenchmarkAPIKeyCheck measures what authenticating one request costs, a key already known: the
// authenticator's check against the log (one probe of the events' (stream_id, version) index,
// finding nothing), beside a lookup of the key in the read model (what reading it without keeping
// it in memory would cost). Keeping keys in memory with nothing checked, as before, cost a map
// lookup.
func BenchmarkAPIKeyCheck(b *testing.B) {
	for _, dialect := range sqldbtest.Dialects {
		b.Run(string(dialect), func(b *testing.B) {
			ctx := context.Background()
			fx := newKeyFixture(b, dialect)
			for name, lookup := range map[string]func(context.Context, string) (projections.APIKey, error){
				"log-check": fx.auth.APIKeyByHash, "read-model": fx.accounts.APIKeyByHash,
			} {
				b.Run(name, func(b *testing.B) {
					for b.Loop() {
						if key, err := lookup(ctx, fx.hash); err != nil || key.Revoked {
							b.Fatal(key, err)
						}
					}
				})
			}
		})
	}
}
