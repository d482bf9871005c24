package commands

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/funnelhq/funnel/domain"
)

// maxAttempts bounds how often a command reloads and decides again after a concurrent append.
const maxAttempts = 25

// ErrTooMuchContention is returned when a command lost the race for its streams maxAttempts times.
var ErrTooMuchContention = errors.New("commands: too many concurrent changes to the same records, try again")

// session is one attempt at a command: the aggregates it loaded, at the versions it read them.
type session struct {
	repo    *Repository
	tracked []trackedAggregate
	streams map[string]domain.Aggregate // the tracked aggregates by stream id
	seen    int64                       // a log position a reader must reach to see what the decision saw
	attempt int                         // 1 for the first decision of a command, 2 for the next, …
	// guessNew is a stream that the decision may take for new without reading it, if this process
	// knows nothing of it (mayBeNew); guessed tells that it did.
	guessNew string
	guessed  bool
}

// mayBeNew lets the first attempt of a command take the stream id for a new one, without reading
// it, when this process keeps no state of it: its changes are then appended at version 0. A
// contact upserted for a new email, the common case, so costs no read of the log; when the guess
// was wrong the append fails on its version, writing nothing, and the next attempt reads the
// stream at once, without the pause of a lost race.
func (s *session) mayBeNew(id string) {
	if s.attempt == 1 {
		s.guessNew = id
	}
}

type trackedAggregate struct {
	agg     domain.Aggregate
	version int64
}

// load reads an aggregate from its stream (Repository.read: the state kept of it and the events
// after it) and tracks it, so that what its decisions record is appended at the version read
// here. A stream is loaded at most once per session: two aggregates of one stream would each
// append at the same version, and one would lose its events. Code that may meet a stream twice
// (tag automations) uses loadOnce.
func (s *session) load(ctx context.Context, agg domain.Aggregate) error {
	if _, dup := s.streams[agg.StreamID()]; dup {
		return fmt.Errorf("commands: stream %s loaded twice in one session", agg.StreamID())
	}
	version, err := s.peek(ctx, agg)
	if err != nil {
		return err
	}
	s.remember(agg, version)
	return nil
}

// peek reads an aggregate as load does (a guess of mayBeNew included), without tracking it. It
// is for a stream whose existence decides whether the command records anything at all (a
// payment's txnId already recorded): when it does not exist, the command tracks it at version 0
// (track) where the log should show its changes, and the append fails, and the command decides
// again, if another writer created it meanwhile.
func (s *session) peek(ctx context.Context, agg domain.Aggregate) (int64, error) {
	if agg.StreamID() == s.guessNew && s.repo.mayBeNew(agg) {
		s.guessed = true
		return 0, nil
	}
	return s.peekStored(ctx, agg)
}

// peekStored is peek without the guess: it reads the stream as it is now, even the one the
// session took for new. It is for a decision that must not rest on the guess after all (a refused
// payment whose txnId may be recorded: recordedDespite).
func (s *session) peekStored(ctx context.Context, agg domain.Aggregate) (int64, error) {
	version, position, err := s.repo.read(ctx, agg)
	if err != nil {
		return 0, err
	}
	s.seen = max(s.seen, position)
	return version, nil
}

// track adds the aggregate of a brand-new stream (a fresh random id) without reading it: its
// changes are appended at version 0, so the append fails, and the command decides again, in
// the unlikely case the stream exists after all.
func (s *session) track(agg domain.Aggregate) error {
	if _, dup := s.streams[agg.StreamID()]; dup {
		return fmt.Errorf("commands: stream %s tracked twice in one session", agg.StreamID())
	}
	s.remember(agg, 0)
	return nil
}

func (s *session) remember(agg domain.Aggregate, version int64) {
	if s.streams == nil {
		s.streams = map[string]domain.Aggregate{}
	}
	s.streams[agg.StreamID()] = agg
	s.tracked = append(s.tracked, trackedAggregate{agg: agg, version: version})
}

