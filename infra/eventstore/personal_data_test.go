package eventstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sealing/sealingtest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// storedData is every event's data as the database holds it.
func storedData(t *testing.T, db *sqldb.DB) string {
	t.Helper()
	rows, err := db.Read.QueryContext(context.Background(), `SELECT data FROM events ORDER BY position`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var all []string
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			t.Fatal(err)
		}
		all = append(all, d)
	}
	return strings.Join(all, "\n")
}

// A person's values are stored sealed under the person's key and read back in place; once the
// contact is erased they read as null, in this store and in another one on the same database,
// while every event keeps its position, type and other data.
func TestPersonalValuesAreSealedAndErasedWithTheirKey(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, dialect)
		_, server := sealingtest.NewKey(t)
		s, other := eventstore.New(db), eventstore.New(db)
		t.Cleanup(s.Close)
		t.Cleanup(other.Close)
		s.SealPersonalData(server)
		other.SealPersonalData(server)

		created := domain.ContactCreated{ContactID: "ct_p", AccountID: "acc_test", Email: "zanzibar.quill@example.com",
			FirstName: "Zanzibar", Phone: "+15550001111", CustomFields: map[string]string{"fld_1": "Quillwort"}}
		form := domain.FormSubmitted{SubmissionID: "sub_1", FormID: "frm_1", FormName: "Signup", AccountID: "acc_test", ContactID: "ct_p",
			SubmittedAt: time.Unix(1700000000, 0).UTC(),
			Fields:      []domain.SubmittedField{{Field: domain.Field{ID: "fld_a", Label: "Favourite", Type: "text"}, Value: "Marmalade-77"}}}
		if _, err := s.Append(ctx, meta,
			domain.StreamAppend{StreamID: "ct_p", Events: []domain.Event{created, domain.TagApplied{ContactID: "ct_p", TagID: "tag_1", TagName: "VIP"}}},
			domain.StreamAppend{StreamID: "frm_1", ExpectedVersion: domain.AnyVersion, Events: []domain.Event{form}},
		); err != nil {
			t.Fatal(err)
		}
		secrets := []string{"zanzibar.quill", "Zanzibar", "5550001111", "Quillwort", "Marmalade-77"}
		raw := storedData(t, db)
		for _, v := range secrets {
			if strings.Contains(raw, v) {
				t.Errorf("the log stores %q in the clear", v)
			}
		}
		if !strings.Contains(raw, "VIP") || !strings.Contains(raw, "Favourite") {
			t.Errorf("the log lost values that are not personal: %s", raw)
		}
		for _, store := range []*eventstore.Store{s, other} {
			events, err := store.ReadContactHistory(ctx, "acc_test", "ct_p", 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(events)
			for _, v := range secrets {
				if !strings.Contains(string(got), v) {
					t.Errorf("a read of the log misses %q: %s", v, got)
				}
			}
			e, err := events[2].Decode()
			if err != nil {
				t.Fatal(err)
			}
			if f := e.(domain.FormSubmitted); f.Fields[0].Value != "Marmalade-77" || f.Fields[0].Label != "Favourite" {
				t.Errorf("the submission reads %+v", f.Fields)
			}
		}

		if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_p", ExpectedVersion: 2,
			Events: []domain.Event{domain.ContactErased{ContactID: "ct_p", AccountID: "acc_test", ErasedAt: time.Now()}}}); err != nil {
			t.Fatal(err)
		}
		for _, store := range []*eventstore.Store{s, other} {
			events, err := store.ReadContactHistory(ctx, "acc_test", "ct_p", 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(events) != 4 || events[3].Type != "ContactErased" {
				t.Fatalf("history after the erasure: %d events", len(events))
			}
			got, _ := json.Marshal(events)
			for _, v := range secrets {
				if strings.Contains(string(got), v) {
					t.Errorf("a read of the log still shows %q after the erasure", v)
				}
			}
			var data map[string]any
			if err := json.Unmarshal(events[0].Data, &data); err != nil {
				t.Fatal(err)
			}
			if data["email"] != nil || data["contactId"] != "ct_p" {
				t.Errorf("the erased creation reads %v, want email null and the id kept", data)
			}
			if _, err := events[2].Decode(); err != nil {
				t.Errorf("an erased event no longer decodes: %v", err)
			}
		}
		erased, err := s.Erased(ctx, "ct_p")
		if err != nil || !erased {
			t.Fatalf("Erased = %v, %v", erased, err)
		}
		// A write of the erased person's values after the erasure is refused, not sealed anew.
		_, err = s.Append(ctx, meta, domain.StreamAppend{StreamID: "frm_1", ExpectedVersion: domain.AnyVersion, Events: []domain.Event{form}})
		if err != domain.ErrContactErased {
			t.Fatalf("a submission for the erased contact: %v, want ErrContactErased", err)
		}
	})
}

