package eventstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/google/uuid"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// maxBatch bounds how many appends one transaction commits together.
const maxBatch = 256

type row struct {
	eventID, streamID, eventType string
	schemaVersion                int
	occurredAt                   int64
	accountID                    string
	contactID, subscriptionID    sql.NullString
	idempotencyID                sql.NullString // on the first row of an append only (Metadata.IdempotencyID)
	data, metadata               string
	// plain is data with its personal values in place, for the inline projections and recent:
	// data, as stored, has them sealed (personal_data.go).
	plain string
	// person is the contact whose values data seals, and nulled, for a record kept after
	// erasure, the data to record instead should the append find that person erased
	// (erasure_race.go).
	person, nulled string
	sealed         *sealedValues // what nulled replaced in the last try, if it did (unnull)
	// erases is the contact whose key the event destroys (domain.ErasingEvent), if any, and
	// scrubs the contact's events from before sealing, their values nulled (legacy_values.go).
	erases            string
	scrubs            []legacyScrub
	meta              *domain.Metadata // metadata, decoded: for the inline projections
	version, position int64
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
	// newKeys are the persons' keys made for this append, stored in its transaction.
	newKeys []*newPersonKey
	done    chan appendResult // buffered: the appender never waits for a caller that gave up
}

// Append writes the events of every stream atomically: all of them or none. It fails with
// domain.ErrWrongVersion when any stream is no longer at its expected version, with
// domain.ErrAlreadyPerformed when the log holds an append of meta.IdempotencyID already, and otherwise
// returns the global position of the last event written. A stream given with no events is only
// checked: the append goes through only if that stream is still at its expected version (the
// decision read it and depends on it). An append with no events at all writes nothing.
func (s *Store) Append(ctx context.Context, meta domain.Metadata, appends ...domain.StreamAppend) (int64, error) {
	for attempt := 1; ; attempt++ {
		last, err := s.appendOnce(ctx, meta, appends)
		// Another append stored a key this one had made for a new person: seal again, under the
		// key stored (personal_data.go, storeNewKeys). A handful of tries always suffices: the
		// next one finds the key.
		if errors.Is(err, errKeyTaken) && attempt < 5 {
			continue
		}
		// On PostgreSQL the append creating the contact may not have committed yet: its first
		// event, which the key is stored by, shows once it has.
		if errors.Is(err, errKeyWithoutFirstEvent) && attempt < 5 {
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(time.Duration(attempt) * 50 * time.Millisecond): // half a second in all
			}
			continue
		}
		return last, err
	}
}