// loadOnce returns the session's aggregate of stream id, loading it into empty(id) the first
// time it is asked for, so that every decision of the session sees the same aggregate.
func loadOnce[A domain.Aggregate](ctx context.Context, s *session, id string, empty func(string) A) (A, error) {
	if agg, ok := s.streams[id]; ok {
		typed, ok := agg.(A)
		if !ok {
			var zero A
			return zero, fmt.Errorf("commands: stream %s is a %T, not a %T", id, agg, zero)
		}
		return typed, nil
	}
	agg := empty(id)
	if err := s.load(ctx, agg); err != nil {
		var zero A
		return zero, err
	}
	return agg, nil
}

// read brings agg up to date with its stream outside any session. It is for aggregates that
// never change once created (a form's definition), read to prepare a command before its session
// starts: their version needs no check at commit.
func read(ctx context.Context, repo *Repository, agg domain.Aggregate) error {
	_, _, err := repo.read(ctx, agg)
	return err
}

// Written is what a command appended: the position a reader must reach to see it, and the types
// of the events, so that the answer waits only for the read models that show those
// (Tracker.WaitWrite: none when they are all applied inline). Types is nil when the command
// appended nothing and its outcome is what it read: the answer then waits for every read model.
type Written struct {
	Position int64
	Types    []string `json:",omitempty"`
}

// commit appends the changes of every tracked aggregate in one atomic append, on the condition
// that every aggregate the session read, changed or not, is still at the version it read: a
// decision made on a stale read (a contact snapshot, an account's custom fields) is made again
// rather than committed. It returns the position a reader must reach to see the outcome (what
// was appended, or what was read), and the types appended.
func (s *session) commit(ctx context.Context, meta Meta) (Written, error) {
	var appends []domain.StreamAppend
	var types []string
	for _, t := range s.tracked {
		changes := t.agg.Changes()
		for _, e := range changes {
			if !slices.Contains(types, e.EventType()) {
				types = append(types, e.EventType())
			}
		}
		appends = append(appends, domain.StreamAppend{StreamID: t.agg.StreamID(), ExpectedVersion: t.version, Events: changes})
	}
	if len(types) == 0 {
		return Written{Position: s.seen}, nil
	}
	md := meta.metadata()
	md.IdempotencyID = idempotencyID(ctx)
	pos, err := s.repo.store.Append(ctx, md, appends...)
	if err != nil {
		return Written{}, err
	}
	// Only now, with the changes in the log, is the state of the changed aggregates kept: a
	// decision that failed, or an append that did, leaves the kept states as they were.
	for _, t := range s.tracked {
		if n := len(t.agg.Changes()); n > 0 {
			s.repo.committed(t.agg, t.version+int64(n), pos)
		}
	}
	return Written{Position: max(pos, s.seen), Types: types}, nil
}

// execute runs decide in a fresh session and commits it; when another writer appended to one of
// its streams first, it reloads and decides again. primaryStream is the stream the command is
// about, serialized in-process (see streamLocks). It returns the position to wait for.
func execute(ctx context.Context, repo *Repository, meta Meta, primaryStream string, decide func(ctx context.Context, s *session) error) (int64, error) {
	w, err := executeWrite(ctx, repo, meta, primaryStream, decide)
	return w.Position, err
}

// executeWrite is execute, returning what was written.
func executeWrite(ctx context.Context, repo *Repository, meta Meta, primaryStream string, decide func(ctx context.Context, s *session) error) (Written, error) {
	unlock, err := repo.locks.lock(ctx, primaryStream)
	if err != nil {
		return Written{}, err
	}
	defer unlock()
	for attempt := 1; ; attempt++ {
		s := &session{repo: repo, attempt: attempt}
		if err := decide(ctx, s); err != nil {
			return Written{}, err
		}
		w, err := s.commit(ctx, meta)
		if !errors.Is(err, domain.ErrWrongVersion) {
			return w, err
		}
		if attempt == maxAttempts {
			return Written{}, ErrTooMuchContention
		}
		if s.guessed {
			repo.existing.add(s.guessNew)
			continue // the stream was not new after all: read it now
		}
		// Another process won the race: back off a little, with jitter, and decide again.
		pause := time.Duration(rand.IntN(attempt*2000)+500) * time.Microsecond
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return Written{}, ctx.Err()
		}
	}
}
