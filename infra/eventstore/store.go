// Package eventstore is the event log on PostgreSQL or SQLite: streams with expected-version
// appends, one global position, and readers that never skip an event (DESIGN.md invariants 1-4).
//
// How the global order is kept (docs/architecture.md, "The write path"): on PostgreSQL, appends
// run side by side, each transaction taking its id and its positions together (event_log_take),
// so that ids and positions grow together; a reader reads only the events of transactions below
// the oldest one of the database still running (sqldb.PGHorizon), which are all settled, so
// position order is commit order for everything it reads. A rolled-back transaction leaves a
// gap, which readers simply pass. On SQLite the one writer appends in position order. Each
// appender commits the appends that arrive while it commits in one transaction (group commit,
// appender.go).
package eventstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gojson "github.com/goccy/go-json"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// ErrClosed is returned by appends after Close.
var ErrClosed = errors.New("eventstore: closed")

// Store is the event log.
type Store struct {
	db       *sqldb.DB
	now      func() time.Time
	requests chan *appendRequest
	quit     chan struct{}
	stopped  chan struct{}
	once     sync.Once

	mu        sync.Mutex
	listeners map[chan struct{}]struct{}
	observer  Observer
	inline    []InlineProjection
	recent    recent
	// keys seals and opens personal values (personal_data.go); nil: stored as they are.
	keys *personKeys

	// inlineMu guards the one catch-up of the inline projections (inline.go).
	inlineMu    sync.Mutex
	inlineReady atomic.Bool
	// committed is the last position this process has committed (LastCommitted).
	committed atomic.Int64
	// settled is a position every position up to which is settled: the furthest a read of the log
	// has returned (noteSettled). A read from memory may pass the database's horizon; the reads
	// that keep to the horizon (Head, ReadAccountEvents) read up to it as well, so that what the
	// relay has delivered, the feed shows.
	settled atomic.Int64
	// window keeps the last start of a feed's or replay's window (window_start.go).
	window struct {
		sync.Mutex
		cached windowCache
	}
}

// Observer is told about every committed batch (metrics).
type Observer interface {
	Committed(events, appends int, took time.Duration)
}

type noObserver struct{}

func (noObserver) Committed(int, int, time.Duration) {}

// pgAppenders is how many append transactions a process runs side by side on PostgreSQL. Two:
// one commits while the next gathers the appends queued meanwhile, so commits still overlap and
// each carries a group. Eight gave every append a transaction of its own, and each transaction's
// round trips cost PostgreSQL more than its writes (on this VM, a context switch each side):
// 645 against 871 upserts/s at 8 clients, PostgreSQL's CPU per upsert 1.65 against 1.03 ms
// (docs/performance.md, "Appends without a global lock").
const pgAppenders = 2

// New opens the log on db and starts its appenders.
func New(db *sqldb.DB) *Store {
	s := &Store{
		db:        db,
		now:       func() time.Time { return time.Now().UTC() },
		requests:  make(chan *appendRequest, 1024),
		quit:      make(chan struct{}),
		stopped:   make(chan struct{}),
		listeners: map[chan struct{}]struct{}{},
		observer:  noObserver{},
	}
	appenders := 1
	if db.Dialect == sqldb.Postgres {
		appenders = pgAppenders
	}
	var running sync.WaitGroup
	for range appenders {
		running.Add(1)
		go func() {
			defer running.Done()
			s.runAppender()
		}()
	}
	go func() {
		running.Wait()
		close(s.stopped)
	}()
	return s
}

// noteCommitted records a position this process has committed.
func (s *Store) noteCommitted(pos int64) {
	for {
		cur := s.committed.Load()
		if pos <= cur || s.committed.CompareAndSwap(cur, pos) {
			return
		}
	}
}

// noteSettled records that every position up to pos is settled.
func (s *Store) noteSettled(pos int64) {
	for {
		cur := s.settled.Load()
		if pos <= cur || s.settled.CompareAndSwap(cur, pos) {
			return
		}
	}
}

// LastCommitted returns the last position this process has committed (0: none yet). A reader of
// the log that has not reached it yet knows more is coming soon: the transactions that hold it
// back are still running (the relay reads again at once instead of waiting for the next commit).
func (s *Store) LastCommitted() int64 { return s.committed.Load() }

// SetObserver installs the metrics hook; call it before the first append.
func (s *Store) SetObserver(o Observer) { s.observer = o }

// Close stops the appenders after the batches they are committing; later appends fail with ErrClosed.
func (s *Store) Close() {
	s.once.Do(func() { close(s.quit) })
	<-s.stopped
}

// Notify returns a channel that receives a value (coalesced) after every commit, and a function
// to stop listening. The relay waits on it instead of polling.
func (s *Store) Notify() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.listeners[ch] = struct{}{}
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(s.listeners, ch)
		s.mu.Unlock()
	}
}

