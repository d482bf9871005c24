package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/funnelhq/funnel/api/httpapi/limits"
	"github.com/funnelhq/funnel/infra/ratelimit/redistest"
)

// stores runs fn against each store: Memory, and Redis on the test server with a prefix of its own.
func stores(t *testing.T, fn func(t *testing.T, l limits.Limiter)) {
	t.Run("memory", func(t *testing.T) { fn(t, NewMemory(nil)) })
	t.Run("redis", func(t *testing.T) { fn(t, NewRedis(redistest.Client(t), redistest.Prefix(t))) })
}

var perMinute = limits.Rule{Name: "writes", Max: 3, Window: time.Minute, Description: "3 per minute"}

func mustDecide(t *testing.T, l limits.Limiter, counts ...limits.Count) limits.Decision {
	t.Helper()
	d, err := l.Decide(context.Background(), counts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestAdmitsExactlyMaxThenRefuses(t *testing.T) {
	stores(t, func(t *testing.T, l limits.Limiter) {
		c := limits.Count{Rule: perMinute, Subject: "acc_1"}
		for i := range perMinute.Max {
			d := mustDecide(t, l, c)
			s := d.Statuses[0]
			if !d.Allowed || !s.Counted || s.Refused || s.Remaining != perMinute.Max-1-i {
				t.Fatalf("request %d: %+v", i+1, d)
			}
			if s.Reset <= 0 || s.Reset > time.Minute {
				t.Fatalf("request %d: reset %s", i+1, s.Reset)
			}
		}
		d := mustDecide(t, l, c)
		s := d.Statuses[0]
		if d.Allowed || !s.Refused || s.Counted || s.Remaining != 0 || s.Reset <= 0 || s.Reset > time.Minute {
			t.Fatalf("request over the limit: %+v", d)
		}
		if d := mustDecide(t, l, limits.Count{Rule: perMinute, Subject: "acc_2"}); !d.Allowed {
			t.Fatalf("another subject's window is its own: %+v", d)
		}
	})
}

// A request is counted under all its rules or under none: refused by one window, it takes no
// slot of the others.
func TestAllOrNothing(t *testing.T) {
	stores(t, func(t *testing.T, l limits.Limiter) {
		wide := limits.Count{Rule: limits.Rule{Name: "wide", Max: 5, Window: time.Minute}, Subject: "x"}
		narrow := limits.Count{Rule: limits.Rule{Name: "narrow", Max: 1, Window: time.Minute}, Subject: "x"}
		if d := mustDecide(t, l, wide, narrow); !d.Allowed || d.Statuses[0].Remaining != 4 || d.Statuses[1].Remaining != 0 {
			t.Fatalf("first: %+v", d)
		}
		d := mustDecide(t, l, wide, narrow)
		if d.Allowed || d.Statuses[0].Refused || !d.Statuses[1].Refused || d.Statuses[0].Counted || d.Statuses[0].Remaining != 4 {
			t.Fatalf("second: %+v", d)
		}
		if d := mustDecide(t, l, wide); !d.Allowed || d.Statuses[0].Remaining != 3 {
			t.Fatalf("the refused request took a slot of the wide window: %+v", d)
		}
	})
}

func TestCheckOnlyCountsNothing(t *testing.T) {
	stores(t, func(t *testing.T, l limits.Limiter) {
		failures := limits.Rule{Name: "auth", Max: 2, Window: 15 * time.Minute}
		check := limits.Count{Rule: failures, Subject: "192.0.2.1", CheckOnly: true}
		for range 5 {
			if d := mustDecide(t, l, check); !d.Allowed || d.Statuses[0].Counted || d.Statuses[0].Remaining != 2 {
				t.Fatalf("check on an empty window: %+v", d)
			}
		}
		count := limits.Count{Rule: failures, Subject: "192.0.2.1"}
		mustDecide(t, l, count)
		mustDecide(t, l, count)
		if d := mustDecide(t, l, check); d.Allowed || !d.Statuses[0].Refused {
			t.Fatalf("check on a full window: %+v", d)
		}
	})
}

func TestReleaseGivesTheSlotBack(t *testing.T) {
	stores(t, func(t *testing.T, l limits.Limiter) {
		a := limits.Count{Rule: perMinute, Subject: "a"}
		b := limits.Count{Rule: limits.Rule{Name: "other", Max: 10, Window: time.Minute}, Subject: "a"}
		d := mustDecide(t, l, a, b)
		mustDecide(t, l, a)
		if err := l.Release(context.Background(), d.Slot); err != nil {
			t.Fatal(err)
		}
		if d := mustDecide(t, l, a, b); !d.Allowed || d.Statuses[0].Remaining != 1 || d.Statuses[1].Remaining != 9 {
			t.Fatalf("after release: %+v", d)
		}
		if err := l.Release(context.Background(), nil); err != nil {
			t.Fatalf("releasing nothing: %v", err)
		}
	})
}

// Concurrent decisions never admit more than Max: for Redis, from two stores (two processes)
// on one server.
func TestConcurrentDecisionsStayExact(t *testing.T) {
	const max, tries = 40, 200
	rule := limits.Rule{Name: "burst", Max: max, Window: time.Minute}
	check := func(t *testing.T, limiters ...limits.Limiter) {
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for i := range tries {
			wg.Go(func() {
				d, err := limiters[i%len(limiters)].Decide(context.Background(), []limits.Count{{Rule: rule, Subject: "s"}})
				if err != nil {
					t.Error(err)
				}
				if d.Allowed {
					admitted.Add(1)
				}
			})
		}
		wg.Wait()
		if admitted.Load() != max {
			t.Fatalf("admitted %d of %d, want exactly %d", admitted.Load(), tries, max)
		}
	}
	t.Run("memory", func(t *testing.T) { check(t, NewMemory(nil)) })
	t.Run("redis", func(t *testing.T) {
		prefix := redistest.Prefix(t)
		check(t, NewRedis(redistest.Client(t), prefix), NewRedis(redistest.Client(t), prefix))
	})
}

// testClock is a clock that moves only when told to.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// A slot frees exactly when the oldest request leaves the window: a request at t counts until
// t + window, not a nanosecond less, and only one slot frees then.
func TestMemorySlidesExactly(t *testing.T) {
	clock := &testClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	m := NewMemory(clock.Now)
	c := limits.Count{Rule: perMinute, Subject: "s"}
	mustDecide(t, m, c) // t0
	clock.Advance(30 * time.Second)
	mustDecide(t, m, c) // t0+30s
	mustDecide(t, m, c)
	clock.Advance(30*time.Second - time.Nanosecond)
	d := mustDecide(t, m, c)
	if d.Allowed || d.Statuses[0].Reset != time.Nanosecond {
		t.Fatalf("a nanosecond before the oldest leaves: %+v", d)
	}
	clock.Advance(time.Nanosecond)
	if d := mustDecide(t, m, c); !d.Allowed || d.Statuses[0].Remaining != 0 || d.Statuses[0].Reset != 30*time.Second {
		t.Fatalf("when the oldest leaves: %+v", d)
	}
	if d := mustDecide(t, m, c); d.Allowed || d.Statuses[0].Reset != 30*time.Second {
		t.Fatalf("only one slot freed: %+v", d)
	}
}

// The Redis script slides on Redis's clock: requests logged more than a window ago have left,
// the others still count, and the refusal tells when the oldest that counts leaves.
func TestRedisSlidesOnItsClock(t *testing.T) {
	client := redistest.Client(t)
	r := NewRedis(client, redistest.Prefix(t))
	c := limits.Count{Rule: perMinute, Subject: "s"}
	ctx := context.Background()
	now, err := client.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	at := func(ago time.Duration) float64 { return float64(now.Add(-ago).UnixMicro()) }
	key := r.prefix + windowKey(c)
	// Two requests that left the window (one exactly a window ago, give or take the test's
	// latency), and three that count, the oldest leaving in about 20 s.
	client.ZAdd(ctx, key, redisZ(at(61*time.Second), "gone-1"), redisZ(at(time.Minute), "gone-2"),
		redisZ(at(40*time.Second), "in-1"), redisZ(at(30*time.Second), "in-2"), redisZ(at(time.Second), "in-3"))
	d := mustDecide(t, r, c)
	if d.Allowed || !d.Statuses[0].Refused {
		t.Fatalf("three requests in the window: %+v", d)
	}
	if reset := d.Statuses[0].Reset; reset > 20*time.Second || reset < 15*time.Second {
		t.Fatalf("the oldest request in the window leaves in %s, want about 20 s", reset)
	}
	if left, _ := client.ZRange(ctx, key, 0, -1).Result(); fmt.Sprint(left) != "[in-1 in-2 in-3]" {
		t.Fatalf("window after the decision: %v", left)
	}
	client.ZRem(ctx, key, "in-1")
	if d := mustDecide(t, r, c); !d.Allowed || d.Statuses[0].Remaining != 0 {
		t.Fatalf("a slot freed: %+v", d)
	}
	ttl, err := client.PTTL(ctx, key).Result()
	if err != nil || ttl <= 55*time.Second || ttl > time.Minute {
		t.Fatalf("the window expires in %s (%v), want one window length", ttl, err)
	}
}

// Windows nobody asks about any more are dropped: a client rotating addresses leaves nothing
// behind once its requests left their windows.
func TestMemoryDropsIdleWindows(t *testing.T) {
	clock := &testClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	m := NewMemory(clock.Now)
	long := limits.Rule{Name: "auth", Max: 30, Window: 15 * time.Minute}
	for i := range 1000 {
		mustDecide(t, m, limits.Count{Rule: perMinute, Subject: fmt.Sprint("203.0.113.", i)})
	}
	mustDecide(t, m, limits.Count{Rule: long, Subject: "198.51.100.1"})
	if n := m.Windows(); n != 1001 {
		t.Fatalf("%d windows, want 1001", n)
	}
	clock.Advance(time.Minute)
	mustDecide(t, m, limits.Count{Rule: perMinute, Subject: "new"})
	if n := m.Windows(); n != 2 {
		t.Fatalf("%d windows a minute later, want the new one and the 15-minute one", n)
	}
	clock.Advance(14 * time.Minute)
	mustDecide(t, m, limits.Count{Rule: perMinute, Subject: "newer"})
	if n := m.Windows(); n != 1 {
		t.Fatalf("%d windows 15 minutes later, want 1", n)
	}
}

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }
