package projections_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/pipeline"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
	"github.com/funnelhq/funnel/projections"
)

// A contact created without custom fields and given one in the same batch (two quick writes the
// relay delivers together) gets it: the fold starts from an empty set of fields, not a nil one.
func TestContactCreatedThenGivenACustomFieldInOneBatch(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, dialect)
		contacts := projections.NewContacts(db.Read)
		at := time.Now().UTC().Truncate(time.Millisecond)
		batch := []domain.Recorded{
			recorded(t, 1, at, domain.ContactCreated{ContactID: "ct_1", AccountID: "acc_1", Email: "ada@example.com"}),
			recorded(t, 2, at, domain.ContactUpdated{ContactID: "ct_1", CustomFields: map[string]string{"cf_company": "Analytical Engines"}}),
		}
		applyBatch(t, db, contacts, batch)
		c, err := contacts.Get(ctx, "acc_1", "ct_1")
		if err != nil {
			t.Fatal(err)
		}
		if c.CustomFields["cf_company"] != "Analytical Engines" || len(c.CustomFields) != 1 {
			t.Fatalf("custom fields %v, want cf_company only", c.CustomFields)
		}
	})
}

// applyBatch applies a batch to a projection in one transaction, as the pipeline does.
func applyBatch(t *testing.T, db *sqldb.DB, p pipeline.Projection, batch []domain.Recorded) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Projections.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := p.Apply(ctx, tx, batch); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func recorded(t *testing.T, pos int64, at time.Time, e domain.Event) domain.Recorded {
	t.Helper()
	data, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return domain.Recorded{ID: "e" + string(rune('0'+pos)), StreamID: "ct_1", Version: pos, Position: pos, Type: e.EventType(),
		SchemaVersion: 1, OccurredAt: at, Data: data, Metadata: domain.Metadata{AccountID: "acc_1"}}
}
