package pipeline

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// Rebuild replays the log, as far as it reached at the start, into fresh copies of a projection's
// tables, then swaps them in: one transaction locks the projection's checkpoint, brings the copies
// up to it, replaces the live rows with the rebuilt ones, and moves the checkpoint. Readers see the old read model until that commits and the new one
// after. The projection's live handler, in this process or another, finds its checkpoint moved
// and goes on from there. progress is told how far the replay got.
//
// On SQLite the copies live on db's one write connection, which the rebuild holds from start to
// end, in temporary files rather than the memory where that connection otherwise keeps its
// temporary storage (sqldb.TempStoreOnDisk): run it from a process of its own (`funnel
// projections rebuild`), whose replay transactions then interleave with the service's writes;
// only the swap holds the write lock for long, so a large read model is best rebuilt while the
// service is stopped.
func Rebuild(ctx context.Context, db *sqldb.DB, log RebuildLog, p Rebuildable, progress func(pos, head int64)) (int64, error) {
	name := p.Name()
	// The copies are temporary tables of one connection: both databases look there first, so the
	// projection's own SQL writes them while every other connection keeps reading the live ones.
	conn, err := db.Write.Conn(ctx)
	if err != nil {
		return 0, fmt.Errorf("pipeline: rebuild %s: %w", name, err)
	}
	defer conn.Close()
	// On SQLite the write connection keeps temporary storage in memory (sqldb.TempStoreOnDisk);
	// the copies are as large as the read model, and so is the swap's statement journal: on disk,
	// a rebuild's memory stays bounded. The switch deletes the connection's temporary tables, so
	// it comes before the copies are created, and the way back (deferred before dropCopies, so
	// run after it) once they are dropped. Should it fail, the connection only stays on disk.
	restoreTempStore, err := db.TempStoreOnDisk(ctx, conn)
	if err != nil {
		return 0, fmt.Errorf("pipeline: rebuild %s: %w", name, err)
	}
	defer func() { _ = restoreTempStore() }()
	defer dropCopies(conn, db.Dialect, p.Tables())
	if err := db.ForgetStatements(ctx, conn); err != nil {
		return 0, fmt.Errorf("pipeline: rebuild %s: %w", name, err)
	}
	live, err := liveSchema(ctx, conn, db.Dialect)
	if err != nil {
		return 0, fmt.Errorf("pipeline: rebuild %s: %w", name, err)
	}
	for _, table := range p.Tables() {
		if err := createCopy(ctx, conn, db.Dialect, live, table); err != nil {
			return 0, fmt.Errorf("pipeline: rebuild %s: copy of %s: %w", name, table, err)
		}
	}

	// The replay goes as far as the log was at the start: with writes going on, chasing the end
	// of the log might never finish. The swap brings the copies the rest of the way.
	head, err := log.Head(ctx)
	if err != nil {
		return 0, err
	}
	pos, err := replayWindows(ctx, conn, log, p, head, progress)
	if err != nil {
		return 0, fmt.Errorf("pipeline: rebuild %s: %w", name, err)
	}
	return swap(ctx, conn, db, log, p, live, pos)
}

// RebuildLog is the log as a rebuild reads it: in windows of positions, then as the relay does
// for the last stretch.
type RebuildLog interface {
	LogReader
	// ReadRange returns the events of some types with positions in (after, upto], upto being at
	// most the head, in position order.
	ReadRange(ctx context.Context, after, upto int64, types []string) ([]domain.Recorded, error)
	// ReadRangeSealed is ReadRange with the personal values still sealed.
	ReadRangeSealed(ctx context.Context, after, upto int64, types []string) ([]domain.Recorded, error)
	// OpenPersonal puts the sealed personal values of events back in their data, in place.
	OpenPersonal(ctx context.Context, events []domain.Recorded) error
	// ReadLogIn returns up to limit events after a position, in position order, read inside tx,
	// which no append runs beside (it holds sqldb.InlineLock exclusively, or SQLite's write lock).
	ReadLogIn(ctx context.Context, tx *sql.Tx, after int64, limit int) ([]domain.Recorded, error)
}

// rebuildWindow is how many log positions a rebuild reads, decodes and writes at a time, each
// window in a transaction of its own on the copies: large enough that the events of one row
// mostly fold into one write and that a commit is paid per thousands of events, small enough to
// bound what the rebuild holds in memory (three windows at most, whatever the log's length) and how
// long it holds SQLite's write lock at a time. A variable so that tests can make windows small.
var rebuildWindow int64 = 8192

// window is a stretch of the log, read and decoded: the projection's events with positions up to
// upto.
type window struct {
	events  []domain.Recorded
	decoded []domain.Event
	upto    int64
}

