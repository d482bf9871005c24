package eventstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// InlineProjection is a read model that the store applies inside the transaction that appends its
// events, moving its checkpoint there too (an inline projection, as Marten calls it): once an
// append is answered, the read model shows it, without waiting for the relay. The contacts and
// leads a write creates are read back at once by its client; the relay applies the others.
//
// How DESIGN.md's invariants hold:
//   - one global order, nothing skipped: every append transaction holds the head lock, locks the
//     inline checkpoints, and, should one be behind the head (a process that appended without
//     this projection, a checkpoint from before it was inline, a database restored), first applies
//     the log from that checkpoint to the head inside the same transaction. So the projection sees
//     every event once, in position order, whichever process appended it;
//   - idempotent checkpoints and crash safety: the events, the read-model change and the
//     checkpoint commit together, synchronously; a crash keeps all three or none;
//   - rebuilds: the rebuild's swap locks the projection's checkpoint, which an append locks too,
//     so the two take turns: the swap catches up to the checkpoint, and an append after it sees
//     the swapped-in rows;
//   - the price: a projection that fails fails the append it rides with (the write answers an
//     error and nothing is written), and its statements lengthen the time the head lock is held.
type InlineProjection interface {
	// Name identifies the projection's checkpoint.
	Name() string
	// Handles tells whether ApplyIn does anything with events of a type.
	Handles(eventType string) bool
	// ApplyIn applies events, in position order, through tx.
	ApplyIn(ctx context.Context, tx sqldb.Applier, events []domain.Recorded) error
}

// SetInline makes ps the store's inline projections; call it before the first append. They are
// then no read models of the relay's: nothing else may apply them.
func (s *Store) SetInline(ps ...InlineProjection) { s.inline = ps }

// InlineHandles tells whether an inline projection applies events of a type.
func (s *Store) InlineHandles(eventType string) bool {
	for _, p := range s.inline {
		if p.Handles(eventType) {
			return true
		}
	}
	return false
}

// CatchUpInline brings the inline projections up to the head of the log, as the next append
// would: at start, so that reads are current before this process has written anything.
func (s *Store) CatchUpInline(ctx context.Context) error {
	if len(s.inline) == 0 {
		return nil
	}
	if _, err := s.commitTx(ctx, nil); err != nil {
		return err
	}
	head, err := s.Head(ctx)
	if err != nil {
		return err
	}
	s.reportInline(head)
	return nil
}

// InlineObserver is an Observer that is also told how far the inline projections are (metrics,
// as the relay's projections report it).
type InlineObserver interface {
	Applied(projection string, position int64, lastOccurred time.Time)
}

// reportInline tells an InlineObserver the position a committed batch moved the inline
// projections to.
func (s *Store) reportInline(pos int64) {
	o, ok := s.observer.(InlineObserver)
	if !ok {
		return
	}
	now := s.now()
	for _, p := range s.inline {
		o.Applied(p.Name(), pos, now)
	}
}

func (s *Store) inlineNames() []string {
	names := make([]string, len(s.inline))
	for i, p := range s.inline {
		names[i] = p.Name()
	}
	return names
}

// catchUpInline applies the log between each inline projection's checkpoint and the head, which
// is locked, and moves the checkpoints to the head. Nothing is read when all are there already.
func (s *Store) catchUpInline(ctx context.Context, tx appendTx, head int64, checkpoints map[string]int64) error {
	from := head
	for _, p := range s.inline {
		from = min(from, checkpoints[p.Name()])
	}
	if from == head {
		return nil
	}
	for pos := from; pos < head; {
		events, err := tx.readLog(ctx, pos, catchUpChunk)
		if err != nil {
			return err
		}
		if len(events) == 0 {
			return fmt.Errorf("eventstore: the log ends at %d, before its head %d", pos, head)
		}
		for _, p := range s.inline {
			if err := applyTo(ctx, tx, p, domain.After(events, checkpoints[p.Name()])); err != nil {
				return err
			}
		}
		pos = events[len(events)-1].Position
	}
	return moveCheckpoints(ctx, tx, s.inlineNames(), head)
}

// catchUpChunk is how many events of the log a catch-up reads at a time.
const catchUpChunk = 1000

// applyInline applies the rows an append writes to every inline projection and moves their
// checkpoints to newHead, the append's last position.
func (s *Store) applyInline(ctx context.Context, tx appendTx, rows []*row, newHead int64) error {
	if len(s.inline) == 0 || len(rows) == 0 {
		return nil
	}
	events := make([]domain.Recorded, len(rows))
	for i, r := range rows {
		events[i] = r.recorded()
	}
	for _, p := range s.inline {
		if err := applyTo(ctx, tx, p, events); err != nil {
			return err
		}
	}
	return moveCheckpoints(ctx, tx, s.inlineNames(), newHead)
}

// applyTo gives p the events of a batch it handles, if any.
func applyTo(ctx context.Context, tx appendTx, p InlineProjection, events []domain.Recorded) error {
	var mine []domain.Recorded
	for _, e := range events {
		if p.Handles(e.Type) {
			mine = append(mine, e)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	if err := p.ApplyIn(ctx, tx, mine); err != nil {
		return fmt.Errorf("eventstore: inline projection %s: %w", p.Name(), err)
	}
	return nil
}

// moveCheckpoints moves the checkpoints of names to pos, in one statement: it rides every append.
func moveCheckpoints(ctx context.Context, tx appendTx, names []string, pos int64) error {
	if len(names) == 0 {
		return nil
	}
	now := time.Now().UnixMilli()
	values := make([]string, len(names))
	args := []any{pos, now}
	for i, name := range names {
		values[i] = fmt.Sprintf("($%d, $1, $2)", i+3)
		args = append(args, name)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO projection_checkpoints (name, position, updated_at) VALUES `+strings.Join(values, ", ")+`
		ON CONFLICT (name) DO UPDATE SET position = excluded.position, updated_at = excluded.updated_at`, args...); err != nil {
		return fmt.Errorf("eventstore: move checkpoints of %s: %w", strings.Join(names, ", "), err)
	}
	return nil
}

// recorded is the row as a reader of the log gets it.
func (r *row) recorded() domain.Recorded {
	return domain.Recorded{
		Position: r.position, ID: r.eventID, StreamID: r.streamID, Version: r.version, Type: r.eventType,
		SchemaVersion: r.schemaVersion, OccurredAt: time.UnixMilli(r.occurredAt).UTC(),
		Data: json.RawMessage(r.data), Metadata: *r.meta,
	}
}