func (s *Store) signal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.listeners {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

const selectEvents = `SELECT position, event_id, stream_id, version, type, schema_version, occurred_at, data, metadata FROM events`

// ReadStream returns every event of one stream, oldest first.
func (s *Store) ReadStream(ctx context.Context, streamID string) ([]domain.Recorded, error) {
	return s.ReadStreamFrom(ctx, streamID, 0)
}

// readLog is the relay's read on SQLite, and a read of the log where no append runs
// (inline.go), answered from the primary key whatever the statistics say (plans_test.go checks it
// on a large log).
const readLog = selectEvents + ` WHERE position > $1 ORDER BY position LIMIT $2`

// readLogBelowHorizon is the relay's read on PostgreSQL: only the events of transactions below the
// oldest transaction of the database still running (sqldb.PGHorizon). Those are all settled,
// committed or rolled back, and transactions take their ids and positions together
// (event_log_take), so no transaction still to commit holds a position below the last event read:
// reading on from it never skips one. The snapshot of pg_current_snapshot() is the statement's
// own, so every transaction below the horizon that committed is visible to it. The primary key
// answers it (plans_test.go); tx_id only filters the few newest rows.
const readLogBelowHorizon = selectEvents + ` WHERE position > $1 AND tx_id < ` + sqldb.PGHorizon + ` ORDER BY position LIMIT $2`

// readStreamFrom is the tail of a stream. Both databases answer it with a range scan of the
// (stream_id, version) unique index, whatever their statistics say (a test checks the plans), so
// its cost is the length of the tail, not of the stream.
const readStreamFrom = selectEvents + ` WHERE stream_id = $1 AND version > $2 ORDER BY version`

// ReadStreamFrom returns the events of one stream after a version, oldest first: the tail a
// command reads on top of an aggregate state it kept from an earlier read, or the API key check
// on top of the revocations it knows (0: the whole stream).
func (s *Store) ReadStreamFrom(ctx context.Context, streamID string, afterVersion int64) ([]domain.Recorded, error) {
	rows, err := sqldb.Query(ctx, s.db.Read, readStreamFrom, streamID, afterVersion) // prepared once on SQLite: every API request reads its account stream
	if err != nil {
		return nil, fmt.Errorf("eventstore: read stream %s after version %d: %w", streamID, afterVersion, err)
	}
	return s.scanOpened(ctx, rows)
}

// ReadLog returns up to limit events after a global position, in position order, and never one
// while an event before it may still commit: reading on from the last one returned skips
// nothing. Right after this process's commits (the relay's read) the events come from memory
// (recent.go), and then end where this process's own run of positions does, even where another
// process has committed more since: a later read returns those. From the database, on
// PostgreSQL it returns only what is below the horizon (readLogBelowHorizon), so a commit shows
// once the transactions that began before it have ended. It returns nothing, without the
// database, while the position after is one this process's own append holds open: a reader that
// waits on Notify is woken when that append ends.
func (s *Store) ReadLog(ctx context.Context, after int64, limit int) ([]domain.Recorded, error) {
	events, said, err := s.recent.read(after, limit)
	if said == ownInFlight {
		// Nothing is readable after a position this process's open append holds, and its end
		// signals (Notify): the database, which would say the same, is not asked. Where two
		// appenders commit out of order, those were most of the relay's reads of the database
		// (docs/performance.md, "The relay reads its own process's commits from memory").
		return nil, nil
	}
	if said == askDatabase && err == nil {
		query := readLogBelowHorizon
		if s.db.Dialect == sqldb.SQLite {
			query = readLog
		}
		rows, err := s.db.Read.QueryContext(ctx, query, after, limit)
		if err != nil {
			return nil, fmt.Errorf("eventstore: read log after %d: %w", after, err)
		}
		if events, err = s.scanOpened(ctx, rows); err != nil {
			return nil, err
		}
	}
	if len(events) > 0 {
		s.noteSettled(events[len(events)-1].Position)
	}
	return events, err
}

// readContactHistory reads a contact's own stream (the (stream_id, version) index) and the events
// of other streams that name it (events_by_contact): since migration 12 an event of the contact's
// own stream is not indexed by contact too, and those from before are found either way, once.
// Both indexes answer it (plans_test.go).
var readContactHistory = contactHistoryQuery(false)

// ReadContactHistory returns up to limit events of an account that concern a contact (its own
// stream and the leads, submissions and bookings that name it), after a position, in position
// order: a history is read a page at a time.
func (s *Store) ReadContactHistory(ctx context.Context, accountID, contactID string, after int64, limit int) ([]domain.Recorded, error) {
	rows, err := s.db.Read.QueryContext(ctx, readContactHistory, contactID, accountID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("eventstore: read contact history: %w", err)
	}
	return s.scanOpened(ctx, rows)
}

// ReadSubscriptionHistory returns up to limit events of an account that belong to a subscription
// (domain.SubscriptionEvent), after a position, in position order: for a billing subscription its
// own stream, the purchase, rebills and refunds on its transactions' streams and the activation
// its purchase issued; for a webhook subscription its stream. A history is read a page at a time.
func (s *Store) ReadSubscriptionHistory(ctx context.Context, accountID, subscriptionID string, after int64, limit int) ([]domain.Recorded, error) {
	rows, err := s.db.Read.QueryContext(ctx,
		selectEvents+` WHERE subscription_id = $1 AND account_id = $2 AND position > $3 ORDER BY position LIMIT $4`, subscriptionID, accountID, after, limit)
	if err != nil {
		return nil, fmt.Errorf("eventstore: read subscription history: %w", err)
	}
	return s.scanOpened(ctx, rows)
}

// StreamAccount returns the account of a stream ("" when there is no such stream): ids are unique
// across accounts, so a stream belongs to one account only.
func (s *Store) StreamAccount(ctx context.Context, streamID string) (string, error) {
	var account string
	err := s.db.Read.QueryRowContext(ctx, `SELECT account_id FROM events WHERE stream_id = $1 AND version = 1`, streamID).Scan(&account)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("eventstore: account of stream %s: %w", streamID, err)
	}
	return account, nil
}

