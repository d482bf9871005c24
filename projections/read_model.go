package projections

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// readModel is a projection declared once: its name, the tables of its read model, and one typed
// handler per event type it applies (see on). Embedded in a projection's struct, it gives the
// projection its Name, Tables, Handles and Apply.
//
// B is the projection's state while it applies one batch. A projection that writes each event as
// it comes has a writer (eachEvent); one that folds the batch in memory first and writes what it
// folded once at the end has a batch of its own (folded).
type readModel[B any] struct {
	name     string
	tables   []string
	dialect  sqldb.Dialect // of the database the projection reads and writes
	handlers map[string]func(b B, r domain.Recorded, e domain.Event) error
	begin    func(w writer) B
	flush    func(b B) error // nil when the handlers wrote everything
}

// handler applies the events of one type to a projection's batch state B.
type handler[B any] struct {
	eventType string
	apply     func(b B, r domain.Recorded, e domain.Event) error
}

// on declares the handler of the events of type E: fn gets each one decoded, as an E. fn's
// signature names E and B, so that a function or a method expression needs no type arguments:
// on(insertTag), on((*contactBatch).tagApplied).
func on[E domain.Event, B any](fn func(b B, r domain.Recorded, e E) error) handler[B] {
	var zero E
	return handler[B]{eventType: zero.EventType(), apply: func(b B, r domain.Recorded, e domain.Event) error {
		typed, ok := e.(E)
		if !ok {
			return fmt.Errorf("decoded as %T, not %T", e, zero)
		}
		return fn(b, r, typed)
	}}
}

// writer is where a batch is written: the transaction Apply (or ApplyIn) was given, with its
// context.
type writer struct {
	ctx     context.Context
	tx      sqldb.Applier
	dialect sqldb.Dialect
}

// exec runs one statement in the batch's transaction.
func (w writer) exec(query string, args ...any) error {
	_, err := w.tx.ExecContext(w.ctx, query, args...)
	return err
}

// insertRows writes rows into table with one multi-row INSERT per 100 rows, so that a burst of
// events costs a few statements instead of one per event. Each row holds a value per column;
// suffix follows the VALUES list (an ON CONFLICT clause, or "").
//
// On PostgreSQL, many rows go in one statement of column arrays instead (sqldb.InsertUnnest):
// a rebuild writes thousands a transaction.
func (w writer) insertRows(table string, columns []string, rows [][]any, suffix string) error {
	if w.dialect == sqldb.Postgres && len(rows) >= unnestRows {
		head := fmt.Sprintf("INSERT INTO %s (%s)", table, strings.Join(columns, ", "))
		done, err := sqldb.InsertUnnest(w.ctx, w.tx, head, suffix, rows)
		if err != nil {
			return fmt.Errorf("write %d rows into %s: %w", len(rows), table, err)
		}
		if done {
			return nil
		}
	}
	head := fmt.Sprintf("INSERT INTO %s (%s) VALUES ", table, strings.Join(columns, ", "))
	if err := sqldb.ExecRows(w.ctx, w.tx, w.dialect, head, " "+suffix, rows); err != nil {
		return fmt.Errorf("write %d rows into %s: %w", len(rows), table, err)
	}
	return nil
}

// unnestRows is the fewest rows insertRows writes as column arrays on PostgreSQL: below it the
// VALUES list the live projections have always used is as quick.
const unnestRows = 50

// batch is the state of a projection that folds a batch of events in memory before it writes.
type batch interface {
	// flush writes what the handlers folded, once, after the batch's last event.
	flush() error
}

// touchedRows are the rows a folding batch changed, by id, in the order it first touched them, so
// that its flush writes each once.
type touchedRows[R any] struct {
	byID  map[string]*R
	order []string
}

// add puts a new row in.
func (t *touchedRows[R]) add(id string, row *R) {
	if t.byID == nil {
		t.byID = map[string]*R{}
	}
	t.byID[id] = row
	t.order = append(t.order, id)
}

// get returns the row of an id, read with load the first time the batch touches it.
func (t *touchedRows[R]) get(id string, load func() (R, error)) (*R, error) {
	if row, ok := t.byID[id]; ok {
		return row, nil
	}
	row, err := load()
	if err != nil {
		return nil, err
	}
	t.add(id, &row)
	return &row, nil
}

