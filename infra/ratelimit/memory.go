package ratelimit

import (
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/funnelhq/funnel/api/httpapi/limits"
)

// Memory keeps the windows in this process: exact for one process, and what Fallback decides
// with while Redis does not answer. A window whose last request left it is dropped, so memory
// stays bounded by the requests of the last window length, however many clients come and go.
type Memory struct {
	clock func() time.Time
	start time.Time // times are kept as offsets from it: monotonic, whatever the wall clock does

	mu      sync.Mutex
	windows map[string]*requestLog
	// idle orders the windows of each length by their newest request, oldest first: the ones at
	// the front are the first to empty, and are dropped as soon as they do.
	idle map[time.Duration]*list.List
}

// requestLog is one window: the times of the requests in it, oldest first.
type requestLog struct {
	times  []time.Duration
	length time.Duration
	idle   *list.Element // its place in Memory.idle, holding its key
}

// NewMemory returns an empty store on clock (nil: time.Now). Tests move clock to let windows pass.
func NewMemory(clock func() time.Time) *Memory {
	if clock == nil {
		clock = time.Now
	}
	return &Memory{clock: clock, start: clock(), windows: map[string]*requestLog{}, idle: map[time.Duration]*list.List{}}
}

// Decide admits a request under every count or none (limits.Limiter).
func (m *Memory) Decide(_ context.Context, counts []limits.Count) (limits.Decision, error) {
	now := m.clock().Sub(m.start)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dropIdle(now)
	seen := make([]window, len(counts))
	for i, c := range counts {
		if l := m.windows[windowKey(c)]; l != nil {
			l.trim(now)
			seen[i] = l.window(now, c.Rule.Max)
		}
	}
	d := decide(counts, seen)
	if !d.Allowed {
		return d, nil
	}
	for _, c := range counts {
		if !c.CheckOnly {
			m.add(windowKey(c), c.Rule.Window, now)
		}
	}
	d.Slot = slot{keys: taken(counts), at: now}
	return d, nil
}

// Release removes the request a decision counted (limits.Limiter).
func (m *Memory) Release(_ context.Context, s limits.Slot) error {
	slot := slotOf(s)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, key := range slot.keys {
		if l := m.windows[key]; l != nil {
			l.remove(slot.at)
		}
	}
	return nil
}

// Windows is the number of windows kept (tests check that idle ones are dropped).
func (m *Memory) Windows() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.windows)
}

func (m *Memory) add(key string, length time.Duration, now time.Duration) {
	l := m.windows[key]
	idle := m.idle[length]
	if idle == nil {
		idle = list.New()
		m.idle[length] = idle
	}
	if l == nil {
		l = &requestLog{length: length, idle: idle.PushBack(key)}
		m.windows[key] = l
	} else {
		idle.MoveToBack(l.idle)
	}
	if n := len(l.times); n > 0 && l.times[n-1] > now {
		now = l.times[n-1] // a test clock moved back: keep the log in order
	}
	l.times = append(l.times, now)
}

// dropIdle drops the windows every request of which has left: at the front of each idle list.
func (m *Memory) dropIdle(now time.Duration) {
	for length, idle := range m.idle {
		for e := idle.Front(); e != nil; e = idle.Front() {
			key := e.Value.(string)
			l := m.windows[key]
			if n := len(l.times); n > 0 && l.times[n-1] > now-length {
				break // still counts a request, and so do the windows behind it
			}
			idle.Remove(e)
			delete(m.windows, key)
		}
	}
}

// trim drops the requests that left the window: a request at t counts while now-t < length.
func (l *requestLog) trim(now time.Duration) {
	i := 0
	for i < len(l.times) && l.times[i] <= now-l.length {
		i++
	}
	l.times = l.times[i:]
}

func (l *requestLog) window(now time.Duration, max int) window {
	n := len(l.times)
	if n == 0 {
		return window{}
	}
	next := 0 // the request whose departure frees the next slot
	if n >= max {
		next = n - max
	}
	return window{count: n, frees: l.times[next] + l.length - now}
}

// remove takes one request counted at t out of the log.
func (l *requestLog) remove(t time.Duration) {
	for i := len(l.times) - 1; i >= 0; i-- {
		if l.times[i] == t {
			l.times = append(l.times[:i], l.times[i+1:]...)
			return
		}
	}
}