// replayWindows applies the log up to head to the copies on conn, a window at a time, and returns
// how far it got. It is a pipeline of three goroutines: one reads the next windows from the
// database, one opens their sealed personal values and decodes them, and this one writes them, so
// that the database's work, the opening and decoding, and the writing overlap. Opening was the
// reader's until it made the reader the slowest stage (BenchmarkRebuild on SQLite: 113k events/s
// with it there, 144k here).
func replayWindows(ctx context.Context, conn *sql.Conn, log RebuildLog, p Rebuildable, head int64, progress func(pos, head int64)) (int64, error) {
	g, ctx := errgroup.WithContext(ctx)
	// Unbuffered: at most three windows in memory, one in each stage.
	read, decoded := make(chan window), make(chan window)
	g.Go(func() error { return readWindows(ctx, log, p.EventTypes(), head, read) })
	g.Go(func() error { return decodeWindows(ctx, log, read, decoded) })
	var pos int64
	g.Go(func() error {
		for w := range decoded {
			if err := applyWindow(ctx, conn, p, w); err != nil {
				return fmt.Errorf("replay after %d: %w", pos, err)
			}
			pos = w.upto
			if progress != nil {
				progress(pos, head)
			}
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return 0, err
	}
	return pos, nil
}

// readWindows reads the log up to head in windows of rebuildWindow positions and hands them on,
// until the end or ctx's cancel; it closes out when it returns.
func readWindows(ctx context.Context, log RebuildLog, types []string, head int64, out chan<- window) error {
	defer close(out)
	for after := int64(0); after < head; {
		upto := min(after+rebuildWindow, head)
		events, err := log.ReadRangeSealed(ctx, after, upto, types)
		if err != nil {
			return err
		}
		select {
		case out <- window{events: events, upto: upto}:
		case <-ctx.Done():
			return ctx.Err()
		}
		after = upto
	}
	return nil
}

// decodeWindows opens the sealed personal values of the windows it is given, decodes their
// events and hands them on; it closes out when it returns. On ctx's cancel it drains in, so that
// the reader never waits for it.
func decodeWindows(ctx context.Context, log RebuildLog, in <-chan window, out chan<- window) error {
	defer close(out)
	for w := range in {
		if ctx.Err() != nil {
			continue
		}
		if err := log.OpenPersonal(ctx, w.events); err != nil {
			return fmt.Errorf("open the window up to %d: %w", w.upto, err)
		}
		w.decoded = make([]domain.Event, len(w.events))
		for i, r := range w.events {
			var err error
			if w.decoded[i], err = r.Decode(); err != nil {
				return fmt.Errorf("decode %s at %d: %w", r.Type, r.Position, err)
			}
		}
		select {
		case out <- w:
		case <-ctx.Done():
		}
	}
	return ctx.Err()
}

// applyWindow applies a window's events to the copies in a transaction of its own.
func applyWindow(ctx context.Context, conn *sql.Conn, p Rebuildable, w window) error {
	if len(w.events) == 0 {
		return nil
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := p.ApplyDecoded(ctx, tx, w.events, w.decoded); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// swap catches the copies up with the live read model and replaces the live rows with them, in one
// transaction that holds the projection's checkpoint, so that its live handler waits meanwhile.
// The live rows of a relayed projection reflect the log up to that checkpoint exactly, so the
// copies need go no further: the live handler applies what comes after, as it would have anyway.
// Those of an inline projection reflect every committed append (infra/eventstore/inline.go): the
// swap holds sqldb.InlineLock exclusively (on SQLite, the write lock), so that no append runs
// while it brings the copies to the end of the log and swaps them in, and the appends after it
// write to the swapped-in rows.
func swap(ctx context.Context, conn *sql.Conn, db *sqldb.DB, log RebuildLog, p Rebuildable, live string, pos int64) (int64, error) {
	name := p.Name()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("pipeline: rebuild %s: swap: %w", name, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO projection_checkpoints (name, position, updated_at) VALUES ($1, 0, $2) ON CONFLICT (name) DO NOTHING`, name, time.Now().UnixMilli()); err != nil {
		return 0, fmt.Errorf("pipeline: rebuild %s: checkpoint: %w", name, err)
	}
	var inline int
	if err := tx.QueryRowContext(ctx, `SELECT inline FROM projection_checkpoints WHERE name = $1`, name).Scan(&inline); err != nil {
		return 0, fmt.Errorf("pipeline: rebuild %s: checkpoint: %w", name, err)
	}
	// The lock before the checkpoint's row, in the order the inline catch-up takes them.
	if inline == 1 && db.Dialect == sqldb.Postgres {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, sqldb.InlineLock); err != nil {
			return 0, fmt.Errorf("pipeline: rebuild %s: stop appends: %w", name, err)
		}
	}
	var current int64
	if err := tx.QueryRowContext(ctx, `SELECT position FROM projection_checkpoints WHERE name = $1`+db.ForUpdate(), name).Scan(&current); err != nil {
		return 0, fmt.Errorf("pipeline: rebuild %s: lock checkpoint: %w", name, err)
	}
	// A relayed projection's checkpoint was reached by reading the log through it: every position
	// up to it is settled, so the copies read the stretch up to it as it stands, a window at a
	// time (not through ReadLog, whose horizon this very transaction holds back on PostgreSQL).
	read := func(after int64) ([]domain.Recorded, int64, error) {
		upto := min(after+rebuildWindow, current)
		events, err := log.ReadRange(ctx, after, upto, p.EventTypes())
		return events, upto, err
	}
	target := current
	if inline == 1 {
		// No append runs: every event is committed and this transaction sees them all, also those
		// of transactions younger than its own, which ReadLog would keep back.
		read = func(after int64) ([]domain.Recorded, int64, error) {
			events, err := log.ReadLogIn(ctx, tx, after, catchUpChunk)
			if err != nil || len(events) == 0 {
				return nil, target, err // the rest of the log is gaps
			}
			return events, events[len(events)-1].Position, nil
		}
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(position), 0) FROM events`).Scan(&target); err != nil {
			return 0, fmt.Errorf("pipeline: rebuild %s: end of the log: %w", name, err)
		}
	}
	for pos < target {
		batch, through, err := read(pos)
		if err == nil && len(batch) > 0 {
			err = p.Apply(ctx, tx, batch)
		}
		if err != nil {
			return 0, fmt.Errorf("pipeline: rebuild %s: catch up after %d: %w", name, pos, err)
		}
		pos = through
	}
	for _, table := range p.Tables() {
		if _, err := replaceRows(ctx, tx, db.Dialect, live, table); err != nil {
			return 0, fmt.Errorf("pipeline: rebuild %s: %w", name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE projection_checkpoints SET position = $1, updated_at = $2 WHERE name = $3`, max(pos, target), time.Now().UnixMilli(), name); err != nil {
		return 0, fmt.Errorf("pipeline: rebuild %s: move checkpoint: %w", name, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("pipeline: rebuild %s: swap: %w", name, err)
	}
	return max(pos, target), nil
}

// liveSchema names, quoted for SQL, the schema of the live tables; unqualified names find the
// temporary copies first.
func liveSchema(ctx context.Context, conn *sql.Conn, dialect sqldb.Dialect) (string, error) {
	if dialect == sqldb.SQLite {
		return "main", nil
	}
	var schema string
	if err := conn.QueryRowContext(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return "", err
	}
	return pgx.Identifier{schema}.Sanitize(), nil
}

// createCopy creates an empty temporary table shaped like a live one, with its keys and indexes:
// the projection's upserts need the same unique constraints.
func createCopy(ctx context.Context, conn *sql.Conn, dialect sqldb.Dialect, live, table string) error {
	if dialect == sqldb.Postgres {
		_, err := conn.ExecContext(ctx, fmt.Sprintf(`CREATE TEMP TABLE %s (LIKE %s.%s INCLUDING ALL)`, table, live, table))
		return err
	}
	rows, err := conn.QueryContext(ctx, `SELECT type, name, sql FROM main.sqlite_master WHERE tbl_name = $1 AND sql IS NOT NULL ORDER BY type = 'index'`, table)
	if err != nil {
		return err
	}
	var ddl []string
	for rows.Next() {
		var typ, objName, stmt string
		if err := rows.Scan(&typ, &objName, &stmt); err != nil {
			rows.Close()
			return err
		}
		// SQLite keeps each CREATE statement as the migration wrote it.
		if typ == "table" {
			stmt = strings.Replace(stmt, "CREATE TABLE "+table, "CREATE TEMP TABLE "+table, 1)
		} else {
			stmt = strings.Replace(stmt, " INDEX "+objName, " INDEX temp."+objName, 1)
		}
		ddl = append(ddl, stmt)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if len(ddl) == 0 {
		return fmt.Errorf("no table %s", table)
	}
	for _, stmt := range ddl {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

// dropCopies drops the temporary tables, so that the pooled connection carries nothing on. A
// connection whose copies could not be dropped is thrown away instead: back in the pool, its
// copies would shadow the live tables for whatever runs on it next.
func dropCopies(conn *sql.Conn, dialect sqldb.Dialect, tables []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	temp := "temp"
	if dialect == sqldb.Postgres {
		temp = "pg_temp"
	}
	for _, table := range tables {
		if _, err := conn.ExecContext(ctx, `DROP TABLE IF EXISTS `+temp+`.`+table); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			return
		}
	}
}
