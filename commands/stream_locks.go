package commands

import (
	"context"
	"sync"
)

// streamLocks serialize the commands of one stream inside this process, so that a burst of
// requests for one contact queues instead of failing its optimistic appends over and over. There
// is one lock per stream in use, not a fixed set shared by hash: a busy contact of one account
// never holds up a command on another stream. An entry lives while a command holds or waits for
// its lock, so the map holds at most the streams being written at the moment. Across processes
// the expected-version check at append alone keeps writers apart.
type streamLocks struct {
	mu    sync.Mutex
	locks map[string]*streamLock
}

type streamLock struct {
	token chan struct{} // holds one value while a command runs on the stream
	users int           // commands holding or waiting for the lock, guarded by streamLocks.mu
}

func newStreamLocks() *streamLocks {
	return &streamLocks{locks: map[string]*streamLock{}}
}

// lock waits, in arrival order, until no other command of this process runs on the stream, or
// until ctx ends (a client that gave up stops waiting). It returns the function that unlocks.
func (l *streamLocks) lock(ctx context.Context, streamID string) (func(), error) {
	l.mu.Lock()
	sl, ok := l.locks[streamID]
	if !ok {
		sl = &streamLock{token: make(chan struct{}, 1)}
		l.locks[streamID] = sl
	}
	sl.users++
	l.mu.Unlock()
	select {
	case sl.token <- struct{}{}:
		return func() {
			<-sl.token
			l.leave(streamID, sl)
		}, nil
	case <-ctx.Done():
		l.leave(streamID, sl)
		return nil, ctx.Err()
	}
}

// leave forgets the stream's lock once no command holds or waits for it.
func (l *streamLocks) leave(streamID string, sl *streamLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sl.users--
	if sl.users == 0 {
		delete(l.locks, streamID)
	}
}
