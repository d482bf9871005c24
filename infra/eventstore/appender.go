package eventstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"funnel/domain"
)

// maxBatch bounds how many appends one transaction commits together.
const maxBatch = 256

type row struct {
	eventID, streamID, eventType string
	schemaVersion                int
	occurredAt                   int64
	accountID                    string
	contactID                    sql.NullString
	data, metadata               string
	version, position            int64
}

type pendingStream struct {
	streamID string
	expected int64
	rows     []*row
}

type appendResult struct {
	last int64
	err  error
}

type appendRequest struct {
	streams []pendingStream
	done    chan appendResult // buffered: the appender never waits for a caller that gave up
}

// Append writes the events of every stream atomically: all of them or none. It fails with
// domain.ErrWrongVersion when any stream is no longer at its expected version, and otherwise
// returns the global position of the last event written.
func (s *Store) Append(ctx context.Context, meta domain.Metadata, appends ...domain.StreamAppend) (int64, error) {
	req, err := s.encode(meta, appends)
	if err != nil {
		return 0, err
	}
	if req == nil {
		return 0, nil
	}
	select {
	case s.requests <- req:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-s.quit:
		return 0, ErrClosed
	}
	select {
	case res := <-req.done:
		return res.last, res.err
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-s.stopped:
		select {
		case res := <-req.done:
			return res.last, res.err
		default:
			return 0, ErrClosed
		}
	}
}

// encode turns events into rows in the caller's goroutine, so that the single appender only
// assigns versions and positions and talks to the database.
func (s *Store) encode(meta domain.Metadata, appends []domain.StreamAppend) (*appendRequest, error) {
	if meta.AccountID == "" {
		return nil, fmt.Errorf("eventstore: append without an account")
	}
	metaJSON, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("eventstore: encode metadata: %w", err)
	}
	now := s.now().UnixMilli()
	req := &appendRequest{done: make(chan appendResult, 1)}
	total := 0
	for _, a := range appends {
		if len(a.Events) == 0 {
			continue
		}
		ps := pendingStream{streamID: a.StreamID, expected: a.ExpectedVersion}
		for _, e := range a.Events {
			typ, version, data, err := domain.EncodeEvent(e)
			if err != nil {
				return nil, err
			}
			id, err := uuid.NewV7()
			if err != nil {
				return nil, fmt.Errorf("eventstore: event id: %w", err)
			}
			r := &row{
				eventID: id.String(), streamID: a.StreamID, eventType: typ, schemaVersion: version,
				occurredAt: now, accountID: meta.AccountID, data: string(data), metadata: string(metaJSON),
			}
			if ce, ok := e.(domain.ContactEvent); ok && ce.ContactRef() != "" {
				r.contactID = sql.NullString{String: ce.ContactRef(), Valid: true}
			}
			ps.rows = append(ps.rows, r)
		}
		req.streams = append(req.streams, ps)
		total += len(ps.rows)
	}
	if total == 0 {
		return nil, nil
	}
	return req, nil
}

// runAppender commits appends in groups: it takes the first waiting request, adds every other
// request already queued behind it, and commits them in one transaction.
func (s *Store) runAppender() {
	defer close(s.stopped)
	for {
		var first *appendRequest
		select {
		case first = <-s.requests:
		case <-s.quit:
			s.refuseQueued()
			return
		}
		batch := []*appendRequest{first}
	collect:
		for len(batch) < maxBatch {
			select {
			case r := <-s.requests:
				batch = append(batch, r)
			default:
				break collect
			}
		}
		s.commit(batch)
	}
}

func (s *Store) refuseQueued() {
	for {
		select {
		case r := <-s.requests:
			r.done <- appendResult{err: ErrClosed}
		default:
			return
		}
	}
}

func (s *Store) commit(batch []*appendRequest) {
	start := time.Now()
	results, err := s.commitTx(batch)
	if err != nil && len(batch) > 1 {
		// One broken request must not fail the others with it: commit them one by one.
		for _, r := range batch {
			s.commit([]*appendRequest{r})
		}
		return
	}
	events := 0
	for i, r := range batch {
		if err != nil {
			r.done <- appendResult{err: err}
			continue
		}
		if results[i].err == nil {
			for _, st := range r.streams {
				events += len(st.rows)
			}
		}
		r.done <- results[i]
	}
	if events > 0 {
		s.observer.Committed(events, len(batch), time.Since(start))
		s.signal()
	}
}