// Head returns the position of the last event that ReadLog returns now (0 for an empty log):
// every position up to it is settled, so a window of the log up to it, read once, is complete.
//
// On PostgreSQL the horizon follows a commit once the transactions that began before it have
// ended, which another transaction of the database may hold up: Head waits, up to
// settleWait and while ctx lasts, for the horizon to pass what this process has committed, so
// that a process reads its own appends (a test, the demo, `funnel projections` after a write).
func (s *Store) Head(ctx context.Context) (int64, error) {
	own := s.committed.Load()
	deadline := time.Now().Add(settleWait)
	for {
		head, err := s.db.LogHead(ctx)
		if err != nil {
			return 0, fmt.Errorf("eventstore: %w", err)
		}
		head = max(head, s.settled.Load())
		if head >= own || time.Now().After(deadline) {
			return head, nil
		}
		select {
		case <-ctx.Done():
			return head, nil
		case <-time.After(time.Millisecond):
		}
	}
}

// settleWait bounds how long Head waits for the horizon to pass this process's own commits.
const settleWait = 5 * time.Second

// scanOpened reads the events of a query with their personal values opened (personal_data.go).
func (s *Store) scanOpened(ctx context.Context, rows *sql.Rows) ([]domain.Recorded, error) {
	events, err := scanEvents(rows)
	if err != nil {
		return nil, err
	}
	if err := s.OpenPersonal(ctx, events); err != nil {
		return nil, err
	}
	return events, nil
}

func scanEvents(rows *sql.Rows) ([]domain.Recorded, error) {
	defer rows.Close()
	return scanEach(rows)
}

// eventRows are the rows of a query of events, from database/sql or from pgx.
type eventRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// scanEach reads every row of a query of events (selectEvents); the caller closes rows.
func scanEach(rows eventRows) ([]domain.Recorded, error) {
	var out []domain.Recorded
	for rows.Next() {
		var (
			r          domain.Recorded
			occurredMs int64
			data, meta string
		)
		if err := rows.Scan(&r.Position, &r.ID, &r.StreamID, &r.Version, &r.Type, &r.SchemaVersion, &occurredMs, &data, &meta); err != nil {
			return nil, fmt.Errorf("eventstore: scan event: %w", err)
		}
		r.OccurredAt = time.UnixMilli(occurredMs).UTC()
		r.Data = json.RawMessage(data)
		// The metadata is what encode wrote, and every reader of the log (the relay, rebuilds)
		// decodes it for every event: goccy/go-json reads it in 0.5 µs where encoding/json took 3.2.
		if err := gojson.Unmarshal([]byte(meta), &r.Metadata); err != nil {
			return nil, fmt.Errorf("eventstore: event %d metadata: %w", r.Position, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("eventstore: read events: %w", err)
	}
	return out, nil
}

// ReadRecentEvents returns an account's latest events of some types, newest first.
func (s *Store) ReadRecentEvents(ctx context.Context, accountID string, types []string, limit int) ([]domain.Recorded, error) {
	if len(types) == 0 {
		return nil, nil
	}
	args := []any{accountID, limit}
	marks := make([]string, len(types))
	for i, t := range types {
		args = append(args, t)
		marks[i] = fmt.Sprintf("$%d", i+3)
	}
	rows, err := s.db.Read.QueryContext(ctx, selectEvents+` WHERE account_id = $1 AND type IN (`+strings.Join(marks, ", ")+`) ORDER BY position DESC LIMIT $2`, args...)
	if err != nil {
		return nil, fmt.Errorf("eventstore: read recent events: %w", err)
	}
	return s.scanOpened(ctx, rows)
}
