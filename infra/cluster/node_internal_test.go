package cluster

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// holds records what a node's Hold was told, and the deadline it was given.
type holds struct {
	mu        sync.Mutex
	calls     [][]string
	deadlines []time.Time
	during    func(call int) // run inside Hold, before it returns
}

func (h *holds) hold(ctx context.Context, held []string) {
	h.mu.Lock()
	call := len(h.calls)
	h.calls = append(h.calls, slices.Clone(held))
	d, _ := ctx.Deadline()
	h.deadlines = append(h.deadlines, d)
	during := h.during
	h.mu.Unlock()
	if during != nil {
		during(call)
	}
}

func (h *holds) told() [][]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.calls)
}

// offlineNode is a PostgreSQL node that never reaches its database: setRunning without a
// heartbeat needs none.
func offlineNode(h *holds, owned map[string]time.Time) *Node {
	n := New(&sqldb.DB{Dialect: sqldb.Postgres}, Config{Role: RoleWorker, Leased: []string{"a", "b"}, Hold: h.hold})
	n.owned = owned
	return n
}

// A change of what runs is made by stopMargin before the first lease owned here may expire, not
// by that expiry: the watchdog starts stopping that lease's work then, and waits for the change.
func TestAChangeIsMadeByTheWatchdogsStopPoint(t *testing.T) {
	h := &holds{}
	now := time.Now()
	n := offlineNode(h, map[string]time.Time{"a": now.Add(5 * time.Second), "b": now.Add(3 * time.Second)})
	n.setRunning(context.Background(), func() []string { return []string{"a", "b"} }, false)
	if len(h.deadlines) != 1 {
		t.Fatalf("Hold was told %v", h.calls)
	}
	want := now.Add(3*time.Second - stopMargin)
	if d := h.deadlines[0]; d.IsZero() || d.Sub(want).Abs() > 10*time.Millisecond {
		t.Errorf("Hold's deadline is %s after the change began, want %s (the first expiry less stopMargin)", d.Sub(now), want.Sub(now))
	}
}

// A lease the watchdog gives up while Hold runs (Hold then restarts it with the rest) is stopped
// as soon as Hold returns, by its expiry.
func TestALeaseGivenUpDuringAChangeIsStoppedAtOnce(t *testing.T) {
	h := &holds{}
	now := time.Now()
	n := offlineNode(h, map[string]time.Time{"a": now.Add(2 * time.Second), "b": now.Add(5 * time.Second)})
	h.during = func(call int) {
		if call == 0 { // the watchdog, meanwhile, gives a up
			n.mu.Lock()
			delete(n.owned, "a")
			n.mu.Unlock()
		}
	}
	n.setRunning(context.Background(), func() []string { return []string{"a", "b"} }, false)
	if got := h.told(); !slices.EqualFunc(got, [][]string{{"a", "b"}, {"b"}}, slices.Equal) {
		t.Fatalf("Hold was told %v, want [a b] then [b] at once", got)
	}
	if d := h.deadlines[1]; !d.Equal(now.Add(2 * time.Second)) {
		t.Errorf("the stop of a was given %s, want its expiry bound", d.Sub(now))
	}
	if !slices.Equal(n.running, []string{"b"}) {
		t.Errorf("running %v", n.running)
	}
}

// The watchdog's change reads what runs once the change before it is made: work that change
// stopped (a lease the balancer released) is not started again.
func TestTheWatchdogDoesNotRestartWhatTheBalancerReleased(t *testing.T) {
	h := &holds{}
	now := time.Now()
	n := offlineNode(h, map[string]time.Time{"a": now.Add(5 * time.Second), "b": now.Add(5 * time.Second)})
	n.running = []string{"a", "b"}
	entered, release := make(chan struct{}), make(chan struct{})
	h.during = func(call int) {
		if call == 0 {
			close(entered)
			<-release
		}
	}
	balanced := make(chan struct{})
	go func() {
		defer close(balanced)
		// The balancer releases a.
		n.setRunning(context.Background(), func() []string { delete(n.owned, "a"); return []string{"b"} }, false)
	}()
	<-entered
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		n.setRunning(context.Background(), n.runningNow, false) // waits for holdMu
	}()
	time.Sleep(50 * time.Millisecond)
	close(release)
	<-balanced
	<-watched
	if got := h.told(); !slices.EqualFunc(got, [][]string{{"b"}}, slices.Equal) {
		t.Errorf("Hold was told %v, want [b] only", got)
	}
}