// drop forgets a row the batch touched: its flush writes it no more.
func (t *touchedRows[R]) drop(id string) {
	if _, ok := t.byID[id]; !ok {
		return
	}
	delete(t.byID, id)
	t.order = slices.DeleteFunc(t.order, func(o string) bool { return o == id })
}

// inOrder returns the rows in the order they were first touched.
func (t *touchedRows[R]) inOrder() []*R {
	rows := make([]*R, len(t.order))
	for i, id := range t.order {
		rows[i] = t.byID[id]
	}
	return rows
}

// eachEvent declares a projection whose handlers write each event as it comes. db is the
// database it reads (its queries) and writes (through the transactions Apply gets).
func eachEvent(db *sql.DB, name string, tables []string, handlers ...handler[writer]) readModel[writer] {
	return declare(db, name, tables, func(w writer) writer { return w }, nil, handlers)
}

// folded declares a projection whose handlers fold a batch into the state begin makes for it,
// written by its flush: a burst of events on one row costs one write, or many new rows one
// multi-row insert.
func folded[B batch](db *sql.DB, name string, tables []string, begin func(w writer) B, handlers ...handler[B]) readModel[B] {
	return declare(db, name, tables, begin, func(b B) error { return b.flush() }, handlers)
}

func declare[B any](db *sql.DB, name string, tables []string, begin func(w writer) B, flush func(b B) error, handlers []handler[B]) readModel[B] {
	m := readModel[B]{name: name, tables: tables, dialect: sqldb.DialectOf(db), begin: begin, flush: flush,
		handlers: make(map[string]func(B, domain.Recorded, domain.Event) error, len(handlers))}
	for _, h := range handlers {
		if _, dup := m.handlers[h.eventType]; dup {
			panic("projections: " + name + " has two handlers of " + h.eventType)
		}
		m.handlers[h.eventType] = h.apply
	}
	return m
}

// Name identifies the projection's checkpoint.
func (m readModel[B]) Name() string { return m.name }

// Tables are the tables of the read model, which a rebuild replaces.
func (m readModel[B]) Tables() []string { return m.tables }

// Handles tells whether the projection applies events of a type.
func (m readModel[B]) Handles(eventType string) bool {
	_, ok := m.handlers[eventType]
	return ok
}

// EventTypes lists the types of the events the projection applies, in no particular order: a
// rebuild reads only those from the log.
func (m readModel[B]) EventTypes() []string {
	types := make([]string, 0, len(m.handlers))
	for t := range m.handlers {
		types = append(types, t)
	}
	return types
}

// Apply applies a batch of events, in position order, inside tx (ApplyIn).
func (m readModel[B]) Apply(ctx context.Context, tx *sql.Tx, events []domain.Recorded) error {
	return m.applyDecoded(ctx, sqldb.ApplierOf(tx), events, nil)
}

// ApplyIn applies a batch of events, in position order, through tx: it decodes each event of a
// type the projection handles and gives it to its handler, then flushes the batch. The event
// store calls it for an inline projection, inside the transaction that appends the events.
func (m readModel[B]) ApplyIn(ctx context.Context, tx sqldb.Applier, events []domain.Recorded) error {
	return m.applyDecoded(ctx, tx, events, nil)
}

// ApplyDecoded is Apply for events decoded already, decoded[i] being events[i] decoded (nil
// decoded: none is), so that a rebuild decodes the next window while this one is written.
func (m readModel[B]) ApplyDecoded(ctx context.Context, tx *sql.Tx, events []domain.Recorded, decoded []domain.Event) error {
	return m.applyDecoded(ctx, sqldb.ApplierOf(tx), events, decoded)
}

func (m readModel[B]) applyDecoded(ctx context.Context, tx sqldb.Applier, events []domain.Recorded, decoded []domain.Event) error {
	b := m.begin(writer{ctx: ctx, tx: tx, dialect: m.dialect})
	for i, r := range events {
		apply, ok := m.handlers[r.Type]
		if !ok {
			continue
		}
		var e domain.Event
		var err error
		if decoded != nil {
			e = decoded[i]
		} else {
			e, err = r.Decode()
		}
		if err == nil {
			err = apply(b, r, e)
		}
		if err != nil {
			return fmt.Errorf("projections: %s: %s at %d: %w", m.name, r.Type, r.Position, err)
		}
	}
	if m.flush == nil {
		return nil
	}
	if err := m.flush(b); err != nil {
		return fmt.Errorf("projections: %s: %w", m.name, err)
	}
	return nil
}
