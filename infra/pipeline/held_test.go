package pipeline

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
	"github.com/funnelhq/funnel/projections"
)

// overlapCounter counts batches a projector found applied by another process.
type overlapCounter struct {
	nopObserver
	overlaps atomic.Int64
}

func (o *overlapCounter) AppliedElsewhere(string) { o.overlaps.Add(1) }

// Two shared pipelines on one PostgreSQL database (two processes): the one that holds no
// projection waits for the other's checkpoint (read your writes across processes) and invalidates
// its caches only once the other applied a batch; when the projection moves to it (SetHeld), it
// goes on from the checkpoint, and no batch is applied by both.
func TestSharedPipelinesDivideTheProjections(t *testing.T) {
	db := sqldbtest.Open(t, sqldb.Postgres)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type proc struct {
		p        *Pipeline
		store    *eventstore.Store
		observer *overlapCounter
		checker  *readModelChecker
		done     chan error
	}
	launch := func() *proc {
		s := eventstore.New(db)
		t.Cleanup(s.Close)
		o := &overlapCounter{}
		p := New(db, s, zap.NewNop(), o)
		p.AddReadModel(projections.NewContacts(db.Read))
		checker := &readModelChecker{db: db}
		p.AddInvalidator(checker)
		p.Share()
		pr := &proc{p: p, store: s, observer: o, checker: checker, done: make(chan error, 1)}
		go func() { pr.done <- p.Run(ctx) }()
		return pr
	}
	a, b := launch(), launch()
	if err := a.p.SetHeld(ctx, []string{"contacts"}); err != nil {
		t.Fatal(err)
	}
	appendAndWait := func(through *proc, from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			if err := appendContact(through.store, i); err != nil {
				t.Fatal(err)
			}
			// The contact's last position (Head may settle below it while a transaction of another
			// test on the server holds the horizon back).
			var last int64
			if err := db.Read.QueryRow(`SELECT MAX(position) FROM events WHERE stream_id = $1`, fmt.Sprintf("ct_%04d", i)).Scan(&last); err != nil {
				t.Fatal(err)
			}
			waitCtx, stop := context.WithTimeout(ctx, 30*time.Second)
			err := through.p.Tracker().WaitReadModels(waitCtx, last)
			stop()
			if err != nil {
				t.Fatalf("contact %d: waiting through a process that does not run contacts: %v", i, err)
			}
			var n int
			if err := db.Read.QueryRow(`SELECT count(*) FROM contacts WHERE id = $1`, fmt.Sprintf("ct_%04d", i)).Scan(&n); err != nil || n != 1 {
				t.Fatalf("contact %d: the wait returned before the read model had it (%d rows, %v)", i, n, err)
			}
		}
	}
	started := time.Now()
	appendAndWait(b, 0, 20) // b appends, a projects
	t.Logf("20 writes through the process without the projection: %s", time.Since(started))
	if b.checker.batches == 0 {
		t.Error("the process without the projection invalidated no batch")
	}

	// The projection moves to b, from its checkpoint.
	if err := a.p.SetHeld(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.p.SetHeld(ctx, []string{"contacts"}); err != nil {
		t.Fatal(err)
	}
	appendAndWait(a, 20, 20) // a appends, b projects

	if got := strings.Count(dump(t, db), "\n"); got != 40 {
		t.Errorf("%d contacts, want 40", got)
	}
	for name, pr := range map[string]*proc{"a": a, "b": b} {
		if n := pr.observer.overlaps.Load(); n != 0 {
			t.Errorf("%s found %d batches applied by the other", name, n)
		}
		if len(pr.checker.early) > 0 {
			t.Errorf("%s invalidated its caches before the read model had the batch: %v", name, pr.checker.early)
		}
	}
	cancel()
	for _, pr := range []*proc{a, b} {
		if err := <-pr.done; err != nil {
			t.Fatal(err)
		}
	}
}
