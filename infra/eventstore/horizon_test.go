package eventstore_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A transaction of another database of the same server, holding an id for as long as it likes
// (another application's batch job, a session left idle in a transaction, a CREATE DATABASE run
// from another database), holds no reader of this log back: another process reads the appends
// made after it began, and the log's head and an account's events show them. A transaction of
// this database does hold them back until it ends: it may still write an event below them.
// SQLite has one writer and no horizon.
func TestATransactionOfAnotherDatabaseHoldsNoReaderBack(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		if d == sqldb.SQLite {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		db := sqldbtest.Open(t, d)
		writer, reader := eventstore.New(db), eventstore.New(db) // two processes of one database
		t.Cleanup(func() { writer.Close(); reader.Close() })
		elsewhere := sqldbtest.Open(t, d) // another database of the server

		// holdAnID begins a transaction on conn that takes an id, and answers its rollback.
		holdAnID := func(conn *sql.DB) (end func()) {
			t.Helper()
			tx, err := conn.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, `SELECT pg_current_xact_id()`); err != nil {
				t.Fatal(err)
			}
			return func() {
				if err := tx.Rollback(); err != nil {
					t.Fatal(err)
				}
			}
		}
		// readable answers what the reader process reads after a position: the log, the head, and
		// the account's events.
		readable := func(after int64) (streams []string, head int64, accountEvents int) {
			t.Helper()
			log, err := reader.ReadLog(ctx, after, 10)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range log {
				streams = append(streams, e.StreamID)
			}
			if head, err = db.LogHead(ctx); err != nil {
				t.Fatal(err)
			}
			feed := eventstore.New(db) // a process that has read none of the log: its settled position is 0
			defer feed.Close()
			events, err := feed.ReadAccountEvents(ctx, eventstore.AccountEventsQuery{AccountID: meta.AccountID,
				Types: []string{"TagApplied"}, After: after, Since: time.Unix(0, 0), Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			return streams, head, len(events)
		}

		endElsewhere := holdAnID(elsewhere.Write)
		defer endElsewhere()
		first, err := writer.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_first", ExpectedVersion: 0, Events: tagged("ct_first", 1)})
		if err != nil {
			t.Fatal(err)
		}
		if streams, head, n := readable(0); len(streams) != 1 || streams[0] != "ct_first" || head != first || n != 1 {
			t.Fatalf("while another database's transaction is open: the log after 0 reads %v, head %d, %d account events; want ct_first, %d, 1",
				streams, head, n, first)
		}

		endHere := holdAnID(db.Write)
		second, err := writer.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_second", ExpectedVersion: 0, Events: tagged("ct_second", 1)})
		if err != nil {
			t.Fatal(err)
		}
		if streams, head, n := readable(first); len(streams) != 0 || head != first || n != 0 {
			t.Fatalf("while a transaction of this database began before it is open, the append at %d reads as %v, head %d, %d account events; want nothing, head %d",
				second, streams, head, n, first)
		}
		endHere()
		if streams, head, n := readable(first); len(streams) != 1 || streams[0] != "ct_second" || head != second || n != 1 {
			t.Fatalf("once this database's transaction ended: the log after %d reads %v, head %d, %d account events; want ct_second, %d, 1",
				first, streams, head, n, second)
		}
	})
}

// Read inside a transaction that has an id of its own, the horizon stays at or below that id,
// as pg_snapshot_xmin did: a snapshot lists every running transaction but its own, so with a
// later transaction still open and a still later one committed, the oldest one listed is above
// the transaction's own positions, still to commit. No reader of the log runs it so today; this
// keeps the rule whole for one that would.
func TestTheHorizonInATransactionStaysAtItsOwnID(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		if d == sqldb.SQLite {
			return
		}
		ctx := context.Background()
		db := sqldbtest.Open(t, d)
		s := eventstore.New(db)
		t.Cleanup(s.Close)
		begin := func() *sql.Tx {
			t.Helper()
			tx, err := db.Write.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { tx.Rollback() })
			if _, err := tx.ExecContext(ctx, `SELECT pg_current_xact_id()`); err != nil {
				t.Fatal(err)
			}
			return tx
		}
		own := begin()
		begin() // a later one, left open
		if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_later", ExpectedVersion: 0, Events: tagged("ct_later", 1)}); err != nil {
			t.Fatal(err)
		}
		var horizon, id string
		var atOrBelow bool
		if err := own.QueryRowContext(ctx, `SELECT h::text, pg_current_xact_id()::text, h <= pg_current_xact_id() FROM (SELECT `+sqldb.PGHorizon+` AS h) AS horizon`).
			Scan(&horizon, &id, &atOrBelow); err != nil {
			t.Fatal(err)
		}
		if !atOrBelow {
			t.Fatalf("inside transaction %s, with a later one open and another committed, the horizon is %s: above the transaction's own id", id, horizon)
		}
	})
}