// A refund of an erased person's transaction (domain.RecordKeptAfterErasure) is no write to the
// person: it is recorded, with the person's values null, in the log and in what the appending
// store hands its readers alike, even when the command decided it on values read before the
// erasure; a write to the contact itself stays refused (ErrContactErased).
func TestARefundOfAnErasedPersonIsRecordedWithItsValuesNull(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, dialect)
		_, server := sealingtest.NewKey(t)
		s, other := eventstore.New(db), eventstore.New(db)
		t.Cleanup(s.Close)
		t.Cleanup(other.Close)
		s.SealPersonalData(server)
		other.SealPersonalData(server)

		created := domain.ContactCreated{ContactID: "ct_r", AccountID: "acc_test", Email: "quokka.refund@example.com", FirstName: "Quokkaline"}
		if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_r", Events: []domain.Event{created}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_r", ExpectedVersion: 1,
			Events: []domain.Event{domain.ContactErased{ContactID: "ct_r", AccountID: "acc_test", ErasedAt: time.Now()}}}); err != nil {
			t.Fatal(err)
		}
		sale := domain.Sale{
			Product:     domain.SaleProduct{ID: "prod_1", Name: "Book"},
			Transaction: domain.SaleTransaction{ID: "txn_1", TxnID: "txn_1", Amount: 1000, Currency: "EUR", Status: domain.TransactionRefunded},
			Customer:    domain.SaleCustomer{Email: "quokka.refund@example.com", Name: "Quokkaline Refund", ContactID: "ct_r"},
			Contact:     domain.SaleContact{ContactID: "ct_r", Email: "quokka.refund@example.com", FirstName: "Quokkaline"},
		}
		refund := domain.CheckoutRefunded{AccountID: "acc_test", CustomerID: "cus_1", Sale: sale, Refund: domain.Refund{AmountCents: 1000, FullyRefunded: true}}
		position, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "txn_1", ExpectedVersion: domain.AnyVersion, Events: []domain.Event{refund}})
		if err != nil {
			t.Fatalf("the refund of the erased person's transaction: %v", err)
		}
		if raw := storedData(t, db); strings.Contains(strings.ToLower(raw), "quokka") {
			t.Errorf("the log stores the erased person's values: %s", raw)
		}
		for _, store := range []*eventstore.Store{s, other} {
			events, err := store.ReadStream(ctx, "txn_1")
			if err != nil {
				t.Fatal(err)
			}
			if len(events) != 1 || strings.Contains(strings.ToLower(string(events[0].Data)), "quokka") {
				t.Fatalf("the refund reads %s", events[0].Data)
			}
			var data struct {
				Customer    map[string]any `json:"customer"`
				Transaction map[string]any `json:"transaction"`
			}
			if err := json.Unmarshal(events[0].Data, &data); err != nil {
				t.Fatal(err)
			}
			if data.Customer["email"] != nil || data.Customer["name"] != nil || data.Customer["contactId"] != "ct_r" || data.Transaction["amount"] != float64(1000) {
				t.Errorf("the refund reads customer %v, transaction %v", data.Customer, data.Transaction)
			}
		}
		// What the appending store hands its inline projections and the relay (plain data from
		// its memory of its own commits, not read back from the database) holds none either.
		recent, err := s.ReadLog(ctx, position-1, 1)
		if err != nil || len(recent) != 1 {
			t.Fatalf("ReadLog after %d: %v, %v", position-1, recent, err)
		}
		for _, e := range recent {
			if strings.Contains(strings.ToLower(string(e.Data)), "quokka") {
				t.Errorf("%s at %d reads %s", e.Type, e.Position, e.Data)
			}
		}
		name := "Quokkaline"
		updated := domain.ContactUpdated{ContactID: "ct_r", FirstName: &name}
		if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_r", ExpectedVersion: domain.AnyVersion, Events: []domain.Event{updated}}); err != domain.ErrContactErased {
			t.Fatalf("a write to the erased contact: %v, want ErrContactErased", err)
		}
	})
}

