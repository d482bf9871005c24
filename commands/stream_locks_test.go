package commands

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// within fails the test if fn has not returned after a generous while: a guard against a hang,
// not a measure of speed.
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s never returned: it is blocked", what)
	}
}

// A command holding one stream's lock does not hold up another stream's; one on the same stream
// waits until the holder unlocks, or until its context ends; and no entry outlives its users.
func TestStreamLocksQueueOnlyTheSameStream(t *testing.T) {
	l := newStreamLocks()
	ctx := context.Background()
	unlockA, err := l.lock(ctx, "ct_a")
	if err != nil {
		t.Fatal(err)
	}
	within(t, "locking ct_b while ct_a is held", func() {
		unlockB, err := l.lock(ctx, "ct_b")
		if err != nil {
			t.Error(err)
			return
		}
		unlockB()
	})
	gaveUp, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.lock(gaveUp, "ct_a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("a second lock of a held stream = %v, want it to wait until its context ends", err)
	}
	granted := make(chan func())
	go func() {
		unlock, err := l.lock(ctx, "ct_a")
		if err != nil {
			t.Error(err)
		}
		granted <- unlock
	}()
	unlockA()
	within(t, "the waiter on ct_a", func() { (<-granted)() })
	if n := len(l.locks); n != 0 {
		t.Fatalf("%d lock entries left with no command on them", n)
	}
}

// Commands on one stream never overlap, and the map holds only the streams in use.
func TestStreamLocksExcludeAndForget(t *testing.T) {
	l := newStreamLocks()
	var inside, overlaps atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				unlock, err := l.lock(context.Background(), "ct_busy")
				if err != nil {
					t.Error(err)
					return
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				inside.Add(-1)
				unlock()
				// and a stream of its own, used once
				unlockOwn, err := l.lock(context.Background(), fmt.Sprintf("ct_%d_%d", w, i))
				if err != nil {
					t.Error(err)
					return
				}
				unlockOwn()
			}
		}()
	}
	wg.Wait()
	if overlaps.Load() != 0 {
		t.Fatalf("%d commands ran on one stream at once", overlaps.Load())
	}
	if n := len(l.locks); n != 0 {
		t.Fatalf("%d lock entries left after 1,601 streams were used", n)
	}
}
