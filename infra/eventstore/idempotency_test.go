package eventstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// The log takes one append per idempotency id: the fence that keeps two attempts of one
// Idempotency-Key request from both performing it.

func TestOneAppendPerIdempotencyID(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		s, _ := newStore(t, dialect)
		ctx := context.Background()
		stamped := meta
		stamped.IdempotencyID = "idem_one"
		if found, err := s.HasIdempotencyID(ctx, "idem_one"); err != nil || found {
			t.Fatalf("HasIdempotencyID before any append = %v, %v", found, err)
		}
		// Several events of several streams in one append: the id stamps the append, not each event.
		pos, err := s.Append(ctx, stamped, domain.StreamAppend{StreamID: "ct_a", Events: tagged("ct_a", 3)}, domain.StreamAppend{StreamID: "ct_b", Events: tagged("ct_b", 1)})
		if err != nil || pos != 4 {
			t.Fatalf("first append = %d, %v", pos, err)
		}
		if found, err := s.HasIdempotencyID(ctx, "idem_one"); err != nil || !found {
			t.Fatalf("HasIdempotencyID after its append = %v, %v", found, err)
		}
		events, err := s.ReadStream(ctx, "ct_a")
		if err != nil || events[0].Metadata.IdempotencyID != "idem_one" {
			t.Fatalf("metadata of the stamped append: %+v, %v", events, err)
		}
		// A second append of the id, to any stream, writes nothing.
		if _, err := s.Append(ctx, stamped, domain.StreamAppend{StreamID: "ct_c", Events: tagged("ct_c", 1)}); !errors.Is(err, domain.ErrAlreadyPerformed) {
			t.Fatalf("second append of one id: %v, want ErrAlreadyPerformed", err)
		}
		if head, _ := s.Head(ctx); head != 4 {
			t.Fatalf("head = %d after the refused append, want 4", head)
		}
		// Appends without an id are not limited.
		for range 2 {
			if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_d", ExpectedVersion: domain.AnyVersion, Events: tagged("ct_d", 1)}); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// Many appends at once, some sharing an id: they meet in the appender's group commits, where one
// refused append must not fail the others of its batch.
func TestConcurrentAppendsOfOneIdempotencyID(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		s, _ := newStore(t, dialect)
		ctx := context.Background()
		const n = 24
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				m := meta
				m.IdempotencyID = fmt.Sprintf("idem_%d", i%3) // three ids, eight appends each
				if i%4 == 3 {
					m.IdempotencyID = "" // and some appends without an id
				}
				stream := fmt.Sprintf("ct_%02d", i)
				_, errs[i] = s.Append(ctx, m, domain.StreamAppend{StreamID: stream, Events: tagged(stream, 2)})
			})
		}
		wg.Wait()
		won := map[int]int{}
		for i, err := range errs {
			switch {
			case err == nil && i%4 == 3:
			case err == nil:
				won[i%3]++
			case errors.Is(err, domain.ErrAlreadyPerformed) && i%4 != 3:
			default:
				t.Fatalf("append %d: %v", i, err)
			}
		}
		if won[0] != 1 || won[1] != 1 || won[2] != 1 {
			t.Fatalf("appends that went through per id: %v, want one each", won)
		}
		s.Head(ctx) // waits for the horizon to pass this store's commits
		if log, _ := s.ReadLog(ctx, 0, 1000); len(log) != 2*(3+n/4) {
			t.Fatalf("the log holds %d events, want %d", len(log), 2*(3+n/4))
		}
	})
}