// Two stores that seal for one contact without a key at once (one created before sealing) each
// make a key; one key is stored, and the append sealed under the other seals again under it:
// every append succeeds, and no value is left that no stored key opens.
func TestConcurrentFirstKeysOfAContactLeaveEveryValueReadable(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, dialect)
		_, server := sealingtest.NewKey(t)
		const contacts = 12
		plain := eventstore.New(db)
		t.Cleanup(plain.Close)
		for i := range contacts {
			id := fmt.Sprintf("ct_race%d", i)
			created := domain.ContactCreated{ContactID: id, AccountID: "acc_test", Email: id + "@example.com"}
			if _, err := plain.Append(ctx, meta, domain.StreamAppend{StreamID: id, Events: []domain.Event{created}}); err != nil {
				t.Fatal(err)
			}
		}
		stores := []*eventstore.Store{eventstore.New(db), eventstore.New(db)}
		for _, s := range stores {
			t.Cleanup(s.Close)
			s.SealPersonalData(server)
		}
		var wg sync.WaitGroup
		for i := range contacts {
			for w, s := range stores {
				wg.Add(1)
				go func() {
					defer wg.Done()
					contact := fmt.Sprintf("ct_race%d", i)
					form := domain.FormSubmitted{SubmissionID: fmt.Sprintf("sub_%d_%d", i, w), FormID: "frm_1", AccountID: "acc_test", ContactID: contact,
						Fields: []domain.SubmittedField{{Field: domain.Field{ID: "fld_a", Label: "A", Type: "text"}, Value: fmt.Sprintf("Answer-%d-%d", i, w)}}}
					if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: form.SubmissionID, Events: []domain.Event{form}}); err != nil {
						t.Errorf("append for %s: %v", contact, err)
					}
				}()
			}
		}
		wg.Wait()
		for i := range contacts {
			for w := range stores {
				events, err := stores[0].ReadStream(ctx, fmt.Sprintf("sub_%d_%d", i, w))
				if err != nil {
					t.Fatal(err)
				}
				if len(events) != 1 || !strings.Contains(string(events[0].Data), fmt.Sprintf("Answer-%d-%d", i, w)) {
					t.Errorf("submission %d of store %d reads %v", i, w, events)
				}
			}
		}
	})
}

// A person's key is kept by the position of its contact's first event: a write sealing the values
// of a contact that does not exist fails whole, rather than seal them under a key nothing finds.
func TestNoKeyIsStoredForAContactWithoutItsFirstEvent(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, dialect)
		_, server := sealingtest.NewKey(t)
		s := eventstore.New(db)
		t.Cleanup(s.Close)
		s.SealPersonalData(server)
		form := domain.FormSubmitted{SubmissionID: "sub_nowhere", FormID: "frm_1", AccountID: "acc_test", ContactID: "ct_nowhere",
			Fields: []domain.SubmittedField{{Field: domain.Field{ID: "fld_a", Label: "A", Type: "text"}, Value: "Answer"}}}
		if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: form.SubmissionID, Events: []domain.Event{form}}); err == nil {
			t.Fatal("a write sealing the values of a contact that does not exist succeeded")
		}
		events, err := s.ReadStream(ctx, form.SubmissionID)
		if err != nil || len(events) != 0 {
			t.Fatalf("the failed write's stream: %d events, %v; want none", len(events), err)
		}
		var keys int
		if err := db.Read.QueryRow(`SELECT COUNT(*) FROM person_key_rows`).Scan(&keys); err != nil || keys != 0 {
			t.Fatalf("keys stored: %d %v, want none", keys, err)
		}
	})
}

// A store that takes an erased contact for new (a stale hint, as an upsert's guess of its email's
// contact gives: Store.MayBeNewContact) seals under a key it makes, and its append asks no
// erasure for that person: the key's insert meets the erasure's row, and the retry reads the
// erasure. A write of the person's values is refused; a refund is recorded with them null.
func TestAKeyMadeForAnErasedContactMeetsItsErasure(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, dialect)
		_, server := sealingtest.NewKey(t)
		eraser, s := eventstore.New(db), eventstore.New(db)
		t.Cleanup(eraser.Close)
		t.Cleanup(s.Close)
		eraser.SealPersonalData(server)
		s.SealPersonalData(server)
		created := domain.ContactCreated{ContactID: "ct_e", AccountID: "acc_test", Email: "quokka.stale@example.com"}
		if _, err := eraser.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_e", Events: []domain.Event{created}}); err != nil {
			t.Fatal(err)
		}
		if _, err := eraser.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_e", ExpectedVersion: 1,
			Events: []domain.Event{domain.ContactErased{ContactID: "ct_e", AccountID: "acc_test", ErasedAt: time.Now()}}}); err != nil {
			t.Fatal(err)
		}

		s.MayBeNewContact("ct_e")
		form := domain.FormSubmitted{SubmissionID: "sub_stale", FormID: "frm_1", AccountID: "acc_test", ContactID: "ct_e",
			Fields: []domain.SubmittedField{{Field: domain.Field{ID: "fld_a", Label: "A", Type: "text"}, Value: "Quokka answer"}}}
		if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: form.SubmissionID, Events: []domain.Event{form}}); !errors.Is(err, domain.ErrContactErased) {
			t.Fatalf("a write of the erased contact's values under a key made for it: %v, want ErrContactErased", err)
		}

		s.MayBeNewContact("ct_e")
		sale := domain.Sale{
			Product:     domain.SaleProduct{ID: "prod_1", Name: "Book"},
			Transaction: domain.SaleTransaction{ID: "txn_s", TxnID: "txn_s", Amount: 1000, Currency: "EUR", Status: domain.TransactionRefunded},
			Customer:    domain.SaleCustomer{Email: "quokka.stale@example.com", Name: "Quokka Stale", ContactID: "ct_e"},
			Contact:     domain.SaleContact{ContactID: "ct_e", Email: "quokka.stale@example.com"},
		}
		refund := domain.CheckoutRefunded{AccountID: "acc_test", CustomerID: "cus_1", Sale: sale, Refund: domain.Refund{AmountCents: 1000, FullyRefunded: true}}
		if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "txn_s", ExpectedVersion: domain.AnyVersion, Events: []domain.Event{refund}}); err != nil {
			t.Fatalf("the refund of the erased person's transaction: %v", err)
		}
		if raw := storedData(t, db); strings.Contains(strings.ToLower(raw), "quokka") {
			t.Errorf("the log stores the erased person's values: %s", raw)
		}
		// Recorded with the values null, not sealed under the key made for it.
		var refundData string
		if err := db.Read.QueryRow(`SELECT data FROM events WHERE stream_id = 'txn_s'`).Scan(&refundData); err != nil || strings.Contains(refundData, "$personal") {
			t.Errorf("the refund is stored sealed (%v): %s", err, refundData)
		}
		var keys int
		if err := db.Read.QueryRow(`SELECT COUNT(*) FROM person_key_rows WHERE sealed_key IS NOT NULL`).Scan(&keys); err != nil || keys != 0 {
			t.Errorf("live keys after the erasure: %d %v, want none", keys, err)
		}
	})
}

