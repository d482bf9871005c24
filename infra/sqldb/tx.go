package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// BeginDerivedTx starts a transaction of state derived from the log (read models and their
// checkpoints, the webhook outbox); call release once it is committed or rolled back. Such state
// is rebuilt from the log, and a read model's checkpoint commits with it, so a commit lost to a
// crash of the machine is simply applied again; a lost outbox update at worst sends a delivery
// again, with the same ids. These commits need not wait for the disk. On PostgreSQL their pool has synchronous_commit=off. On SQLite the transaction runs on the
// write connection, held for it, with synchronous=NORMAL; release puts FULL back, and appends set
// FULL themselves too (BeginAppendTx), so the log's commits always reach the disk. In WAL mode an
// fsync of a later commit carries the earlier unsynced ones with it. It also runs with its
// statement journals on disk (temp_store=FILE; release puts MEMORY back): a projection applies
// up to 500 events in a statement, and the memory of a large journal is kept by the driver's
// allocator once used, outside the Go heap (the appender's small groups keep theirs in memory;
// openSQLite).
func (db *DB) BeginDerivedTx(ctx context.Context) (*sql.Tx, func(), error) {
	if db.Dialect == Postgres {
		tx, err := db.Projections.BeginTx(ctx, nil)
		return tx, func() {}, err
	}
	return db.beginWithSync(ctx, "NORMAL")
}

// BeginAppendTx starts a transaction of the event log on SQLite, with synchronous=FULL: an append
// is answered only once it is on disk. Call release once it is committed or rolled back.
func (db *DB) BeginAppendTx(ctx context.Context) (*sql.Tx, func(), error) {
	return db.beginWithSync(ctx, "FULL")
}

// pragmasOf are the settings of the write connection for a transaction of each synchronous
// level. An append (FULL) sets its level itself, whatever ran before it, and keeps the
// connection's statement journals in memory; a transaction of derived state (NORMAL, in larger
// batches) journals on disk, and its release puts the connection's defaults back
// (connectionDefaults). Changing temp_store costs nothing while the connection has no temporary
// table (a rebuild's copies are made with it on disk, TempStoreOnDisk).
var pragmasOf = map[string]string{
	"FULL":   "PRAGMA synchronous = FULL",
	"NORMAL": "PRAGMA synchronous = NORMAL; PRAGMA temp_store = FILE",
}

// connectionDefaults are the write connection's settings as openSQLite opens it.
const connectionDefaults = "PRAGMA synchronous = FULL; PRAGMA temp_store = MEMORY"

func (db *DB) beginWithSync(ctx context.Context, level string) (*sql.Tx, func(), error) {
	conn, err := db.Write.Conn(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("sqldb: write connection: %w", err)
	}
	if _, err := conn.ExecContext(ctx, pragmasOf[level]); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("sqldb: synchronous %s: %w", level, err)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("sqldb: begin: %w", err)
	}
	return tx, func() {
		if level != "FULL" {
			// Back to the defaults of the connection before anyone else uses it.
			_, _ = conn.ExecContext(context.Background(), connectionDefaults)
		}
		conn.Close()
		if db.kept != nil { // what the transaction ran unprepared through DB.Applier
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			db.kept.prepareMissing(ctx)
		}
	}, nil
}

// ExecDerived runs one statement as a transaction of its own whose commit does not wait for the
// disk, like those of BeginDerivedTx (on PostgreSQL, one round trip on the Projections pool).
// Besides derived state, the Idempotency-Key cache writes this way: a claim it commits so is on
// disk as soon as any later synchronous commit is (the append the claim guards: PostgreSQL's WAL
// and SQLite's WAL both reach the disk in order), and a later write of the cache lost to a crash
// of the machine only leaves a request of unknown outcome, which the log tells.
func (db *DB) ExecDerived(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if db.Dialect == Postgres {
		return db.Projections.ExecContext(ctx, query, args...)
	}
	tx, release, err := db.BeginDerivedTx(ctx)
	if err != nil {
		return nil, err
	}
	stmt := InTx(ctx, tx, db.Write, query)
	defer func() {
		tx.Rollback()
		release()
		if stmt == nil {
			// Prepared once the write connection is free again: the driver would parse the
			// query anew every time (the Idempotency-Key's two writes of each request).
			Prepare(ctx, db.Write, query)
		}
	}()
	var res sql.Result
	if stmt != nil {
		res, err = stmt.ExecContext(ctx, args...)
	} else {
		res, err = tx.ExecContext(ctx, query, args...)
	}
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("sqldb: commit: %w", err)
	}
	return res, nil
}
