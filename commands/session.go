package commands

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"

	"funnel/domain"
)

// maxAttempts bounds how often a command reloads and decides again after a concurrent append.
const maxAttempts = 25

// ErrTooMuchContention is returned when a command lost the race for its streams maxAttempts times.
var ErrTooMuchContention = errors.New("commands: too many concurrent changes to the same records, try again")

// session is one attempt at a command: the aggregates it loaded, at the versions it read them.
type session struct {
	store   EventStore
	tracked []trackedAggregate
	seen    int64 // highest log position read: a reader must reach it to see what the decision saw
}

type trackedAggregate struct {
	agg     domain.Aggregate
	version int64
}

// load replays an aggregate's stream into agg and tracks it, so that what its decisions record
// is appended at the version read here.
func (s *session) load(ctx context.Context, agg domain.Aggregate) error {
	events, err := s.store.ReadStream(ctx, agg.StreamID())
	if err != nil {
		return err
	}
	var version int64
	for _, r := range events {
		e, err := r.Decode()
		if err != nil {
			return fmt.Errorf("commands: load %s: %w", agg.StreamID(), err)
		}
		agg.Replay(e)
		version = r.Version
		s.seen = max(s.seen, r.Position)
	}
	s.tracked = append(s.tracked, trackedAggregate{agg: agg, version: version})
	return nil
}

// commit appends the changes of every tracked aggregate in one atomic append. It returns the
// position a reader must reach to see the outcome (what was appended, or what was read).
func (s *session) commit(ctx context.Context, meta Meta) (int64, error) {
	var appends []domain.StreamAppend
	for _, t := range s.tracked {
		if changes := t.agg.Changes(); len(changes) > 0 {
			appends = append(appends, domain.StreamAppend{StreamID: t.agg.StreamID(), ExpectedVersion: t.version, Events: changes})
		}
	}
	if len(appends) == 0 {
		return s.seen, nil
	}
	pos, err := s.store.Append(ctx, meta.metadata(), appends...)
	if err != nil {
		return 0, err
	}
	return max(pos, s.seen), nil
}

// streamLocks serialize commands on the same stream inside one process, so that a burst of
// requests for one contact queues instead of failing its optimistic appends over and over.
// Across processes the expected-version check alone keeps them apart.
var streamLocks [256]sync.Mutex

func lockStream(id string) func() {
	h := fnv.New32a()
	h.Write([]byte(id))
	m := &streamLocks[h.Sum32()%uint32(len(streamLocks))]
	m.Lock()
	return m.Unlock
}

// execute runs decide in a fresh session and commits it; when another writer appended to one of
// its streams first, it reloads and decides again. primaryStream is the stream the command is
// about, serialized in-process (see streamLocks). It returns the position to wait for.
func execute(ctx context.Context, store EventStore, meta Meta, primaryStream string, decide func(ctx context.Context, s *session) error) (int64, error) {
	unlock := lockStream(primaryStream)
	defer unlock()
	for attempt := 1; ; attempt++ {
		s := &session{store: store}
		if err := decide(ctx, s); err != nil {
			return 0, err
		}
		pos, err := s.commit(ctx, meta)
		if !errors.Is(err, domain.ErrWrongVersion) {
			return pos, err
		}
		if attempt == maxAttempts {
			return 0, ErrTooMuchContention
		}
		// Another process won the race: back off a little, with jitter, and decide again.
		pause := time.Duration(rand.IntN(attempt*2000)+500) * time.Microsecond
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}
