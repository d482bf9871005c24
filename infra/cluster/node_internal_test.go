package cluster

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
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

// A lease whose row this worker still holds after the watchdog gave it up (a renewal sent just
// before landed late and pushed the expiry 5 s out) is taken back within a balancing round or
// two, not left unrun until the row expires.
func TestAWorkerTakesBackARowItStillHolds(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.Postgres)
	h := &holds{}
	n := New(db, Config{Role: RoleWorker, Leased: []string{"a", "b"}, Hold: h.hold})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	running := func() []string { n.mu.Lock(); defer n.mu.Unlock(); return slices.Clone(n.running) }
	waitUntil(t, 5*time.Second, "the worker runs both leases", func() bool { return len(running()) == 2 })

	// The watchdog gives a up; a renewal sent before lands after it.
	n.mu.Lock()
	delete(n.owned, "a")
	n.mu.Unlock()
	if _, err := db.Write.Exec(`UPDATE leases SET expires_at = `+nowMillis(db.Dialect)+` + $1 WHERE name = 'a'`, leaseTTL.Milliseconds()); err != nil {
		t.Fatal(err)
	}
	gaveUp := time.Now()
	before := len(h.told())
	since := func() [][]string { return h.told()[before:] }
	waitUntil(t, 3*time.Second, "a stops", func() bool {
		return slices.ContainsFunc(since(), func(held []string) bool { return !slices.Contains(held, "a") })
	})
	waitUntil(t, 3*time.Second, "a runs again before its row expires", func() bool {
		told := since()
		return len(told) > 0 && slices.Contains(told[len(told)-1], "a")
	})
	t.Logf("a ran again %s after it was given up", time.Since(gaveUp).Round(time.Millisecond))
}

func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A renewal waits for its answer (here, for a connection of a busy pool) until the watchdog's
// stop point, not a fixed second: one that succeeds later than that second keeps the lease.
func TestARenewalWaitsUntilTheStopPoint(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.Postgres)
	n := New(db, Config{Role: RoleWorker, Leased: []string{"a"}, Hold: (&holds{}).hold})
	if _, err := db.Write.Exec(`INSERT INTO leases (name, holder, expires_at) VALUES ('a', $1, `+nowMillis(db.Dialect)+` + 5000)`, n.id); err != nil {
		t.Fatal(err)
	}
	bound := time.Now().Add(stopMargin + 2*time.Second)
	n.owned["a"] = bound
	// The pool's one connection is busy for 1.3 s.
	db.Write.SetMaxOpenConns(1)
	conn, err := db.Write.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(1300 * time.Millisecond); conn.Close() }()
	n.renew(context.Background())
	if until := n.owned["a"]; !until.After(bound) {
		t.Errorf("a renewal that could have succeeded within the 2 s before the stop point did not extend the lease")
	}
}

// A worker whose database does not answer leaves within seconds, not after the 10 s a SIGTERM
// may take in all: its deletions of its rows each give up soon (the rows expire anyway).
func TestAWorkerCutOffLeavesQuickly(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.Postgres)
	n := New(db, Config{Role: RoleWorker, Leased: []string{"a"}, Hold: (&holds{}).hold})
	// Every statement waits for the pool's one connection, which never comes back.
	db.Write.SetMaxOpenConns(1)
	conn, err := db.Write.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	n.leave()
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("leaving took %s", took)
	}
}

// Work this worker stops is no longer owned by the time Hold is told to stop it: a lease the
// balancer releases leaves owned before its work stops, so that the watchdog, which keeps what
// runs and is owned, cannot start it again meanwhile.
func TestReleasedLeasesAreNotOwnedWhileTheirWorkStops(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.Postgres)
	start := func(h *holds) *Node {
		n := New(db, Config{Role: RoleWorker, Leased: []string{"a", "b"}, Hold: h.hold})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = n.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		return n
	}
	ha := &holds{}
	var mu sync.Mutex
	var stoppedOwned []string
	a := start(ha)
	ha.mu.Lock() // hold reads during under ha.mu
	ha.during = func(call int) {
		// Inside Hold: what it was told against what ran and what is owned.
		ha.mu.Lock()
		told := ha.calls[call]
		ha.mu.Unlock()
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, name := range a.running {
			if _, owned := a.owned[name]; owned && !slices.Contains(told, name) {
				mu.Lock()
				stoppedOwned = append(stoppedOwned, name)
				mu.Unlock()
			}
		}
	}
	ha.mu.Unlock()
	running := func(n *Node) []string { n.mu.Lock(); defer n.mu.Unlock(); return slices.Clone(n.running) }
	waitUntil(t, 5*time.Second, "the first worker runs both", func() bool { return len(running(a)) == 2 })
	b := start(&holds{})
	waitUntil(t, 5*time.Second, "the second worker runs one", func() bool { return len(running(b)) == 1 && len(running(a)) == 1 })
	mu.Lock()
	defer mu.Unlock()
	if len(stoppedOwned) > 0 {
		t.Errorf("the work of %v was stopped while still owned", stoppedOwned)
	}
}
