package eventstore

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/funnelhq/funnel/domain"
)

// keptRecent is how many of its latest committed events a store keeps for ReadLog: a few group
// commits' worth (an upsert's group is about ten events), enough for the relay, which reads each
// commit right after it, at a quarter of a megabyte at most (1,024 cost the service's peak RSS
// about a megabyte, against its 60 MB target). A bigger group is read from the database.
const keptRecent = 256

// recent keeps the events of this process's latest commits, in position order and without a gap,
// so that a read of the log right after them, the relay's after every commit, is answered from
// memory instead of reading back what the appender has just written. Only committed rows are
// kept, added once their transaction committed and before the relay is signalled. Another
// process's commit between two of this one's leaves a gap: the kept events then start again after
// it, and a read that starts before the kept ones goes to the database.
type recent struct {
	mu   sync.Mutex
	rows []*row // rows[i].position == rows[0].position + i
}

// add keeps a committed transaction's rows, given in position order.
func (r *recent) add(rows []*row) {
	if len(rows) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.rows); n > 0 && r.rows[n-1].position+1 != rows[0].position {
		r.rows = nil // a gap: what is kept must stay contiguous
	}
	r.rows = append(r.rows, rows...)
	if over := len(r.rows) - keptRecent; over > 0 {
		r.rows = append([]*row(nil), r.rows[over:]...)
	}
}

// clear forgets every kept event: after an erasure, which the values kept in memory would
// otherwise outlive.
func (r *recent) clear() {
	r.mu.Lock()
	r.rows = nil
	r.mu.Unlock()
}

// read returns up to limit kept events after a position, and false when the event right after it
// is not kept. Fewer than limit may come back while the log holds more: events kept end at this
// process's last commit.
func (r *recent) read(after int64, limit int) ([]domain.Recorded, bool, error) {
	r.mu.Lock()
	if len(r.rows) == 0 || after+1 < r.rows[0].position || after >= r.rows[len(r.rows)-1].position {
		r.mu.Unlock()
		return nil, false, nil
	}
	from := int(after + 1 - r.rows[0].position)
	rows := r.rows[from:min(len(r.rows), from+limit)]
	r.mu.Unlock()
	out := make([]domain.Recorded, len(rows))
	for i, w := range rows {
		out[i] = domain.Recorded{
			ID: w.eventID, StreamID: w.streamID, Version: w.version, Position: w.position, Type: w.eventType,
			SchemaVersion: w.schemaVersion, OccurredAt: time.UnixMilli(w.occurredAt).UTC(), Data: json.RawMessage(w.plain),
		}
		// As the log stores it: what a read of the database would decode (scanEach).
		if err := gojson.Unmarshal([]byte(w.metadata), &out[i].Metadata); err != nil {
			return nil, false, fmt.Errorf("eventstore: event %d metadata: %w", w.position, err)
		}
	}
	return out, true, nil
}
