package cluster_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/cluster"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

var work = []string{"accounts", "tags", "forms", "webhooks", "timers"}

// member is one node and what its Hold was told last.
type member struct {
	node   *cluster.Node
	mu     sync.Mutex
	held   []string
	cancel context.CancelFunc
	done   chan struct{}
}

func (m *member) running() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.held)
}

func join(t *testing.T, db *sqldb.DB, role cluster.Role) *member {
	t.Helper()
	m := &member{done: make(chan struct{})}
	m.node = cluster.New(db, cluster.Config{Role: role, Leased: work, Always: []string{"dispatcher"}, Awaited: work,
		Hold: func(_ context.Context, held []string) {
			m.mu.Lock()
			m.held = slices.Clone(held)
			m.mu.Unlock()
		}})
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go func() { defer close(m.done); _ = m.node.Run(ctx) }()
	t.Cleanup(m.stop)
	return m
}

func (m *member) stop() {
	m.cancel()
	<-m.done
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// On PostgreSQL the leases spread over the workers, each held once, none by an api process; a
// worker that stops hands its leases over at once; the cluster view lists what each runs.
func TestLeasesSpreadAndMoveWhenAWorkerLeaves(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.Postgres)
	a, b, api := join(t, db, cluster.RoleWorker), join(t, db, cluster.RoleWorker), join(t, db, cluster.RoleAPI)
	spread := func() bool {
		ha, hb := a.running(), b.running()
		all := append(slices.Clone(ha), hb...)
		slices.Sort(all)
		want := slices.Sorted(slices.Values(work))
		return len(ha) > 0 && len(hb) > 0 && slices.Equal(all, want)
	}
	waitFor(t, 10*time.Second, "the work spread over both workers, each lease once", spread)
	if got := api.running(); len(got) != 0 {
		t.Errorf("the api process runs %v", got)
	}
	// The view shows what each runs once its Hold returned (a heartbeat follows every change).
	var processes []cluster.Process
	waitFor(t, 3*time.Second, "the cluster view lists the three processes and what each runs", func() bool {
		var err error
		if processes, err = cluster.List(context.Background(), db); err != nil || len(processes) != 3 {
			return false
		}
		for _, p := range processes {
			switch p.ID {
			case a.node.ID(), b.node.ID():
				if p.Role != cluster.RoleWorker || !slices.Contains(p.Runs, "dispatcher") || len(p.Runs) < 2 {
					return false
				}
			case api.node.ID():
				if p.Role != cluster.RoleAPI || len(p.Runs) != 0 {
					t.Errorf("api %+v", p)
				}
			default:
				t.Errorf("a process nobody started: %+v", p)
			}
		}
		return true
	})

	stopped := time.Now()
	a.stop()
	if got := a.running(); len(got) != 0 {
		t.Errorf("a stopped worker still runs %v", got)
	}
	waitFor(t, 3*time.Second, "the other worker runs everything", func() bool { return len(b.running()) == len(work) })
	t.Logf("handed over in %s", time.Since(stopped).Round(time.Millisecond))
	processes, err := cluster.List(context.Background(), db)
	if err != nil || len(processes) != 2 {
		t.Errorf("after a worker left, the view lists %d processes (%v)", len(processes), err)
	}
}

// On SQLite the one process holds everything.
func TestOneSQLiteProcessHoldsEverything(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.SQLite)
	m := join(t, db, cluster.RoleAll)
	waitFor(t, 5*time.Second, "the process runs everything", func() bool { return len(m.running()) == len(work) })
	waitFor(t, 3*time.Second, "the view shows it running everything and the dispatcher", func() bool {
		processes, err := cluster.List(context.Background(), db)
		return err == nil && len(processes) == 1 && len(processes[0].Runs) == len(work)+1
	})
}

// A worker cut off from the database (its statements fail) stops its work by itself, 4 s after
// its last renewal, so before its leases expire (5 s after it), and another worker takes them
// over once they have: the stop comes first by most of a second (deployment.md, "Takeover").
func TestAWorkerCutOffStopsItsWorkAndAnotherTakesItOver(t *testing.T) {
	url := sqldbtest.URL(t, sqldb.Postgres)
	open := func() *sqldb.DB {
		db, err := sqldb.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	shared := open()
	if _, err := shared.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	cutOff := open()
	a := join(t, cutOff, cluster.RoleWorker)
	waitFor(t, 5*time.Second, "the first worker runs everything", func() bool { return len(a.running()) == len(work) })
	b := join(t, shared, cluster.RoleWorker)
	waitFor(t, 5*time.Second, "the work spread", func() bool { return len(a.running()) > 0 && len(b.running()) > 0 })

	cutOff.Close() // every statement of a now fails, as with a lost connection
	cut := time.Now()
	waitFor(t, 8*time.Second, "the cut-off worker stops its work", func() bool { return len(a.running()) == 0 })
	stoppedAfter := time.Since(cut)
	waitFor(t, 10*time.Second, "the other worker runs everything", func() bool { return len(b.running()) == len(work) })
	tookAfter := time.Since(cut)
	t.Logf("cut off: its work stopped after %s, taken over after %s", stoppedAfter.Round(time.Millisecond), tookAfter.Round(time.Millisecond))
	if margin := tookAfter - stoppedAfter; margin < 500*time.Millisecond {
		t.Errorf("the cut-off worker stopped its work %s after the cut, only %s before the other took it over (%s)", stoppedAfter, margin, tookAfter)
	}
}

// An api process runs no work: it tells whether workers run what its requests wait for
// (WorkersRun, its /readyz). Alone, no; once a worker holds every lease, yes; once the last
// worker has left and the leases have gone unheld for 5 s, no again.
func TestAnAPINodeSeesWhetherWorkersHoldTheLeases(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.Postgres)
	api := join(t, db, cluster.RoleAPI)
	time.Sleep(1500 * time.Millisecond) // a look or two
	if ok, unheld := api.node.WorkersRun(); ok || !slices.Equal(unheld, work) {
		t.Fatalf("with no worker, WorkersRun says %v, %v; want false and every lease", ok, unheld)
	}
	w := join(t, db, cluster.RoleWorker)
	waitFor(t, 5*time.Second, "the api process sees the worker hold every lease", func() bool { ok, _ := api.node.WorkersRun(); return ok })
	if ok, _ := w.node.WorkersRun(); !ok {
		t.Errorf("a worker says its work does not run")
	}
	w.stop()
	left := time.Now()
	waitFor(t, 8*time.Second, "the api process sees no worker hold the leases", func() bool { ok, _ := api.node.WorkersRun(); return !ok })
	if after := time.Since(left); after < 3*time.Second {
		t.Errorf("the api process said no worker runs the work %s after the last left, before the 5 s a takeover may take", after)
	}
}
