package commands

import (
	"reflect"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/funnelhq/funnel/domain"
)

// DefaultStateCacheBytes bounds the memory of the aggregate states a process keeps, their
// bookkeeping included: 4 MiB hold the states of some 6,000 recently written contacts, the hot
// set of a busy account. Every byte of it is live heap: the collector marks it on each cycle,
// and lets the heap grow to twice the live heap before the next (GOGC=100). The bound used to
// count the states' bytes alone: its 8 MiB then took 15 MB of heap once filled
// (docs/performance.md, "Memory").
const DefaultStateCacheBytes = 4 << 20

// entryOverhead is what keeping a state costs besides its bytes and its stream id: the LRU's list
// element and map slot (about 250 bytes each in a heap profile of the service).
const entryOverhead = 256

// costOf is what keeping data as the state of stream costs.
func costOf(stream string, data []byte) int {
	return cap(data) + len(stream) + entryOverhead
}

// maxKeptStates bounds their number, so that the bookkeeping of many tiny states stays small too.
const maxKeptStates = 100_000

// stateCache keeps the encoded state of recently written aggregates with the stream version it
// reflects, so that a command reads only the events after that version instead of replaying the
// whole stream. It is bounded by what its states cost in memory (costOf, and by their number),
// least recently used first out; a state larger than a quarter of the bound is not kept. Entries are bytes: each restore decodes
// a fresh aggregate, so a decision that fails after changing its aggregate leaves nothing behind
// here. The cache is per process and derived from the log: a restarted process starts cold and
// replays each stream once; another process's appends are read as the tail of the stream.
type stateCache struct {
	mu       sync.Mutex
	entries  *simplelru.LRU[stateKey, cachedState]
	bytes    int
	maxBytes int
}

// stateKey names a state by its aggregate type as well as its stream: a stream read as another
// type never gets this one's state.
type stateKey struct {
	kind   reflect.Type
	stream string
}

type cachedState struct {
	version  int64 // the stream version the state reflects
	position int64 // a log position at or past the event of that version
	data     []byte
}

// newStateCache returns a cache holding at most maxBytes of states.
func newStateCache(maxBytes int) *stateCache {
	c := &stateCache{maxBytes: maxBytes}
	entries, err := simplelru.NewLRU(maxKeptStates, func(k stateKey, s cachedState) { c.bytes -= costOf(k.stream, s.data) })
	if err != nil {
		panic(err) // only for a size below 1
	}
	c.entries = entries
	return c
}

func keyOf(agg domain.Restorable) stateKey {
	return stateKey{kind: reflect.TypeOf(agg), stream: agg.StreamID()}
}

// restore sets agg, an empty aggregate, to the kept state of its stream and returns the version
// and position that state reflects; ok is false when nothing usable is kept (agg is unchanged).
func (c *stateCache) restore(agg domain.Restorable) (version, position int64, ok bool) {
	c.mu.Lock()
	s, found := c.entries.Get(keyOf(agg))
	c.mu.Unlock()
	if !found || agg.RestoreState(s.data) != nil {
		return 0, 0, false
	}
	return s.version, s.position, true
}

// has tells whether a state of agg's stream is kept.
func (c *stateCache) has(agg domain.Restorable) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries.Contains(keyOf(agg))
}

// keep stores agg's state at version, unless a state at that version or a later one is kept
// already (two commands may write one stream through different primary streams: the later state
// wins, whichever finishes first).
func (c *stateCache) keep(agg domain.Restorable, version, position int64) {
	key := keyOf(agg)
	c.mu.Lock()
	kept, found := c.entries.Peek(key)
	c.mu.Unlock()
	if found && kept.version >= version {
		return
	}
	data, err := agg.EncodeState()
	if err != nil {
		// Only a shortcut is lost: the next command replays the stream from the kept version.
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if kept, found := c.entries.Peek(key); found {
		if kept.version >= version {
			return
		}
		c.entries.Remove(key)
	}
	cost := costOf(key.stream, data)
	if cost > c.maxBytes/4 {
		return
	}
	c.entries.Add(key, cachedState{version: version, position: position, data: data})
	c.bytes += cost
	for c.bytes > c.maxBytes {
		c.entries.RemoveOldest()
	}
}
