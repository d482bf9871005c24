package pipeline

import (
	"context"
	"database/sql"
	"testing"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// onceProjection writes one row per event, keyed by its position: applying an event twice fails.
type onceProjection struct{}

func (onceProjection) Name() string        { return "once" }
func (onceProjection) Handles(string) bool { return true }

func (p onceProjection) Apply(ctx context.Context, tx *sql.Tx, batch []domain.Recorded) error {
	return p.ApplyIn(ctx, sqldb.ApplierOf(tx), batch)
}

func (onceProjection) ApplyIn(ctx context.Context, tx sqldb.Applier, batch []domain.Recorded) error {
	for _, r := range batch {
		if _, err := tx.ExecContext(ctx, `INSERT INTO applied_once (position) VALUES ($1)`, r.Position); err != nil {
			return err
		}
	}
	return nil
}

// A projector whose checkpoint another process moved meanwhile (it applied the first part of the
// batch) applies only the rest, once, and says it found part of it applied elsewhere. On
// PostgreSQL the projector first tries its pipelined transaction, whose checkpoint move then
// aborts it; the test fails if that transaction applies the batch whole (a duplicate row) or
// commits nothing at all.
func TestProjectorAppliesWhatAnotherProcessLeft(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		db := sqldbtest.Open(t, dialect)
		ctx := context.Background()
		if _, err := db.Write.ExecContext(ctx, `CREATE TABLE applied_once (position BIGINT PRIMARY KEY)`); err != nil {
			t.Fatal(err)
		}
		s := eventstore.New(db)
		t.Cleanup(s.Close)
		appendContacts(t, s, 0, 3)
		events, err := s.ReadLog(ctx, 0, 100)
		if err != nil || len(events) != 9 {
			t.Fatalf("read %d events (%v), want 9", len(events), err)
		}
		launch := func() (*projector, *overlapCounter) {
			o := &overlapCounter{}
			p := &projector{projection: onceProjection{}, db: db, log: s, tracker: newTracker(), observer: o}
			if _, err := p.checkpoint(ctx); err != nil {
				t.Fatal(err)
			}
			return p, o
		}
		mine, seen := launch()
		other, _ := launch()
		if err := other.apply(ctx, 0, events[:4]); err != nil {
			t.Fatal(err)
		}
		if err := mine.apply(ctx, 0, events); err != nil {
			t.Fatalf("applying after another process: %v", err)
		}
		var rows int
		if err := db.Read.QueryRow(`SELECT COUNT(*) FROM applied_once`).Scan(&rows); err != nil || rows != 9 {
			t.Errorf("%d events applied (%v), want each of the 9 once", rows, err)
		}
		last := events[len(events)-1].Position
		if got := checkpoint(t, db, "once"); got != last {
			t.Errorf("checkpoint at %d, want %d", got, last)
		}
		if n := seen.overlaps.Load(); n != 1 {
			t.Errorf("%d batches found applied elsewhere, want 1", n)
		}

		// And on from there, the usual way: the next batch follows the checkpoint it stored.
		appendContacts(t, s, 3, 1)
		more, err := s.ReadLog(ctx, last, 100)
		if err != nil || len(more) != 3 {
			t.Fatalf("read %d events (%v), want 3", len(more), err)
		}
		if err := mine.apply(ctx, last, more); err != nil {
			t.Fatal(err)
		}
		if err := db.Read.QueryRow(`SELECT COUNT(*) FROM applied_once`).Scan(&rows); err != nil || rows != 12 {
			t.Errorf("%d events applied (%v), want 12", rows, err)
		}
		if got := checkpoint(t, db, "once"); got != more[len(more)-1].Position {
			t.Errorf("checkpoint at %d, want %d", got, more[len(more)-1].Position)
		}
		if n := seen.overlaps.Load(); n != 1 {
			t.Errorf("%d batches found applied elsewhere, want still 1", n)
		}
	})
}
