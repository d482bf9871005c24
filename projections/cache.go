package projections

import (
	"sync"

	"github.com/funnelhq/funnel/domain"
)

// cache remembers read-model answers that many requests need (an account's tags), so that they
// cost no query. Entries are dropped by the CacheInvalidator, which sees every event
// of the log in every process. A fill that raced an invalidation is discarded: a reader notes
// the generation before it queries, and put keeps the answer only if no invalidation happened
// since, so a stale answer read just before an invalidation can never outlive it.
type cache[K comparable, V any] struct {
	mu      sync.Mutex
	entries map[K]V
	gen     uint64
	limit   int
}

func newCache[K comparable, V any](limit int) *cache[K, V] {
	return &cache[K, V]{entries: map[K]V{}, limit: limit}
}

func (c *cache[K, V]) get(k K) (V, bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.entries[k]
	return v, ok, c.gen
}

func (c *cache[K, V]) put(gen uint64, k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if len(c.entries) >= c.limit {
		clear(c.entries)
	}
	c.entries[k] = v
}

// drop forgets one key and starts a new generation.
func (c *cache[K, V]) drop(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.entries, k)
}

// CacheInvalidator drops cached read-model answers that events made stale. Unlike a projection it
// keeps no checkpoint: every process runs it over every batch its relay publishes, whichever
// process appended the events, so a new tag reaches every cache. Another process learns of it
// when its relay polls the log (every 250 ms on PostgreSQL); API keys, whose revocation must
// hold everywhere as soon as it is answered, are checked against the log instead
// (APIKeyAuthenticator).
type CacheInvalidator struct {
	tags *Tags
}

// NewCacheInvalidator invalidates the caches of these read models.
func NewCacheInvalidator(tags *Tags) *CacheInvalidator {
	return &CacheInvalidator{tags: tags}
}

// Name identifies the invalidator in the pipeline.
func (*CacheInvalidator) Name() string { return "cache-invalidator" }

// Reads tells which events change what the caches answer: new tags (pipeline.Reader).
func (*CacheInvalidator) Reads(eventType string) bool {
	return eventType == (domain.TagCreated{}).EventType()
}

// Invalidate drops what the batch made stale.
func (c *CacheInvalidator) Invalidate(batch []domain.Recorded) {
	for _, r := range batch {
		if r.Type == (domain.TagCreated{}).EventType() {
			c.tags.byAccount.drop(r.Metadata.AccountID)
		}
	}
}