// On PostgreSQL appends commit side by side: an append that seals a contact's values while the
// append creating that contact has yet to commit finds no first event to keep the new key by. It
// tries again a little later, finds the creator's key then, and seals under it.
func TestAKeyMadeWhileItsContactsCreationCommitsIsStoredOnceItHas(t *testing.T) {
	ctx := context.Background()
	db := sqldbtest.Open(t, sqldb.Postgres)
	_, server := sealingtest.NewKey(t)
	creator, sealer := eventstore.New(db), eventstore.New(db)
	t.Cleanup(creator.Close)
	t.Cleanup(sealer.Close)
	creator.SealPersonalData(server)
	sealer.SealPersonalData(server)
	// Another transaction holds blk_1's first version: the creator's append inserts ct_new's first
	// event, then waits on blk_1's, its transaction open.
	blocker, err := db.Write.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback()
	if _, err := blocker.ExecContext(ctx, `INSERT INTO events (position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, data, metadata)
		VALUES (1000000000, 'evt_blocker', 'blk_1', 1, 'TagApplied', 1, 0, 'acc_test', '{}', '{}')`); err != nil {
		t.Fatal(err)
	}
	created := make(chan error, 1)
	go func() {
		c := domain.ContactCreated{ContactID: "ct_new", AccountID: "acc_test", Email: "newton@example.com", FirstName: "Newton"}
		_, err := creator.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_new", Events: []domain.Event{c}},
			domain.StreamAppend{StreamID: "blk_1", Events: []domain.Event{domain.TagApplied{ContactID: "blk_1", TagID: "tag_1", TagName: "T"}}})
		created <- err
	}()
	waitForALockWait(t, db)
	sealed := make(chan error, 1)
	go func() {
		form := domain.FormSubmitted{SubmissionID: "sub_race", FormID: "frm_1", AccountID: "acc_test", ContactID: "ct_new",
			Fields: []domain.SubmittedField{{Field: domain.Field{ID: "fld_a", Label: "A", Type: "text"}, Value: "Newton's answer"}}}
		_, err := sealer.Append(ctx, meta, domain.StreamAppend{StreamID: "sub_race", Events: []domain.Event{form}})
		sealed <- err
	}()
	time.Sleep(100 * time.Millisecond) // the sealer has met the missing first event by now
	if err := blocker.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := <-created; err != nil {
		t.Fatalf("the creation: %v", err)
	}
	if err := <-sealed; err != nil {
		t.Fatalf("an append sealing a contact's values while its creation commits: %v, want it stored once the creation has", err)
	}
	for _, stream := range []string{"ct_new", "sub_race"} {
		events, err := sealer.ReadStream(ctx, stream)
		if err != nil || len(events) != 1 || !strings.Contains(string(events[0].Data), "Newton") {
			t.Fatalf("%s reads %v, %v", stream, events, err)
		}
	}
}

// waitForALockWait waits until a session of the test's database waits for a lock.
func waitForALockWait(t *testing.T, db *sqldb.DB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var waiting bool
		if err := db.Read.QueryRow(`SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no session waits for a lock")
}
