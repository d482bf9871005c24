package eventstore

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/funnelhq/funnel/domain"
)

// keptRecent is how many of the latest positions a store keeps what it knows of, for ReadLog: a
// few group commits' worth (an upsert's group is about ten events), enough for the relay, which
// reads each commit right after it, at a quarter of a megabyte at most (1,024 cost the service's
// peak RSS about a megabyte, against its 60 MB target). A read further back goes to the database.
const keptRecent = 256

// recent keeps what this process knows of the latest positions of the log, so that a read right
// after its commits, the relay's after every commit, is answered from memory instead of reading
// back (and opening again) what the appender has just written. Of each position it knows one of:
//
//   - committed: its row, added once its transaction committed and before the relay is signalled;
//   - pending: taken by one of its transactions still running (PostgreSQL);
//   - void: taken by one of its transactions that certainly did not commit, or left unused by
//     one that did (PostgreSQL: a sequence never hands a position out twice; SQLite reuses the
//     positions of a rolled-back transaction, so there nothing is void);
//   - nothing: another process's position, or one too old or not handed out yet.
//
// A read from memory returns the committed events from the position after the one asked for,
// passing over the void ones, up to the first position that is still pending or not this
// process's: every position up to the last one returned is then settled, which is what ReadLog
// promises, without asking the database for its horizon (which any transaction of the database
// holds back). A read that would return nothing goes to the database (the next read after such a
// prefix finds there what other processes committed), unless the position after is pending: then
// the log has nothing readable past it until that transaction ends, which signals the relay.
type recent struct {
	mu    sync.Mutex
	last  int64 // the highest position known
	slots [keptRecent]slot
}

// slot is what recent knows of one position: nothing (the zero slot), pending, void or a row.
type slot struct {
	position int64 // 0: nothing known
	pending  bool
	row      *row // nil with a position and not pending: void
}

// at returns the slot of a position, and whether it holds that position.
func (r *recent) at(position int64) (*slot, bool) {
	s := &r.slots[position%keptRecent]
	return s, s.position == position
}

// set records what is known of a position, dropping what was known of the position keptRecent
// before it; a position older than what is kept is not recorded, unless its slot still holds it:
// a transaction that took it and ends after other processes' appends moved the last position
// on must still settle it (a slot left pending would hold the relay there, ReadLog's ownInFlight).
func (r *recent) set(position int64, pending bool, w *row) {
	if s, ok := r.at(position); ok {
		*s = slot{position: position, pending: pending, row: w}
		return
	}
	if position <= r.last-keptRecent {
		return
	}
	r.last = max(r.last, position)
	s := &r.slots[position%keptRecent]
	if s.position > position {
		return
	}
	*s = slot{position: position, pending: pending, row: w}
}

// take records positions [first, first+n) as pending: one of this process's transactions took them.
func (r *recent) take(first int64, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for p := first; p < first+int64(n); p++ {
		r.set(p, true, nil)
	}
}

// add records a committed transaction's rows, and its other positions in [first, first+n) as
// void: the positions of the requests it refused. n is 0 where positions are not taken in
// advance (SQLite).
func (r *recent) add(rows []*row, first int64, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for p := first; p < first+int64(n); p++ {
		r.set(p, false, nil)
	}
	for _, w := range rows {
		r.set(w.position, false, w)
	}
}

// void records positions [first, first+n) as void: their transaction certainly did not commit.
func (r *recent) void(first int64, n int) {
	r.add(nil, first, n)
}

// forget records positions [first, first+n) as unknown: their transaction may have committed or
// not (its connection broke during the commit); the database tells.
func (r *recent) forget(first int64, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for p := first; p < first+int64(n); p++ {
		if s, ok := r.at(p); ok {
			*s = slot{}
		}
	}
}

// clear forgets every kept event: after an erasure, which the values kept in memory would
// otherwise outlive.
func (r *recent) clear() {
	r.mu.Lock()
	r.slots = [keptRecent]slot{}
	r.mu.Unlock()
}

// answer is what memory can say of a read of the log after a position.
type answer int

const (
	// askDatabase: the position after is another process's, or not kept; the database must answer.
	askDatabase answer = iota
	// fromMemory: the events returned, a prefix of what the log holds there.
	fromMemory
	// ownInFlight: the position after is one this process's transaction took and has not settled yet.
	// The log holds nothing readable after it until that transaction ends, and its end (commit,
	// failure or a commit whose outcome is unknown) signals the readers (Store.signal): a reader
	// that waits for the signal needs no database to tell it so.
	ownInFlight
)

// read returns up to limit committed events after a position, a prefix of what the log holds
// there, with what memory could say of it: fromMemory when it returns at least one.
func (r *recent) read(after int64, limit int) ([]domain.Recorded, answer, error) {
	r.mu.Lock()
	var rows []*row
	said := askDatabase
	for p := after + 1; len(rows) < limit; p++ {
		s, ok := r.at(p)
		if !ok {
			break
		}
		if s.pending {
			if len(rows) == 0 {
				said = ownInFlight
			}
			break
		}
		if s.row != nil {
			rows = append(rows, s.row)
		}
	}
	r.mu.Unlock()
	if len(rows) == 0 {
		// Never "nothing" as an answer from the log: a position still pending here may have
		// committed already (its transaction's answer is on its way), and a reader that takes
		// nothing for the end of the log (a projection catching up) would pass over it.
		return nil, said, nil
	}
	out := make([]domain.Recorded, len(rows))
	for i, w := range rows {
		out[i] = domain.Recorded{
			ID: w.eventID, StreamID: w.streamID, Version: w.version, Position: w.position, Type: w.eventType,
			SchemaVersion: w.schemaVersion, OccurredAt: time.UnixMilli(w.occurredAt).UTC(), Data: json.RawMessage(w.plain),
		}
		// As the log stores it: what a read of the database would decode (scanEach).
		if err := gojson.Unmarshal([]byte(w.metadata), &out[i].Metadata); err != nil {
			return nil, askDatabase, fmt.Errorf("eventstore: event %d metadata: %w", w.position, err)
		}
	}
	return out, fromMemory, nil
}