// commitTx runs one group-commit transaction. A request whose expected versions are stale gets
// domain.ErrWrongVersion and writes nothing; the others are committed together.
func (s *Store) commitTx(batch []*appendRequest) ([]appendResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tx, err := s.db.Write.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("eventstore: begin append: %w", err)
	}
	defer tx.Rollback()

	var head int64
	if err := tx.QueryRowContext(ctx, `SELECT position FROM event_log_head WHERE id = 1`+s.db.ForUpdate()).Scan(&head); err != nil {
		return nil, fmt.Errorf("eventstore: lock head: %w", err)
	}
	versions, err := currentVersions(ctx, tx, batch)
	if err != nil {
		return nil, err
	}

	results := make([]appendResult, len(batch))
	var rows []*row
	pos := head
	for i, req := range batch {
		if !versionsMatch(req, versions) {
			results[i].err = domain.ErrWrongVersion
			continue
		}
		for _, st := range req.streams {
			v := versions[st.streamID]
			for _, r := range st.rows {
				v++
				pos++
				r.version, r.position = v, pos
				rows = append(rows, r)
			}
			versions[st.streamID] = v
		}
		results[i].last = pos
	}
	if len(rows) == 0 {
		return results, nil
	}
	if err := insertRows(ctx, tx, rows); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE event_log_head SET position = $1 WHERE id = 1`, pos); err != nil {
		return nil, fmt.Errorf("eventstore: move head: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("eventstore: commit append: %w", err)
	}
	return results, nil
}

// versionsMatch checks a request's expected versions against the stream versions so far in this
// batch (a request may append to one stream twice).
func versionsMatch(req *appendRequest, versions map[string]int64) bool {
	next := map[string]int64{}
	for _, st := range req.streams {
		cur, ok := next[st.streamID]
		if !ok {
			cur = versions[st.streamID]
		}
		if st.expected != domain.AnyVersion && st.expected != cur {
			return false
		}
		next[st.streamID] = cur + int64(len(st.rows))
	}
	return true
}

// currentVersions reads the version of every stream the batch touches; a new stream is at 0.
func currentVersions(ctx context.Context, tx *sql.Tx, batch []*appendRequest) (map[string]int64, error) {
	versions := map[string]int64{}
	var ids []any
	for _, req := range batch {
		for _, st := range req.streams {
			if _, ok := versions[st.streamID]; !ok {
				versions[st.streamID] = 0
				ids = append(ids, st.streamID)
			}
		}
	}
	const chunk = 500
	for start := 0; start < len(ids); start += chunk {
		part := ids[start:min(start+chunk, len(ids))]
		q := `SELECT stream_id, MAX(version) FROM events WHERE stream_id IN (` + placeholders(1, len(part)) + `) GROUP BY stream_id`
		rows, err := tx.QueryContext(ctx, q, part...)
		if err != nil {
			return nil, fmt.Errorf("eventstore: read stream versions: %w", err)
		}
		for rows.Next() {
			var id string
			var v int64
			if err := rows.Scan(&id, &v); err != nil {
				rows.Close()
				return nil, fmt.Errorf("eventstore: scan stream version: %w", err)
			}
			versions[id] = v
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("eventstore: read stream versions: %w", err)
		}
	}
	return versions, nil
}

const insertColumns = 11

func insertRows(ctx context.Context, tx *sql.Tx, rows []*row) error {
	const chunk = 200
	for start := 0; start < len(rows); start += chunk {
		part := rows[start:min(start+chunk, len(rows))]
		var sb strings.Builder
		sb.WriteString(`INSERT INTO events (position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, contact_id, data, metadata) VALUES `)
		args := make([]any, 0, len(part)*insertColumns)
		for i, r := range part {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString("(" + placeholders(i*insertColumns+1, insertColumns) + ")")
			args = append(args, r.position, r.eventID, r.streamID, r.version, r.eventType, r.schemaVersion,
				r.occurredAt, r.accountID, r.contactID, r.data, r.metadata)
		}
		if _, err := tx.ExecContext(ctx, sb.String(), args...); err != nil {
			return fmt.Errorf("eventstore: insert events: %w", err)
		}
	}
	return nil
}

// placeholders returns "$from, $from+1, …" for n parameters.
func placeholders(from, n int) string {
	var sb strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "$%d", from+i)
	}
	return sb.String()
}
