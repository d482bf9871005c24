package eventstore

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sealing/sealingtest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A refund batched with its buyer's erasure is recorded with the buyer's values null
// (afterErasures). When that batch fails and each request is tried again alone (Store.commit),
// the refund's try decides again: here the erasure is not recorded (it failed on its own, as a
// write to the contact racing it would make it), so the refund keeps the buyer's values. The
// values nulled for the failed batch were kept for the next try.
func TestARefundTriedAgainAloneKeepsTheValuesAnUnrecordedErasureWouldHaveNulled(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, dialect)
		_, server := sealingtest.NewKey(t)
		s := New(db)
		t.Cleanup(s.Close)
		s.SealPersonalData(server)
		meta := domain.Metadata{AccountID: "acc_test", Actor: "operator"}

		created := domain.ContactCreated{ContactID: "ct_r", AccountID: "acc_test", Email: "wombat.retry@example.com", FirstName: "Wombat"}
		if _, err := s.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_r", Events: []domain.Event{created}}); err != nil {
			t.Fatal(err)
		}
		keyed := meta
		keyed.IdempotencyID = "idem_taken"
		tag := domain.TagApplied{ContactID: "ct_r", TagID: "tag_1", TagName: "VIP"}
		if _, err := s.Append(ctx, keyed, domain.StreamAppend{StreamID: "ct_r", ExpectedVersion: domain.AnyVersion, Events: []domain.Event{tag}}); err != nil {
			t.Fatal(err)
		}

		erase, err := s.encode(ctx, meta, []domain.StreamAppend{{StreamID: "ct_r", ExpectedVersion: domain.AnyVersion,
			Events: []domain.Event{domain.ContactErased{ContactID: "ct_r", AccountID: "acc_test", ErasedAt: time.Now()}}}})
		if err != nil {
			t.Fatal(err)
		}
		sale := domain.Sale{
			Product:     domain.SaleProduct{ID: "prod_1", Name: "Book"},
			Transaction: domain.SaleTransaction{ID: "txn_1", TxnID: "txn_1", Amount: 1000, Currency: "EUR", Status: domain.TransactionRefunded},
			Customer:    domain.SaleCustomer{Email: "wombat.retry@example.com", Name: "Wombat Retry", ContactID: "ct_r"},
			Contact:     domain.SaleContact{ContactID: "ct_r", Email: "wombat.retry@example.com", FirstName: "Wombat"},
		}
		refund, err := s.encode(ctx, meta, []domain.StreamAppend{{StreamID: "txn_1", ExpectedVersion: domain.AnyVersion,
			Events: []domain.Event{domain.CheckoutRefunded{AccountID: "acc_test", CustomerID: "cus_1", Sale: sale, Refund: domain.Refund{AmountCents: 1000, FullyRefunded: true}}}}})
		if err != nil {
			t.Fatal(err)
		}
		// A request whose Idempotency-Key was taken meanwhile fails the whole batch.
		broken, err := s.encode(ctx, keyed, []domain.StreamAppend{{StreamID: "ct_r", ExpectedVersion: domain.AnyVersion, Events: []domain.Event{tag}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.commitTx(ctx, []*appendRequest{erase, refund, broken}); err == nil {
			t.Fatal("the batch with a taken Idempotency-Key committed")
		}

		// The erasure fails alone; the refund is tried alone.
		results, err := s.commitTx(ctx, []*appendRequest{refund})
		if err != nil || results[0].err != nil {
			t.Fatalf("the refund alone: %v, %v", err, results)
		}
		events, err := s.ReadStream(ctx, "txn_1")
		if err != nil || len(events) != 1 {
			t.Fatalf("txn_1: %v, %v", events, err)
		}
		var data struct {
			Customer map[string]any `json:"customer"`
		}
		if err := json.Unmarshal(events[0].Data, &data); err != nil {
			t.Fatal(err)
		}
		if data.Customer["email"] != "wombat.retry@example.com" || data.Customer["name"] != "Wombat Retry" {
			t.Errorf("the refund of a buyer who was not erased reads customer %v: its values were nulled for a batch that failed", data.Customer)
		}
	})
}