// appendOnce is one try of Append.
func (s *Store) appendOnce(ctx context.Context, meta domain.Metadata, appends []domain.StreamAppend) (int64, error) {
	req, err := s.encode(ctx, meta, appends)
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
func (s *Store) encode(ctx context.Context, meta domain.Metadata, appends []domain.StreamAppend) (*appendRequest, error) {
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
	fresh := map[string]*newPersonKey{}
	for _, a := range appends {
		ps := pendingStream{streamID: a.StreamID, expected: a.ExpectedVersion}
		if len(a.Events) == 0 && a.ExpectedVersion == domain.AnyVersion {
			continue
		}
		for _, e := range a.Events {
			typ, version, data, err := domain.EncodeEvent(e)
			if err != nil {
				return nil, err
			}
			id, err := uuid.NewV7()
			if err != nil {
				return nil, fmt.Errorf("eventstore: event id: %w", err)
			}
			personal, err := s.sealPersonal(ctx, meta.AccountID, id.String(), e, data, fresh)
			if err != nil {
				return nil, err
			}
			r := &row{
				eventID: id.String(), streamID: a.StreamID, eventType: typ, schemaVersion: version,
				occurredAt: now, accountID: meta.AccountID, data: string(personal.stored), plain: string(personal.plain),
				person: personal.person, nulled: string(personal.nulled), metadata: string(metaJSON), meta: &meta,
			}
			if ee, ok := e.(domain.ErasingEvent); ok {
				r.erases = ee.ErasedPerson()
				if r.scrubs, err = s.legacyScrubs(ctx, meta.AccountID, r.erases); err != nil {
					return nil, err
				}
			}
			// A contact's own events are found by their stream (readContactHistory): indexing
			// them by contact too would write an index entry that decides nothing.
			if ce, ok := e.(domain.ContactEvent); ok && ce.ContactRef() != "" && ce.ContactRef() != a.StreamID {
				r.contactID = sql.NullString{String: ce.ContactRef(), Valid: true}
			}
			if se, ok := e.(domain.SubscriptionEvent); ok && se.SubscriptionRef() != "" {
				r.subscriptionID = sql.NullString{String: se.SubscriptionRef(), Valid: true}
			}
			if total == 0 && len(ps.rows) == 0 && meta.IdempotencyID != "" {
				r.idempotencyID = sql.NullString{String: meta.IdempotencyID, Valid: true}
			}
			ps.rows = append(ps.rows, r)
		}
		req.streams = append(req.streams, ps)
		total += len(ps.rows)
	}
	if total == 0 {
		return nil, nil
	}
	for _, nk := range fresh {
		req.newKeys = append(req.newKeys, nk)
	}
	return req, nil
}

// runAppender commits appends in groups: it takes the first waiting request, adds every other
// request already queued behind it, and commits them in one transaction. On PostgreSQL several
// run side by side (appenders in store.go), each with its own transaction: nothing makes them
// wait for one another but appends to one stream, and PostgreSQL writes their commits to disk
// together. On SQLite one runs: the database has one writer.
func (s *Store) runAppender() {
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	results, err := s.commitTx(ctx, batch)
	if err != nil && len(batch) > 1 && !errors.Is(err, sqldb.ErrCommitUnknown) {
		// One broken request must not fail the others with it: commit them one by one. Not a
		// batch that may have committed: tried again, each request would meet its own events
		// (their ids are unique) and report a failure for a write that is in the log.
		for _, r := range batch {
			s.commit([]*appendRequest{r})
		}
		return
	}
	switch {
	case isIdempotencyIDTaken(err):
		err = domain.ErrAlreadyPerformed
	case isStreamVersionTaken(err):
		// Another transaction appended to the stream after this one read its version.
		err = domain.ErrWrongVersion
	case isPersonKeyTaken(err):
		err = errKeyTaken
	case isKeyWithoutFirstEvent(err):
		err = errKeyWithoutFirstEvent
	}
	events, last := 0, int64(0)
	for i, r := range batch {
		if err != nil {
			r.done <- appendResult{err: err}
			continue
		}
		if results[i].err == nil {
			for _, st := range r.streams {
				events += len(st.rows)
			}
			last = max(last, results[i].last)
		}
		r.done <- results[i]
	}
	if events > 0 {
		s.noteCommitted(last)
		s.observer.Committed(events, len(batch), time.Since(start))
		s.reportInline(last)
		s.signal()
	} else if err == nil {
		// Every request refused: the positions it took are void now, and a reader that waited on
		// them (ReadLog's ownInFlight) reads on past them.
		s.signal()
	}
}

// commitTx runs one group-commit transaction. A request whose expected versions are stale gets
// domain.ErrWrongVersion and writes nothing, as does one sealing values of a person erased
// before it (domain.ErrContactErased; erasure_race.go), in the log or earlier in the batch; the others are committed together, with what they
// change in the inline projections (inline.go). The positions of the requests refused are left
// unused: a gap, as a rolled-back transaction leaves one.
func (s *Store) commitTx(ctx context.Context, batch []*appendRequest) ([]appendResult, error) {
	if err := s.CatchUpInline(ctx); err != nil {
		return nil, err
	}
	unnull(batch)
	var results []appendResult
	var taken int64           // the first position this transaction took, on PostgreSQL; 0: none yet
	var found map[string]bool // the persons the transaction found erased in the log
	n := rowCount(batch)
	err := s.inTx(ctx, func(tx appendTx) error {
		b, err := tx.begin(ctx, beginning{streamIDs: streamIDs(batch), n: n, inline: len(s.inline) > 0, guard: guardOf(batch)})
		if err != nil {
			return err
		}
		first, versions := b.first, b.versions
		found = b.erased
		erased := maps.Clone(found) // and by the requests accepted so far
		if erased == nil {
			erased = map[string]bool{}
		}
		if s.db.Dialect == sqldb.Postgres {
			taken = first
			s.recent.take(first, n)
		}
		results = make([]appendResult, len(batch))
		var rows []*row
		pos := first - 1
		for i, req := range batch {
			if !versionsMatch(req, versions) {
				results[i].err = domain.ErrWrongVersion
				continue
			}
			if err := afterErasures(req, erased); err != nil {
				results[i].err = err
				continue
			}
			for _, st := range req.streams {
				v := versions[st.streamID]
				for _, r := range st.rows {
					v++
					pos++
					r.version, r.position = v, pos
					rows = append(rows, r)
					if r.erases != "" {
						erased[r.erases] = true
					}
				}
				versions[st.streamID] = v
			}
			results[i].last = pos
		}
		var newKeys []*newPersonKey
		for i, req := range batch {
			if results[i].err != nil {
				continue
			}
			for _, nk := range req.newKeys {
				if !found[nk.contactID] { // the values it sealed are null now, and the key's row is taken
					newKeys = append(newKeys, nk)
				}
			}
		}
		if err := tx.write(ctx, rows); err != nil {
			return err
		}
		if err := storeNewKeys(ctx, tx, s.db.Dialect, newKeys); err != nil {
			return err
		}
		erasing, err := eraseKeys(ctx, tx, s.db.Dialect, rows)
		if err != nil {
			return err
		}
		if err := s.applyInline(ctx, tx, rows); err != nil {
			return err
		}
		if err := tx.commit(ctx); err != nil {
			return err
		}
		if taken > 0 {
			s.recent.add(rows, taken, n)
		} else {
			// SQLite: the one writer's positions follow its last commit.
			s.recent.add(rows, 0, 0)
		}
		if s.keys != nil {
			for _, nk := range newKeys {
				s.keys.keep(nk.contactID, nk.key)
			}
		}
		if len(erasing) > 0 {
			s.recent.clear()
			for _, id := range erasing {
				if s.keys != nil {
					s.keys.forget(id)
				}
			}
		}
		return nil
	})
	if s.keys != nil {
		for id := range found { // erased elsewhere, or earlier: the key kept seals nothing more
			s.keys.forgetIfKept(id)
		}
	}
	if err != nil {
		if taken > 0 {
			s.settleFailed(taken, n, err)
		}
		return nil, err
	}
	return results, nil
}

// settleFailed tells recent what became of the positions a failed PostgreSQL transaction took:
// void when it certainly did not commit (the database refused a statement, or the commit was
// never sent), unknown otherwise; and wakes the readers that waited on them.
func (s *Store) settleFailed(first int64, n int, err error) {
	if errors.Is(err, sqldb.ErrCommitUnknown) {
		s.recent.forget(first, n)
	} else {
		s.recent.void(first, n)
	}
	s.signal()
}

// eraseKeys destroys, in the append transaction, the keys of the contacts its rows erase, and
// returns them.
func eraseKeys(ctx context.Context, tx appendTx, dialect sqldb.Dialect, rows []*row) ([]string, error) {
	var erased []string
	for _, r := range rows {
		if r.erases == "" {
			continue
		}
		res, err := tx.ExecContext(ctx, eraseKeyOf(dialect), r.erases, r.accountID, r.occurredAt)
		if err == nil {
			err = storedOne(dialect, res, r.erases)
		}
		if err != nil {
			return nil, fmt.Errorf("eventstore: destroy the key of %s: %w", r.erases, err)
		}
		for _, scrub := range r.scrubs {
			if _, err := tx.ExecContext(ctx, `UPDATE events SET data = $1 WHERE position = $2`, scrub.data, scrub.position); err != nil {
				return nil, fmt.Errorf("eventstore: null the plain values of event %d: %w", scrub.position, err)
			}
		}
		erased = append(erased, r.erases)
	}
	return erased, nil
}

// rowCount is how many events a batch holds: the positions its transaction takes.
func rowCount(batch []*appendRequest) int {
	n := 0
	for _, req := range batch {
		for _, st := range req.streams {
			n += len(st.rows)
		}
	}
	return n
}

func streamIDs(batch []*appendRequest) []string {
	seen := map[string]bool{}
	var ids []string
	for _, req := range batch {
		for _, st := range req.streams {
			if !seen[st.streamID] {
				seen[st.streamID] = true
				ids = append(ids, st.streamID)
			}
		}
	}
	return ids
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
