package eventstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/eventstore/eventstoretest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// DESIGN.md invariant 4 under load: two processes (two stores, each on its own pool) append at
// once, while other transactions take positions in the middle of the log and hold them open,
// then commit late or roll back; two live readers, one per process, read the log as the relay
// does. Each reader reads every committed event exactly once, in position order: none skipped
// (a late commit below what it read), none repeated, none rolled back.
func TestLiveReadersSeeEveryCommitOnceWhileAppendsCommitSideBySide(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		url := sqldbtest.URL(t, dialect)
		var stores []*eventstore.Store
		var dbs []*sqldb.DB
		for range 2 {
			db, err := sqldb.Open(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			if _, err := db.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			s := eventstore.New(db)
			t.Cleanup(s.Close)
			stores, dbs = append(stores, s), append(dbs, db)
		}

		const writers, appends, holders = 8, 30, 12
		var wg sync.WaitGroup
		errs := make(chan error, writers+holders)
		for w := range writers {
			wg.Go(func() {
				for i := range appends {
					stream := fmt.Sprintf("ct_%d_%d", w, i)
					if _, err := stores[(w+i)%2].Append(ctx, meta, domain.StreamAppend{StreamID: stream, ExpectedVersion: 0, Events: tagged(stream, 2)}); err != nil {
						errs <- fmt.Errorf("writer %d: %w", w, err)
						return
					}
				}
			})
		}
		// Transactions that take a position as an append does, write an event, and hold it open
		// while the writers commit past it: every other one then commits, the rest roll back.
		var late []string
		for h := range holders {
			id := fmt.Sprintf("held_%d", h)
			if h%2 == 0 {
				late = append(late, id)
			}
			wg.Go(func() {
				time.Sleep(time.Duration(h) * 15 * time.Millisecond) // spread over the writers' run
				tx, err := dbs[h%2].Write.BeginTx(ctx, nil)
				if err != nil {
					errs <- err
					return
				}
				defer tx.Rollback()
				pos := eventstoretest.TakePosition(t, tx, dialect)
				if _, err := tx.ExecContext(ctx, `INSERT INTO events (position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, data, metadata)
					VALUES ($1, $2, $2, 1, 'TagApplied', 1, 0, 'acc_test', '{}', '{}')`, pos, id); err != nil {
					errs <- err
					return
				}
				time.Sleep(40 * time.Millisecond) // held open: on PostgreSQL the writers commit past it
				if h%2 == 0 {
					if err := tx.Commit(); err != nil {
						errs <- err
					}
				}
			})
		}

		want := writers*appends*2 + len(late)
		read := make([][]domain.Recorded, len(stores))
		var last atomic.Int64 // the last position of the log once every writer is done
		last.Store(-1)
		var readers sync.WaitGroup
		for r, s := range stores {
			readers.Go(func() {
				var pos int64
				for ctx.Err() == nil {
					if end := last.Load(); end >= 0 && pos >= end {
						return
					}
					events, err := s.ReadLog(ctx, pos, 50)
					if err != nil {
						errs <- fmt.Errorf("reader %d: %w", r, err)
						return
					}
					if len(events) == 0 {
						time.Sleep(time.Millisecond) // polling, as the relay between commits
						continue
					}
					read[r] = append(read[r], events...)
					pos = events[len(events)-1].Position
				}
			})
		}
		wg.Wait()
		var end int64
		if err := dbs[0].Read.QueryRowContext(ctx, `SELECT COALESCE(MAX(position), 0) FROM events`).Scan(&end); err != nil {
			t.Fatal(err)
		}
		last.Store(end)
		readers.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}

		var logged []string
		rows, err := dbs[0].Read.QueryContext(ctx, `SELECT event_id FROM events ORDER BY position`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			logged = append(logged, id)
		}
		rows.Close()
		if len(logged) != want {
			t.Fatalf("the log holds %d events, want %d", len(logged), want)
		}
		for r, events := range read {
			ids := make([]string, len(events))
			for i, e := range events {
				ids[i] = e.ID
				if i > 0 && e.Position <= events[i-1].Position {
					t.Fatalf("reader %d read position %d after %d", r, e.Position, events[i-1].Position)
				}
			}
			if !slices.Equal(ids, logged) {
				t.Fatalf("reader %d read %d events, not the %d the log holds, in its order", r, len(ids), len(logged))
			}
			for _, id := range late {
				if !slices.Contains(ids, id) {
					t.Fatalf("reader %d skipped %s, committed late below what it had read", r, id)
				}
			}
		}
	})
}
