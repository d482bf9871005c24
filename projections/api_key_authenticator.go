package projections

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/funnelhq/funnel/domain"
)

// StreamReader reads the event log: the events of one stream after a version (the event store).
type StreamReader interface {
	ReadStreamFrom(ctx context.Context, streamID string, afterVersion int64) ([]domain.Recorded, error)
}

// APIKeyAuthenticator tells, on every API request, whose key a secret's hash is and whether it is
// revoked.
//
// What a key is (its account, name and scopes) never changes: it is read from the accounts read
// model once and kept in memory. Whether it is revoked is checked against the log itself for
// every request, by a read of the key's account stream that began after the request arrived: a
// revocation is an event of that stream, committed before the revoke is answered, so once it is
// answered every process refuses the key at its next request, whatever its relay (which polls
// the log every 250 ms on PostgreSQL) has seen yet. The log is also what survives a crash of
// the database: read models commit without waiting for the disk.
//
// A read goes on from the version of the stream this process checked last: one probe of the
// events' (stream_id, version) index, which finds nothing unless the account changed (keys and
// custom fields are its only events). Requests of one account that arrive while such a read runs
// share the next one (singleflight), so a busy account costs one read per read's duration, not
// one per request.
type APIKeyAuthenticator struct {
	accounts *Accounts
	log      StreamReader
	reads    singleflight.Group // by account id
	started  atomic.Int64       // reads started so far, numbered: which began after a request did
	mu       sync.Mutex
	keys     map[string]APIKey      // by key hash; Revoked as the read model said when it was read
	checked  map[string]revocations // by account id
	limit    int
}

// revocations are the keys of an account revoked up to a version of its stream. The map is
// never changed once shared: a read that finds a revocation copies it.
type revocations struct {
	version int64
	revoked map[string]bool
}

// revocationRead is one read's answer, numbered in the order reads began.
type revocationRead struct {
	number int64
	revocations
}

// readTimeout bounds a shared read, which no single request's cancellation stops.
const readTimeout = 10 * time.Second

// NewAPIKeyAuthenticator reads keys from the accounts read model and their revocations from log.
func NewAPIKeyAuthenticator(accounts *Accounts, log StreamReader) *APIKeyAuthenticator {
	return &APIKeyAuthenticator{accounts: accounts, log: log, keys: map[string]APIKey{}, checked: map[string]revocations{}, limit: 10000}
}

// APIKeyByHash finds the key whose secret hashes to hash (see domain.HashAPIKey), revoked or not
// as the log says now. An unknown hash is ErrNotFound.
func (a *APIKeyAuthenticator) APIKeyByHash(ctx context.Context, hash string) (APIKey, error) {
	arrived := a.started.Load()
	key, err := a.key(ctx, hash)
	if err != nil || key.Revoked { // a revoked key never comes back
		return key, err
	}
	for {
		// Do, not DoChan: the read runs on the calling goroutine, whose stack has grown already
		// (SQLite's parser needs a deep one). A shared read is bounded by readTimeout.
		v, err, _ := a.reads.Do(key.AccountID, func() (any, error) {
			return a.readRevocations(context.WithoutCancel(ctx), key.AccountID)
		})
		if err != nil {
			return APIKey{}, err
		}
		// A read that began before this request may have missed a revocation answered since:
		// wait for the next one (the one after it began after this request did).
		if read := v.(revocationRead); read.number > arrived {
			key.Revoked = read.revoked[key.ID]
			return key, nil
		}
	}
}

// key returns what a key is, from memory or from the read model.
func (a *APIKeyAuthenticator) key(ctx context.Context, hash string) (APIKey, error) {
	a.mu.Lock()
	key, ok := a.keys[hash]
	a.mu.Unlock()
	if ok {
		return key, nil
	}
	key, err := a.accounts.APIKeyByHash(ctx, hash)
	if err != nil {
		return APIKey{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.keys) >= a.limit {
		clear(a.keys)
	}
	a.keys[hash] = key
	return key, nil
}

// readRevocations reads an account's stream after the version checked last, and returns the
// account's revoked keys as of its end. Reads of one account never run at once (singleflight).
func (a *APIKeyAuthenticator) readRevocations(ctx context.Context, accountID string) (revocationRead, error) {
	number := a.started.Add(1) // before the read is sent: it sees what was committed by then
	a.mu.Lock()
	known := a.checked[accountID]
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	events, err := a.log.ReadStreamFrom(ctx, accountID, known.version)
	if err != nil {
		return revocationRead{}, fmt.Errorf("projections: check the api keys of %s: %w", accountID, err)
	}
	now := known
	for _, e := range events {
		now.version = e.Version
		if e.Type != (domain.APIKeyRevoked{}).EventType() {
			continue
		}
		decoded, err := e.Decode()
		if err != nil {
			return revocationRead{}, fmt.Errorf("projections: check the api keys of %s: %w", accountID, err)
		}
		revoked := make(map[string]bool, len(now.revoked)+1)
		for id := range now.revoked {
			revoked[id] = true
		}
		revoked[decoded.(domain.APIKeyRevoked).KeyID] = true
		now.revoked = revoked
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.checked) >= a.limit {
		clear(a.checked)
	}
	a.checked[accountID] = now
	return revocationRead{number: number, revocations: now}, nil
}
