package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/cluster"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A transaction outlives its buyer's erasure (decisions.md "Erasure": transactions keep their
// amounts, products and dates, without the person's data), so its refund is still recorded: 200,
// and checkout.refunded goes to the webhooks and the feed showing the person as erased, as the
// erased purchase does, its values null in the log.
func TestARefundOfAnErasedBuyersTransactionIsRecordedWithoutThePerson(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		admin := "/admin/v1/accounts/" + acc.ID
		rcv := newRecorder(t)
		svc.Operator.Post(t, admin+"/webhooks", "", map[string]any{"url": rcv.URL, "events": []string{"checkout.refunded"}}).Expect(t, http.StatusCreated)
		product := svc.NewProduct(t, acc.ID, simpleProduct("Book"))
		const email, name = "qzrefunded.buyer@example.com", "Qzrefunda Buyerly"
		bought := buy(t, svc, acc.ID, map[string]any{"productId": product.ID, "pricingTierId": product.TierIDs[0], "email": email, "name": name})
		contactID := bought.Object(t, "customer")["contactId"].(string)
		txn := bought.Object(t, "transaction")["id"].(string)
		svc.Operator.Post(t, admin+"/contacts/"+contactID+"/erase", "", nil).Expect(t, http.StatusOK)

		refunded := svc.Operator.Post(t, admin+"/checkout/transactions/"+txn+"/refund", "", map[string]any{"amountCents": 400}).Expect(t, http.StatusOK)
		if tr := refunded.Object(t, "transaction"); tr["status"] != "partially_refunded" || refunded.Object(t, "refund")["amountCents"] != float64(400) {
			t.Fatalf("refund answer: %s", refunded.Raw)
		}
		// The rest too: the transaction's stream, not the person, decides what remains.
		svc.Operator.Post(t, admin+"/checkout/transactions/"+txn+"/refund", "", map[string]any{}).Expect(t, http.StatusOK)
		svc.Operator.Post(t, admin+"/checkout/transactions/"+txn+"/refund", "", map[string]any{}).ExpectError(t, http.StatusConflict)

		showsPerson := func(raw []byte) bool {
			lower := strings.ToLower(string(raw))
			return strings.Contains(lower, strings.ToLower(email)) || strings.Contains(lower, strings.ToLower(name))
		}
		delivered := rcv.waitFor(t, 2)
		for _, d := range delivered {
			if d.kind != "checkout.refunded" || showsPerson(d.body) {
				t.Errorf("delivery %s %s", d.kind, d.body)
			}
		}
		events, _ := feedPage(t, svc, acc.Key, "?types=checkout.purchased,checkout.refunded")
		if len(events) != 3 || events[0]["type"] != "checkout.purchased" {
			t.Fatalf("the feed holds %d events, want the purchase and 2 refunds", len(events))
		}
		// The refunds show the person as the erased purchase does.
		erased := events[0]["data"].(map[string]any)
		for _, e := range events[1:] {
			data := e["data"].(map[string]any)
			customer, contact := data["customer"].(map[string]any), data["contact"].(map[string]any)
			tr := data["transaction"].(map[string]any)
			if !reflect.DeepEqual(customer, erased["customer"]) || !reflect.DeepEqual(contact, erased["contact"]) || customer["contactId"] != contactID ||
				customer["email"] != "" || customer["name"] != "" || contact["email"] != "" || contact["firstName"] != "" || contact["lastName"] != "" {
				t.Errorf("the refund shows the person as customer %v, contact %v; the erased purchase as %v, %v", customer, contact, erased["customer"], erased["contact"])
			}
			if tr["id"] != txn || tr["amount"] != float64(1000) || data["product"].(map[string]any)["id"] != product.ID || data["refund"] == nil {
				t.Errorf("the refund lost its financial record: %v", data)
			}
		}
		if raw := mustJSON(t, events); showsPerson(raw) {
			t.Errorf("the feed shows the erased person: %s", raw)
		}
		// The contact's history lists the refunds after its erasure, their values null.
		events = history(t, svc, acc.ID, contactID)
		if types := countTypes(events); types["CheckoutRefunded"] != 2 || types["ContactErased"] != 1 {
			t.Errorf("history after the refunds: %v", types)
		}
		for _, e := range events {
			if e["type"] != "CheckoutRefunded" {
				continue
			}
			data := e["data"].(map[string]any)
			customer, contact := data["customer"].(map[string]any), data["contact"].(map[string]any)
			if customer["email"] != nil || customer["name"] != nil || contact["email"] != nil || contact["firstName"] != nil {
				t.Errorf("history: %s shows customer %v, contact %v", e["type"], customer, contact)
			}
		}
		if raw := mustJSON(t, events); showsPerson(raw) {
			t.Errorf("the history shows the erased person: %s", raw)
		}
	})
}

