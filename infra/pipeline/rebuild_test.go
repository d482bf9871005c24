package pipeline

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/eventstore/eventstoretest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
	"github.com/funnelhq/funnel/projections"
)

// A connection of the pool may have served an earlier rebuild and then prepared the projection's
// statements: PostgreSQL then keeps them planned against the live tables even once a temporary
// table shadows them. The rebuild must still write its copies, not the live read model, and swap
// in the same rows.
func TestRebuildOnAConnectionThatPreparedTheProjection(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, d)
		s := eventstore.New(db)
		defer s.Close()
		appendContacts(t, s, 0, 50)
		start(t, db, s).stop()
		before := dump(t, db)

		// Two connections at most (the rebuild holds one; on PostgreSQL its log reads need
		// another), and both have hosted a temporary table, then run the projection's statements
		// for the rebuild's first chunk.
		if d == sqldb.Postgres {
			db.Write.SetMaxOpenConns(2)
		}
		contacts := projections.NewContacts(db.Read)
		batch, err := s.ReadLog(ctx, 0, catchUpChunk)
		if err != nil {
			t.Fatal(err)
		}
		var conns []*sql.Conn
		for range db.Write.Stats().MaxOpenConnections {
			conn, err := db.Write.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, conn)
			// A temporary table and its schema outlive the table, as after a rebuild.
			if _, err := conn.ExecContext(ctx, `CREATE TEMP TABLE earlier_rebuild (x int)`); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.ExecContext(ctx, `DROP TABLE earlier_rebuild`); err != nil {
				t.Fatal(err)
			}
			tx, err := conn.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := contacts.Apply(ctx, tx, batch); err != nil {
				t.Fatal(err)
			}
			tx.Rollback()
		}
		for _, conn := range conns {
			conn.Close()
		}

		pos, err := Rebuild(ctx, db, s, contacts, nil)
		if err != nil {
			t.Fatal(err)
		}
		if pos != 150 {
			t.Fatalf("rebuilt up to %d, want 150", pos)
		}
		if after := dump(t, db); after != before {
			t.Fatalf("the rebuilt read model differs:\nbefore\n%s\nafter\n%s", before, after)
		}
	})
}

