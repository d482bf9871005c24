package projections

import (
	"context"
	"fmt"
	"sync"

	"github.com/funnelhq/funnel/domain"
)

// StreamReader reads the event log: the events of one stream after a version (the event store).
type StreamReader interface {
	ReadStreamAfter(ctx context.Context, streamID string, version int64) ([]domain.Recorded, error)
}

// APIKeyAuthenticator tells, on every API request, whose key a secret's hash is and whether it is
// revoked, at the cost of one indexed query.
//
// What a key is (its account, name and scopes) never changes: it is read from the accounts read
// model once and kept in memory. Whether it is revoked is checked against the log itself on every
// request: each key kept remembers up to which version of its account's stream it has been
// checked, and a request reads that stream after it, one probe of the events' (stream_id,
// version) index that finds nothing unless the account changed (keys and custom fields are its
// only events). A revocation is an event of that stream, committed before the revoke is
// answered; so once it is answered, every process refuses the key on its next request, whatever
// its relay (which polls the log every 250 ms on PostgreSQL) has seen yet. The log is also what
// survives a crash of the database: read models commit without waiting for the disk.
type APIKeyAuthenticator struct {
	accounts *Accounts
	log      StreamReader
	mu       sync.Mutex
	known    map[string]checkedKey // by key hash
	limit    int
}

// checkedKey is a key and the version of its account's stream it was checked up to.
type checkedKey struct {
	key     APIKey
	checked int64
}

// NewAPIKeyAuthenticator reads keys from the accounts read model and their revocations from log.
func NewAPIKeyAuthenticator(accounts *Accounts, log StreamReader) *APIKeyAuthenticator {
	return &APIKeyAuthenticator{accounts: accounts, log: log, known: map[string]checkedKey{}, limit: 10000}
}

// APIKeyByHash finds the key whose secret hashes to hash (see domain.HashAPIKey), revoked or not
// as the log says now. An unknown hash is ErrNotFound.
func (a *APIKeyAuthenticator) APIKeyByHash(ctx context.Context, hash string) (APIKey, error) {
	a.mu.Lock()
	k, ok := a.known[hash]
	a.mu.Unlock()
	if !ok {
		key, err := a.accounts.APIKeyByHash(ctx, hash)
		if err != nil {
			return APIKey{}, err
		}
		k = checkedKey{key: key} // checked from the account's first event on
	}
	if k.key.Revoked {
		return k.key, nil // a revoked key never comes back
	}
	events, err := a.log.ReadStreamAfter(ctx, k.key.AccountID, k.checked)
	if err != nil {
		return APIKey{}, fmt.Errorf("projections: check api key %s: %w", k.key.ID, err)
	}
	for _, e := range events {
		k.checked = e.Version
		if e.Type != (domain.APIKeyRevoked{}).EventType() {
			continue
		}
		decoded, err := e.Decode()
		if err != nil {
			return APIKey{}, fmt.Errorf("projections: check api key %s: %w", k.key.ID, err)
		}
		if decoded.(domain.APIKeyRevoked).KeyID == k.key.ID {
			k.key.Revoked = true
		}
	}
	a.remember(hash, k)
	return k.key, nil
}

// remember keeps what a request learnt about a key, unless a concurrent request learnt more.
func (a *APIKeyAuthenticator) remember(hash string, k checkedKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if have, ok := a.known[hash]; ok && (have.key.Revoked || have.checked > k.checked) {
		return
	}
	if len(a.known) >= a.limit {
		clear(a.known)
	}
	a.known[hash] = k
}