// After a cancelled subscription's buyer is erased, nothing more of the subscription is recorded
// (it is over: a rebill or a cancellation is the conflict it was before the erasure, not a
// "contact not found"), while its payments can still be refunded.
func TestACancelledSubscriptionOfAnErasedBuyer(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		admin := "/admin/v1/accounts/" + acc.ID
		product := svc.NewProduct(t, acc.ID, map[string]any{"name": "Club",
			"pricingTiers": []any{map[string]any{"name": "Monthly", "amount": 900, "currency": "EUR", "interval": "month"}}})
		bought := buy(t, svc, acc.ID, map[string]any{"productId": product.ID, "pricingTierId": product.TierIDs[0], "email": "qzclub.member@example.com"})
		contactID := bought.Object(t, "customer")["contactId"].(string)
		subscription := bought.Object(t, "subscription")["id"].(string)
		rebill := svc.Operator.Post(t, admin+"/checkout/subscriptions/"+subscription+"/rebill", "", map[string]any{}).Expect(t, http.StatusCreated)
		renewal := rebill.Object(t, "transaction")["id"].(string)
		svc.Operator.Post(t, admin+"/checkout/subscriptions/"+subscription+"/cancel", "", map[string]any{"atPeriodEnd": false}).Expect(t, http.StatusOK)
		svc.Operator.Post(t, admin+"/contacts/"+contactID+"/erase", "", nil).Expect(t, http.StatusOK)

		svc.Operator.Post(t, admin+"/checkout/subscriptions/"+subscription+"/rebill", "", map[string]any{}).ExpectError(t, http.StatusConflict)
		svc.Operator.Post(t, admin+"/checkout/subscriptions/"+subscription+"/cancel", "", map[string]any{"atPeriodEnd": false}).ExpectError(t, http.StatusConflict)
		svc.Operator.Post(t, admin+"/checkout/transactions/"+renewal+"/refund", "", map[string]any{}).Expect(t, http.StatusOK)
		svc.Operator.Post(t, admin+"/checkout/transactions/"+bought.Object(t, "transaction")["id"].(string)+"/refund", "", map[string]any{}).Expect(t, http.StatusOK)
	})
}

// A refund recorded by another process than the one that erased the buyer, a process that held
// the buyer's key and transaction from the purchase it recorded itself and that builds the
// webhooks from its memory of what it appended, carries nothing of the person either: the webhook
// shows the person as erased. (That process's append transaction finds the buyer erased in
// person_keys, whatever key the process kept: infra/eventstore/erasure_race.go.)
func TestARefundInAnotherProcessThanTheErasureCarriesNothingOfThePerson(t *testing.T) {
	url := sqldbtest.URL(t, sqldb.Postgres)
	noLimits := func(c *service.Config) { c.RateLimits = false }
	buyer := servicetest.StartOn(t, url, noLimits)
	// An API process only: the buyer's process runs the relay and the webhooks, from its memory
	// of what it appended.
	eraser := servicetest.StartOn(t, url, func(c *service.Config) { noLimits(c); c.Role = cluster.RoleAPI })
	acc := buyer.NewAccount(t)
	admin := "/admin/v1/accounts/" + acc.ID
	rcv := newRecorder(t)
	buyer.Operator.Post(t, admin+"/webhooks", "", map[string]any{"url": rcv.URL, "events": []string{"checkout.refunded"}}).Expect(t, http.StatusCreated)
	product := buyer.NewProduct(t, acc.ID, simpleProduct("Book"))
	const email, name = "qzrefund.elsewhere@example.com", "Qzelsewhere Buyer"
	bought := buy(t, buyer, acc.ID, map[string]any{"productId": product.ID, "pricingTierId": product.TierIDs[0], "email": email, "name": name})
	contactID := bought.Object(t, "customer")["contactId"].(string)
	txn := bought.Object(t, "transaction")["id"].(string)

	eraser.Operator.Post(t, admin+"/contacts/"+contactID+"/erase", "", nil).Expect(t, http.StatusOK)
	buyer.Operator.Post(t, admin+"/checkout/transactions/"+txn+"/refund", "", map[string]any{}).Expect(t, http.StatusOK)

	for _, d := range rcv.waitFor(t, 1) {
		lower := strings.ToLower(string(d.body))
		if d.kind != "checkout.refunded" || strings.Contains(lower, strings.ToLower(email)) || strings.Contains(lower, strings.ToLower(name)) {
			t.Errorf("delivery %s %s", d.kind, d.body)
		}
	}
}