// A rebuild while the service writes, run as `funnel projections rebuild` runs it: from a
// process of its own (here a second handle on the database), so that on SQLite too its replay
// interleaves with the service's appends: between every two replay chunks a write is made for
// sure, besides those of a writer that never stops. Readers keep seeing the old read model (never
// fewer contacts than before) until the swap, the live projection goes on after it, and in the
// end every contact is there exactly as written.
func TestRebuildWhileWritesGoOn(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		url := sqldbtest.URL(t, d)
		db, operator := openMigrated(t, url), openMigrated(t, url)
		s := eventstore.New(db)
		defer s.Close()
		operatorLog := eventstore.New(operator)
		defer operatorLog.Close()
		defer func(w int64) { rebuildWindow = w }(rebuildWindow)
		rebuildWindow = 1000
		appendContacts(t, s, 0, 700) // 2,100 events: three replay windows
		r := start(t, db, s)
		defer r.stop()

		var stop atomic.Bool
		var wg sync.WaitGroup
		failures := make(chan error, 2)
		var written atomic.Int64 // contacts appended so far
		written.Store(700)
		wg.Go(func() {
			for ; !stop.Load(); written.Add(1) {
				if err := appendContact(s, int(written.Load())); err != nil {
					failures <- err
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
		wg.Go(func() {
			last := 0
			for !stop.Load() {
				var n int
				if err := db.Read.QueryRow(`SELECT COUNT(*) FROM contacts`).Scan(&n); err != nil {
					failures <- err
					return
				}
				if n < last {
					failures <- fmt.Errorf("a reader saw the contacts go from %d to %d", last, n)
					return
				}
				last = n
			}
		})

		// Three contacts appended by the rebuild's progress callback, after its first three chunks
		// (each is in the log the replay reads next: a write per chunk for ever would never end).
		var midRebuild int64
		if _, err := Rebuild(ctx, operator, operatorLog, projections.NewContacts(operator.Read), func(int64, int64) {
			if midRebuild == 3 {
				return
			}
			if err := appendContact(s, 1_000_000+int(midRebuild)); err != nil {
				t.Error(err)
			}
			midRebuild++
		}); err != nil {
			t.Fatal(err)
		}
		// Writes go on after the swap too: twenty more (unless a writer or reader failed).
		for swapped := written.Load(); written.Load() < swapped+20 && len(failures) == 0; {
			time.Sleep(time.Millisecond)
		}
		stop.Store(true)
		wg.Wait()
		select {
		case err := <-failures:
			t.Fatal(err)
		default:
		}

		head, err := s.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.p.Tracker().WaitReadModels(ctx, head); err != nil {
			t.Fatal(err)
		}
		var total, complete int
		db.Read.QueryRow(`SELECT COUNT(*) FROM contacts`).Scan(&total)
		db.Read.QueryRow(`SELECT COUNT(*) FROM contacts WHERE tag_ids = '["tag_a","tag_b"]'`).Scan(&complete)
		if want := written.Load() + midRebuild; int64(total) != want || int64(complete) != want {
			t.Fatalf("%d contacts, %d with exactly their two tags, after writing %d", total, complete, want)
		}
		if got := checkpoint(t, db, "contacts"); got != head {
			t.Fatalf("checkpoint %d, log head %d", got, head)
		}
		if midRebuild < 3 {
			t.Fatalf("%d writes between replay chunks, want three", midRebuild)
		}
	})
}

func openMigrated(t *testing.T, url string) *sqldb.DB {
	t.Helper()
	db, err := sqldb.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db
}

// A rebuild reads the log in windows of positions and writes each window's rows in bulk: the
// read models it swaps in must equal, row for row and column for column, the ones the live
// projections built event by event, for contacts and leads, on a log where windows split
// contacts' streams and later events change rows of earlier windows (names, custom fields, tags
// removed, leads moved again).
func TestRebuiltReadModelsEqualTheLiveOnes(t *testing.T) {
	defer func(w int64) { rebuildWindow = w }(rebuildWindow)
	rebuildWindow = 1000 // about a dozen windows, none aligned with a contact
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, d)
		s := eventstore.New(db)
		defer s.Close()
		if _, err := eventstoretest.Generate(ctx, s, "acc_1", 0, 3001); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3001; i += 97 { // later changes of rows written windows earlier
			id, lead := fmt.Sprintf("ct_g%08d", i), fmt.Sprintf("ld_g%08d", i)
			name, empty := "Grace", ""
			appends := []domain.StreamAppend{{StreamID: id, ExpectedVersion: domain.AnyVersion, Events: []domain.Event{
				domain.TagRemoved{ContactID: id, TagID: "tag_a"},
				domain.ContactUpdated{ContactID: id, FirstName: &name, Phone: &empty, CustomFields: map[string]string{"cf_plan": "", "cf_seats": "3"}},
				domain.TagApplied{ContactID: id, TagID: "tag_c"},
			}}}
			if i%2 == 0 {
				appends = append(appends, domain.StreamAppend{StreamID: lead, ExpectedVersion: domain.AnyVersion, Events: []domain.Event{
					domain.LeadMoved{LeadID: lead, ContactID: id, CRMID: "crm_1", FromStageID: "st_won", ToStageID: "st_lost"},
				}})
			}
			if _, err := s.Append(ctx, meta, appends...); err != nil {
				t.Fatal(err)
			}
		}
		live := []Rebuildable{projections.NewContacts(db.Read), projections.NewLeads(db.Read)}
		startWith(t, db, s, live[0], live[1]).stop()
		before := map[string][]string{}
		for _, table := range []string{"contacts", "leads"} {
			before[table] = sqldbtest.Dump(t, db.Read, table, "id")
		}
		if len(before["contacts"]) != 3001 || len(before["leads"]) != 1501 {
			t.Fatalf("%d contacts and %d leads live, want 3001 and 1501", len(before["contacts"]), len(before["leads"]))
		}
		// A rebuild of an empty read model would swap in the rows as they are now: empty the
		// live tables first, so that only the rebuild can put the rows back.
		for _, table := range []string{"contacts", "leads"} {
			if _, err := db.Write.Exec(`DELETE FROM ` + table); err != nil {
				t.Fatal(err)
			}
		}
		head, err := s.Head(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range live {
			var windows int
			pos, err := Rebuild(ctx, db, s, p, func(int64, int64) { windows++ })
			if err != nil {
				t.Fatal(err)
			}
			if pos != head || windows < 10 {
				t.Fatalf("%s rebuilt up to %d in %d windows, want %d in a dozen", p.Name(), pos, windows, head)
			}
			if got := sqldbtest.Dump(t, db.Read, p.Tables()[0], "id"); !slices.Equal(got, before[p.Name()]) {
				t.Fatalf("rebuilt %s differs from the live one: %d rows, want %d;\nfirst rebuilt %q\nfirst live %q",
					p.Name(), len(got), len(before[p.Name()]), first(got), first(before[p.Name()]))
			}
		}
	})
}

func first(rows []string) string {
	if len(rows) == 0 {
		return ""
	}
	return rows[0]
}

// failingContacts is the contacts projection failing its rebuild at the window after a number.
type failingContacts struct {
	*projections.Contacts
	windows, failAt int
}

func (f *failingContacts) ApplyDecoded(ctx context.Context, tx *sql.Tx, events []domain.Recorded, decoded []domain.Event) error {
	if f.windows++; f.windows == f.failAt {
		return fmt.Errorf("window %d fails", f.windows)
	}
	return f.Contacts.ApplyDecoded(ctx, tx, events, decoded)
}

