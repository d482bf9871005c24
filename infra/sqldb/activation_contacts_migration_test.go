package sqldb_test

import (
	"context"
	"testing"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// An activation written before migration 16 has no contact_id, so its buyer's erasure, which
// blanks activations by that column, left the buyer's email in it. Migration 24 gives every such
// row the contact its ActivationIssued names, and blanks the rows of a contact already erased;
// a live buyer's activation keeps its email, and applying it again changes nothing.
func TestActivationContactsMigrationLetsAnErasureReachActivationsFromBefore(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, dialect)
		if err := db.MigrateDownTo(ctx, 23); err != nil {
			t.Fatal(err)
		}
		store := eventstore.New(db) // as an earlier release wrote them: in the clear
		t.Cleanup(store.Close)
		meta := domain.Metadata{AccountID: "acc_1", Actor: string(domain.OperatorActor)}
		appendContacts(t, store, meta, "ct_live", "ct_gone")
		for _, a := range []struct{ activation, contact, email string }{
			{"act_live", "ct_live", "live@example.com"},
			{"act_gone", "ct_gone", "gone@example.com"},
		} {
			issued := domain.ActivationIssued{ActivationID: a.activation, AccountID: "acc_1", Email: a.email, ContactID: a.contact, CustomerID: "cus_" + a.contact}
			if _, err := store.Append(ctx, meta, domain.StreamAppend{StreamID: a.activation, Events: []domain.Event{issued}}); err != nil {
				t.Fatal(err)
			}
		}
		for _, stmt := range []string{
			`INSERT INTO person_keys (contact_id, account_id, sealed_key, erased_at) VALUES ('ct_gone', 'acc_1', NULL, 1)`,
			// As migration 16 left the rows of an earlier release: contact_id NULL.
			`INSERT INTO activations (id, account_id, customer_id, email, product_id, product_name, activation_base_url,
			    transaction_id, subscription_id, status, external_user_id, issued_at, expires_at, completed_at, seq, contact_id)
			 VALUES ('act_live', 'acc_1', 'cus_ct_live', 'live@example.com', 'prd_1', 'App', 'https://app.example.com', 'txn_1', '', 'completed', 'user-live', 0, 0, 0, 1, NULL),
			        ('act_gone', 'acc_1', 'cus_ct_gone', 'gone@example.com', 'prd_1', 'App', 'https://app.example.com', 'txn_2', '', 'completed', 'user-gone', 0, 0, 0, 2, NULL)`,
		} {
			if _, err := db.Write.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		want := map[string][3]string{
			"act_live": {"ct_live", "live@example.com", "user-live"},
			"act_gone": {"ct_gone", "", ""},
		}
		for range 2 {
			if _, err := db.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			if got := activationRows(t, db); len(got) != len(want) || got["act_live"] != want["act_live"] || got["act_gone"] != want["act_gone"] {
				t.Fatalf("activations after migration 24: %v, want %v", got, want)
			}
			if err := db.MigrateDownTo(ctx, 23); err != nil { // and up again: nothing more changes
				t.Fatal(err)
			}
		}
	})
}

// activationRows reads each activation's contact, email and external user id.
func activationRows(t *testing.T, db *sqldb.DB) map[string][3]string {
	t.Helper()
	rows, err := db.Read.QueryContext(context.Background(), `SELECT id, COALESCE(contact_id, 'NULL'), email, external_user_id FROM activations`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string][3]string{}
	for rows.Next() {
		var id string
		var row [3]string
		if err := rows.Scan(&id, &row[0], &row[1], &row[2]); err != nil {
			t.Fatal(err)
		}
		got[id] = row
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}