// Refunds of a buyer's payment racing the buyer's erasure: a refund recorded after the erasure
// carries the buyer's values null (docs/operator-api.md "Erasure": "the refund's event is
// recorded with the person's values null, and its checkout.refunded shows the person as
// erased"), so no delivery of a refund made after the erasure carries the buyer's email.
func TestRefundsRacingAnErasureCarryNothingOfThePerson(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		type delivered struct {
			ID   string `json:"id"`
			Data struct {
				Customer struct {
					Email *string `json:"email"`
				} `json:"customer"`
				Refund struct {
					RefundedAt time.Time `json:"refundedAt"`
				} `json:"refund"`
			} `json:"data"`
		}
		var mu sync.Mutex
		var got []delivered
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var d delivered
			if err := json.NewDecoder(r.Body).Decode(&d); err == nil && d.Data.Customer.Email != nil && *d.Data.Customer.Email != "" {
				mu.Lock()
				got = append(got, d)
				mu.Unlock()
			}
		}))
		defer receiver.Close()
		svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, map[string]any{"url": receiver.URL, "event": "checkout.refunded"}).Expect(t, http.StatusCreated)
		product := svc.NewProduct(t, acc.ID, simpleProduct("Book"))
		db := svc.App.DB()
		erasedAt := map[string]int64{} // the log position of each buyer's ContactErased
		for round := range 5 {
			email := fmt.Sprintf("qzrefund.race%d@example.com", round)
			bought := buy(t, svc, acc.ID, map[string]any{"productId": product.ID, "pricingTierId": product.TierIDs[0], "email": email})
			contactID := bought.Object(t, "customer")["contactId"].(string)
			refund := "/admin/v1/accounts/" + acc.ID + "/checkout/transactions/" + bought.Object(t, "transaction")["id"].(string) + "/refund"
			var wg sync.WaitGroup
			start := make(chan struct{})
			for range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					for range 8 {
						svc.Operator.Post(t, refund, "", map[string]any{"amountCents": 1})
					}
				}()
			}
			close(start)
			time.Sleep(time.Duration(round) * 2 * time.Millisecond)
			svc.API.Delete(t, "/api/v1/contacts/"+contactID, acc.Key).Expect(t, http.StatusOK)
			var at int64
			if err := db.Read.QueryRow(`SELECT position FROM events WHERE stream_id = $1 AND type = 'ContactErased'`, contactID).Scan(&at); err != nil {
				t.Fatal(err)
			}
			erasedAt[email] = at
			wg.Wait()
		}
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			var pending int
			if err := db.Read.QueryRow(`SELECT COUNT(*) FROM webhook_deliveries WHERE account_id = $1 AND status = 'pending'`, acc.ID).Scan(&pending); err != nil {
				t.Fatal(err)
			}
			if pending == 0 {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, d := range got {
			// The log's order decides: the refund's event against its buyer's ContactErased.
			var refundAt int64
			if err := db.Read.QueryRow(`SELECT position FROM events WHERE event_id = $1`, d.ID).Scan(&refundAt); err != nil {
				t.Fatal(err)
			}
			if at, ok := erasedAt[*d.Data.Customer.Email]; ok && refundAt > at {
				t.Errorf("the refund at log position %d, after its buyer's ContactErased at %d, was delivered with the buyer's email %s", refundAt, at, *d.Data.Customer.Email)
			}
		}
		// Nor does the outbox keep a body holding a buyer's email: the erasures blanked those of
		// the deliveries made before them.
		if n := outboxRowsHolding(t, svc, "qzrefund.race"); n > 0 {
			t.Errorf("after the erasures %d webhook deliveries still hold an erased buyer's email in their body", n)
		}
	})
}