// A window that fails to apply stops the whole rebuild, its reading and decoding goroutines with
// it, with the error and without a swap: the live read model and its checkpoint stay as they were,
// and the connection goes back to its pool without its copies (a second rebuild works) and, on
// SQLite, with its temporary storage back in memory.
func TestRebuildStopsAtAFailingWindow(t *testing.T) {
	defer func(w int64) { rebuildWindow = w }(rebuildWindow)
	rebuildWindow = 300
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, d)
		s := eventstore.New(db)
		defer s.Close()
		appendContacts(t, s, 0, 500) // 1,500 events: five windows
		start(t, db, s).stop()
		before, at := dump(t, db), checkpoint(t, db, "contacts")

		done := make(chan error, 1)
		go func() {
			_, err := Rebuild(ctx, db, s, &failingContacts{Contacts: projections.NewContacts(db.Read), failAt: 3}, nil)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "window 3 fails") {
				t.Fatalf("rebuild: %v, want the third window's failure", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the rebuild hangs after a window failed")
		}
		if after := dump(t, db); after != before || checkpoint(t, db, "contacts") != at {
			t.Fatal("a failed rebuild changed the live read model or its checkpoint")
		}
		if d == sqldb.SQLite { // its temporary storage back in memory (TestRebuildKeepsItsCopiesOnDisk)
			var store int
			if err := db.Write.QueryRowContext(ctx, `PRAGMA temp_store`).Scan(&store); err != nil || store != 2 {
				t.Fatalf("after a failed rebuild the write connection has temp_store=%d (%v), want 2 (memory)", store, err)
			}
		}
		if pos, err := Rebuild(ctx, db, s, projections.NewContacts(db.Read), nil); err != nil || pos != at {
			t.Fatalf("a rebuild after the failed one: %d, %v; want %d", pos, err, at)
		}
		if after := dump(t, db); after != before {
			t.Fatal("the rebuilt read model differs")
		}
	})
}

// tempStoreWatcher is the contacts projection noting, on SQLite, in each replay window's
// transaction (on the rebuild's own connection) where the connection keeps temporary storage and
// whether the copy of contacts is there.
type tempStoreWatcher struct {
	*projections.Contacts
	sqlite bool
	seen   []string
}

func (w *tempStoreWatcher) ApplyDecoded(ctx context.Context, tx *sql.Tx, events []domain.Recorded, decoded []domain.Event) error {
	if w.sqlite {
		var store, copies int
		if err := tx.QueryRowContext(ctx, `PRAGMA temp_store`).Scan(&store); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM temp.sqlite_master WHERE type = 'table' AND name = 'contacts'`).Scan(&copies); err != nil {
			return err
		}
		w.seen = append(w.seen, fmt.Sprintf("temp_store=%d copies=%d", store, copies))
	}
	return w.Contacts.ApplyDecoded(ctx, tx, events, decoded)
}

// SQLite's write connection keeps temporary storage in memory (sqldb.TempStoreOnDisk), but a
// rebuild's copies are as large as the read model: they are on disk (temp_store=1) for the whole
// replay, and, since a change of temp_store deletes a connection's temporary tables, the copies
// there were created after the switch. Once the rebuild is over the connection has memory back
// and no copies. PostgreSQL has no such setting: there the rebuild only has to swap in the same
// rows.
func TestRebuildKeepsItsCopiesOnDisk(t *testing.T) {
	defer func(w int64) { rebuildWindow = w }(rebuildWindow)
	rebuildWindow = 300
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, d)
		s := eventstore.New(db)
		defer s.Close()
		appendContacts(t, s, 0, 500) // 1,500 events: five windows
		start(t, db, s).stop()
		before := dump(t, db)

		w := &tempStoreWatcher{Contacts: projections.NewContacts(db.Read), sqlite: d == sqldb.SQLite}
		if _, err := Rebuild(ctx, db, s, w, nil); err != nil {
			t.Fatal(err)
		}
		if after := dump(t, db); after != before {
			t.Fatalf("the rebuilt read model differs:\nbefore\n%s\nafter\n%s", before, after)
		}
		if d != sqldb.SQLite {
			return
		}
		if len(w.seen) != 5 {
			t.Fatalf("the replay saw %d windows, want 5: %v", len(w.seen), w.seen)
		}
		for _, seen := range w.seen {
			if seen != "temp_store=1 copies=1" {
				t.Fatalf("replay windows saw %v, want temp_store=1 (files) and the copy in every one", w.seen)
			}
		}
		var store, temps int
		if err := db.Write.QueryRowContext(ctx, `PRAGMA temp_store`).Scan(&store); err != nil {
			t.Fatal(err)
		}
		if err := db.Write.QueryRowContext(ctx, `SELECT COUNT(*) FROM temp.sqlite_master`).Scan(&temps); err != nil {
			t.Fatal(err)
		}
		if store != 2 || temps != 0 {
			t.Fatalf("after the rebuild the write connection has temp_store=%d and %d temporary objects, want 2 (memory) and none", store, temps)
		}
	})
}
