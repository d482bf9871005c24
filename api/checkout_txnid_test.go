package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A processor's txnId is unique per account (decisions.md "Processor transaction ids"): a
// payment notified again records nothing and answers 200 with the first payment.

// purchaseReceiver collects the transaction ids of the checkout.purchased webhooks it receives.
type purchaseReceiver struct {
	URL string
	mu  sync.Mutex
	ids []string
}

func newPurchaseReceiver(t *testing.T) *purchaseReceiver {
	rcv := &purchaseReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var env struct {
			Type string `json:"type"`
			Data struct {
				Transaction struct {
					ID string `json:"id"`
				} `json:"transaction"`
			} `json:"data"`
		}
		body, _ := io.ReadAll(r.Body)
		if json.Unmarshal(body, &env) == nil && env.Type == "checkout.purchased" {
			rcv.mu.Lock()
			rcv.ids = append(rcv.ids, env.Data.Transaction.ID)
			rcv.mu.Unlock()
		}
	}))
	t.Cleanup(srv.Close)
	rcv.URL = srv.URL
	return rcv
}

// waitFor waits until the webhook of transaction id arrived.
func (r *purchaseReceiver) waitFor(t *testing.T, id string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		r.mu.Lock()
		for _, got := range r.ids {
			if got == id {
				r.mu.Unlock()
				return
			}
		}
		r.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("checkout.purchased of %s never arrived", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// purchaseDeliveries counts the checkout.purchased deliveries recorded for a webhook, once a
// marker purchase made after everything else reached the receiver: the webhook projector reads
// the log in order, so every delivery of what came before is recorded by then.
func purchaseDeliveries(t *testing.T, svc *servicetest.Service, acc servicetest.Account, webhookID string, rcv *purchaseReceiver, marker map[string]any) int {
	t.Helper()
	res := svc.Operator.Post(t, checkoutPath(acc.ID, "purchases"), "", marker).Expect(t, http.StatusCreated)
	rcv.waitFor(t, res.Object(t, "transaction")["id"].(string))
	list := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/webhook-deliveries?webhookId="+webhookID, "").Expect(t, http.StatusOK).List(t, "deliveries")
	n := 0
	for _, d := range list {
		if d["eventType"] == "checkout.purchased" {
			n++
		}
	}
	return n - 1 // the marker's
}

// customerOf reads a customer with its transactions and subscriptions.
func customerOf(t *testing.T, svc *servicetest.Service, key, id string) map[string]any {
	t.Helper()
	return svc.API.Get(t, "/api/v1/customers/"+id, key).Expect(t, http.StatusOK).Object(t, "customer")
}

// webhookFor subscribes a receiver to the account's checkout.purchased.
func webhookFor(t *testing.T, svc *servicetest.Service, accountID, url string) string {
	t.Helper()
	return svc.Operator.Post(t, "/admin/v1/accounts/"+accountID+"/webhooks", "", map[string]any{"url": url, "events": []string{"checkout.purchased"}}).
		Expect(t, http.StatusCreated).Object(t, "webhook")["id"].(string)
}

func TestPurchaseRetriedWithItsTxnID(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		rcv := newPurchaseReceiver(t)
		webhook := webhookFor(t, svc, acc.ID, rcv.URL)
		body := map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[1], "email": "ada@example.com", "name": "Ada Lovelace", "txnId": "ch_retried"}
		path := checkoutPath(acc.ID, "purchases")

		first := svc.Operator.Post(t, path, "", body).Expect(t, http.StatusCreated)
		ids := func(res servicetest.Response) string {
			return fmt.Sprint(res.Object(t, "customer")["id"], res.Object(t, "transaction")["id"], res.Object(t, "subscription")["id"],
				res.Object(t, "activation")["token"], res.Object(t, "activation")["url"])
		}
		for i := range 2 {
			again := svc.Operator.Post(t, path, "", body).Expect(t, http.StatusOK)
			if ids(again) != ids(first) {
				t.Fatalf("retry %d answered %s, want the first payment %s", i+1, ids(again), ids(first))
			}
		}
		// The body is not compared: another buyer with the same txnId is the first payment too,
		// and nothing is recorded for that buyer.
		other := map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[0], "email": "bob@example.com", "txnId": "ch_retried"}
		if again := svc.Operator.Post(t, path, "", other).Expect(t, http.StatusOK); ids(again) != ids(first) {
			t.Fatalf("another body with the txnId answered %s", again.Raw)
		}
		if c := contactByEmail(t, svc, acc.Key, "bob@example.com"); c != nil {
			t.Fatalf("a retried txnId created a contact: %v", c)
		}
		customer := customerOf(t, svc, acc.Key, first.Object(t, "customer")["id"].(string))
		if txns, subs := customer["transactions"].([]any), customer["subscriptions"].([]any); len(txns) != 1 || len(subs) != 1 {
			t.Fatalf("customer after 4 notifications of one payment: %d transactions, %d subscriptions", len(txns), len(subs))
		}
		// The txnId is the account's: another account records its own payment with it.
		theirs := svc.NewAccount(t)
		theirProduct := svc.NewProduct(t, theirs.ID, proPlan())
		svc.Operator.Post(t, checkoutPath(theirs.ID, "purchases"), "", map[string]any{"productId": theirProduct.ID,
			"pricingTierId": theirProduct.TierIDs[0], "email": "ada@example.com", "txnId": "ch_retried"}).Expect(t, http.StatusCreated)

		marker := map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[0], "email": "marker@example.com", "txnId": "ch_marker"}
		if n := purchaseDeliveries(t, svc, acc, webhook, rcv, marker); n != 1 {
			t.Fatalf("%d checkout.purchased deliveries for one payment notified 4 times, want 1", n)
		}
	})
}

// A processor's retried notification of a purchase whose buyer was erased since answers that
// payment with 200, as a retried rebill does (decisions.md "Processor transaction ids"), not a
// 404 that the processor would read as a failed callback and retry. The answer shows no
// customer (it was erased with its person), and nothing is recorded: no new contact for the
// email, no second checkout.purchased.
func TestPurchaseRetriedAfterItsBuyerWasErased(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		rcv := newPurchaseReceiver(t)
		webhook := webhookFor(t, svc, acc.ID, rcv.URL)
		body := map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[0], "email": "erased-buyer@example.com", "name": "Ada Lovelace", "txnId": "ch_erased_1"}
		first := buy(t, svc, acc.ID, body)
		rcv.waitFor(t, first.Object(t, "transaction")["id"].(string))
		contactID := first.Object(t, "customer")["contactId"].(string)
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/contacts/"+contactID+"/erase", "", nil).Expect(t, http.StatusOK)

		for i := range 2 {
			again := svc.Operator.Post(t, checkoutPath(acc.ID, "purchases"), "", body)
			if again.Status != http.StatusOK {
				t.Fatalf("retry %d of the erased buyer's payment: %d %s, want 200 with that payment", i+1, again.Status, again.Raw)
			}
			if got, want := again.Object(t, "transaction")["id"], first.Object(t, "transaction")["id"]; got != want {
				t.Fatalf("retry %d answered transaction %v, want %v", i+1, got, want)
			}
			if got, want := again.Object(t, "activation")["token"], first.Object(t, "activation")["token"]; got != want {
				t.Fatalf("retry %d answered activation %v, want %v", i+1, got, want)
			}
			if c, ok := again.Body["customer"]; ok {
				t.Fatalf("retry %d shows the erased buyer's customer %v", i+1, c)
			}
		}
		if c := contactByEmail(t, svc, acc.Key, "erased-buyer@example.com"); c != nil {
			t.Fatalf("a retried txnId created a contact for the erased buyer's email: %v", c)
		}
		marker := map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[0], "email": "marker@example.com", "txnId": "ch_marker"}
		if n := purchaseDeliveries(t, svc, acc, webhook, rcv, marker); n != 1 {
			t.Fatalf("%d checkout.purchased deliveries for one payment notified 3 times, want 1", n)
		}
	})
}

// A txnId is compared with the white space around it ignored, and otherwise exactly
// (docs/checkout.md): " ch_ws " is recorded as ch_ws, and a notification of ch_ws is its retry,
// while CH_WS is another payment.
func TestATxnIDIsComparedWithoutTheWhiteSpaceAroundIt(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, simpleProduct("Ebook"))
		pay := func(txnID string, status int) map[string]any {
			body := map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[0], "email": "ws-txn@example.com", "txnId": txnID}
			return svc.Operator.Post(t, checkoutPath(acc.ID, "purchases"), "", body).Expect(t, status).Object(t, "transaction")
		}
		first := pay(" ch_ws\t", http.StatusCreated)
		if first["txnId"] != "ch_ws" {
			t.Fatalf("txnId recorded as %q, want \"ch_ws\"", first["txnId"])
		}
		if again := pay("ch_ws", http.StatusOK); again["id"] != first["id"] {
			t.Fatalf("ch_ws answered %v, want the payment %v", again["id"], first["id"])
		}
		if other := pay("CH_WS", http.StatusCreated); other["id"] == first["id"] {
			t.Fatalf("CH_WS answered the payment of ch_ws")
		}
	})
}

// A purchase without txnId gets a generated one, its transaction id; naming that id as the
// txnId of a later purchase is the same payment.
func TestPurchaseWithoutTxnIDGetsOne(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		plain := svc.NewProduct(t, acc.ID, simpleProduct("Ebook"))
		path := checkoutPath(acc.ID, "purchases")
		body := map[string]any{"productId": plain.ID, "pricingTierId": plain.TierIDs[0], "email": "ada@example.com"}
		first := svc.Operator.Post(t, path, "", body).Expect(t, http.StatusCreated).Object(t, "transaction")
		second := svc.Operator.Post(t, path, "", body).Expect(t, http.StatusCreated).Object(t, "transaction")
		if first["txnId"] != first["id"] || second["txnId"] != second["id"] || first["id"] == second["id"] {
			t.Fatalf("generated txnIds: %v and %v", first, second)
		}
		body["txnId"] = first["id"]
		if again := svc.Operator.Post(t, path, "", body).Expect(t, http.StatusOK).Object(t, "transaction"); again["id"] != first["id"] {
			t.Fatalf("the generated txnId named again answered %v", again)
		}
	})
}

// Eight notifications of one payment at once, most for different buyers so that nothing in
// the process orders them: one records the payment, the seven others answer it.
func TestConcurrentPurchasesWithOneTxnID(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		rcv := newPurchaseReceiver(t)
		webhook := webhookFor(t, svc, acc.ID, rcv.URL)
		answers := concurrently(t, 8, func(i int) servicetest.Response {
			return svc.Operator.Post(t, checkoutPath(acc.ID, "purchases"), "", map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[1],
				"email": fmt.Sprintf("buyer%d@example.com", i%5), "txnId": "ch_concurrent"})
		})
		created, first := 0, answers[0]
		for _, res := range answers {
			if res.Status == http.StatusCreated {
				created, first = created+1, res
			}
		}
		if created != 1 {
			t.Fatalf("%d of 8 concurrent notifications recorded the payment, want 1", created)
		}
		for i, res := range answers {
			if res.Status != http.StatusCreated {
				res.Expect(t, http.StatusOK)
			}
			for _, member := range []string{"customer", "transaction", "subscription", "activation"} {
				key := map[string]string{"activation": "token"}[member]
				if key == "" {
					key = "id"
				}
				if res.Object(t, member)[key] != first.Object(t, member)[key] {
					t.Fatalf("answer %d: %s %v, the payment's is %v", i, member, res.Object(t, member)[key], first.Object(t, member)[key])
				}
			}
		}
		customers := svc.API.Get(t, "/api/v1/customers", acc.Key).Expect(t, http.StatusOK).List(t, "customers")
		if len(customers) != 1 {
			t.Fatalf("%d customers after one payment notified 8 times", len(customers))
		}
		customer := customerOf(t, svc, acc.Key, customers[0]["id"].(string))
		if txns, subs := customer["transactions"].([]any), customer["subscriptions"].([]any); len(txns) != 1 || len(subs) != 1 {
			t.Fatalf("%d transactions, %d subscriptions after one payment notified 8 times", len(txns), len(subs))
		}
		marker := map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[0], "email": "marker@example.com", "txnId": "ch_marker"}
		if n := purchaseDeliveries(t, svc, acc, webhook, rcv, marker); n != 1 {
			t.Fatalf("%d checkout.purchased deliveries for one payment notified 8 times, want 1", n)
		}
	})
}

// Two processes on one PostgreSQL database, four notifications of one payment on each at once:
// the log's stream of the txnId records it once, with no read model involved.
func TestConcurrentPurchasesWithOneTxnIDAcrossProcesses(t *testing.T) {
	url := sqldbtest.URL(t, sqldb.Postgres)
	first, second := servicetest.StartOn(t, url, noConfig), servicetest.StartOn(t, url, noConfig)
	acc := first.NewAccount(t)
	pro := first.NewProduct(t, acc.ID, proPlan())
	answers := concurrently(t, 8, func(i int) servicetest.Response {
		svc := []*servicetest.Service{first, second}[i%2]
		return svc.Operator.Post(t, checkoutPath(acc.ID, "purchases"), "", map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[1],
			"email": fmt.Sprintf("buyer%d@example.com", i), "txnId": "ch_two_processes"})
	})
	statuses := map[int]int{}
	txns := map[any]bool{}
	for _, res := range answers {
		statuses[res.Status]++
		if res.Status == http.StatusOK || res.Status == http.StatusCreated {
			txns[res.Object(t, "transaction")["id"]] = true
		}
	}
	if statuses[http.StatusCreated] != 1 || statuses[http.StatusOK] != 7 || len(txns) != 1 {
		t.Fatalf("answers by status %v, %d transactions: want one 201, seven 200, one transaction", statuses, len(txns))
	}
	for _, svc := range []*servicetest.Service{first, second} {
		if customers := svc.API.Get(t, "/api/v1/customers", acc.Key).Expect(t, http.StatusOK).List(t, "customers"); len(customers) != 1 {
			t.Fatalf("%d customers after one payment", len(customers))
		}
	}
}

// concurrently runs n calls at once and returns their answers in order.
func concurrently(t *testing.T, n int, call func(i int) servicetest.Response) []servicetest.Response {
	t.Helper()
	answers := make([]servicetest.Response, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers[i] = call(i)
		}()
	}
	close(start)
	wg.Wait()
	return answers
}

func TestRebillRetriedWithItsTxnID(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		bought := buy(t, svc, acc.ID, map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[1], "email": "ada@example.com", "txnId": "ch_first"})
		subID := bought.Object(t, "subscription")["id"].(string)
		rebill := checkoutPath(acc.ID, "subscriptions/"+subID+"/rebill")

		renewed := svc.Operator.Post(t, rebill, "", map[string]any{"txnId": "ch_renewal"}).Expect(t, http.StatusCreated)
		for range 2 {
			again := svc.Operator.Post(t, rebill, "", map[string]any{"txnId": "ch_renewal"}).Expect(t, http.StatusOK)
			if again.Object(t, "transaction")["id"] != renewed.Object(t, "transaction")["id"] ||
				again.Object(t, "subscription")["currentPeriodEnd"] != renewed.Object(t, "subscription")["currentPeriodEnd"] ||
				again.Object(t, "subscription")["payments"] != float64(2) {
				t.Fatalf("retried rebill answered %s, first %s", again.Raw, renewed.Raw)
			}
		}
		// Concurrent retries of a new renewal: one period paid.
		answers := concurrently(t, 8, func(int) servicetest.Response {
			return svc.Operator.Post(t, rebill, "", map[string]any{"txnId": "ch_renewal_2"})
		})
		statuses := map[int]int{}
		for _, res := range answers {
			statuses[res.Status]++
		}
		if statuses[http.StatusCreated] != 1 || statuses[http.StatusOK] != 7 {
			t.Fatalf("8 concurrent notifications of a renewal answered %v, want one 201 and seven 200", statuses)
		}
		// A rebill naming the purchase's txnId is that purchase, whatever subscription it names.
		if again := svc.Operator.Post(t, rebill, "", map[string]any{"txnId": "ch_first"}).Expect(t, http.StatusOK); again.Object(t, "transaction")["id"] != bought.Object(t, "transaction")["id"] {
			t.Fatalf("a rebill with the purchase's txnId answered %s", again.Raw)
		}
		// And a purchase naming the renewal's txnId is the renewal.
		again := svc.Operator.Post(t, checkoutPath(acc.ID, "purchases"), "", map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[1],
			"email": "ada@example.com", "txnId": "ch_renewal"}).Expect(t, http.StatusOK)
		if again.Object(t, "transaction")["id"] != renewed.Object(t, "transaction")["id"] || again.Body["activation"] != nil {
			t.Fatalf("a purchase with the renewal's txnId answered %s", again.Raw)
		}
		// A rebill naming a one-time purchase's txnId is that purchase: no subscription to show.
		once := buy(t, svc, acc.ID, map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[0], "email": "bob@example.com", "txnId": "ch_once"})
		again = svc.Operator.Post(t, rebill, "", map[string]any{"txnId": "ch_once"}).Expect(t, http.StatusOK)
		if _, has := again.Body["subscription"]; has || again.Object(t, "transaction")["id"] != once.Object(t, "transaction")["id"] {
			t.Fatalf("a rebill with a one-time purchase's txnId answered %s", again.Raw)
		}
		customer := customerOf(t, svc, acc.Key, bought.Object(t, "customer")["id"].(string))
		subs := customer["subscriptions"].([]any)
		if txns := customer["transactions"].([]any); len(txns) != 3 || len(subs) != 1 || subs[0].(map[string]any)["payments"] != float64(3) {
			t.Fatalf("after a purchase and two renewals notified many times: %d transactions, subscriptions %v", len(txns), subs)
		}
	})
}

// A processor's retried notification of a renewal gets the payment it recorded even when the
// subscription has ended since (decisions.md "Processor transaction ids"): the last installment of
// a split plan completes it, an operator cancels it now or at period end. A 409 would read as a
// refused payment, though it is recorded. A txnId that is new to the account is still refused.
func TestRebillRetriedAfterItsSubscriptionEnded(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		pro := svc.NewProduct(t, acc.ID, proPlan())
		monthly, split := pro.TierIDs[1], pro.TierIDs[2]
		retried := func(t *testing.T, rebill string, first servicetest.Response, txnID string) {
			t.Helper()
			again := svc.Operator.Post(t, rebill, "", map[string]any{"txnId": txnID})
			if again.Status != http.StatusOK || again.Body["transaction"] == nil ||
				again.Object(t, "transaction")["id"] != first.Object(t, "transaction")["id"] {
				t.Fatalf("txnId %s notified again after the subscription ended: %d %s, want 200 with transaction %v",
					txnID, again.Status, again.Raw, first.Object(t, "transaction")["id"])
			}
		}

		t.Run("split plan paid in full", func(t *testing.T) {
			sub := buy(t, svc, acc.ID, map[string]any{"productId": pro.ID, "pricingTierId": split, "email": "split@example.com", "txnId": "ch_split_1"}).
				Object(t, "subscription")["id"].(string)
			rebill := checkoutPath(acc.ID, "subscriptions/"+sub+"/rebill")
			svc.Operator.Post(t, rebill, "", map[string]any{"txnId": "ch_split_2"}).Expect(t, http.StatusCreated)
			last := svc.Operator.Post(t, rebill, "", map[string]any{"txnId": "ch_split_3"}).Expect(t, http.StatusCreated)
			if last.Object(t, "subscription")["status"] != "completed" {
				t.Fatalf("the last installment left %s", last.Raw)
			}
			retried(t, rebill, last, "ch_split_3")
			if again := svc.Operator.Post(t, rebill, "", map[string]any{"txnId": "ch_split_3"}); again.Object(t, "subscription")["status"] != "completed" {
				t.Fatalf("the retried last installment shows %s", again.Raw)
			}
			svc.Operator.Post(t, rebill, "", map[string]any{"txnId": "ch_split_4"}).ExpectError(t, http.StatusConflict)
		})
		for _, atPeriodEnd := range []bool{false, true} {
			t.Run(fmt.Sprintf("cancelled atPeriodEnd %v", atPeriodEnd), func(t *testing.T) {
				sub := buy(t, svc, acc.ID, map[string]any{"productId": pro.ID, "pricingTierId": monthly, "email": fmt.Sprintf("cancel%v@example.com", atPeriodEnd)}).
					Object(t, "subscription")["id"].(string)
				rebill := checkoutPath(acc.ID, "subscriptions/"+sub+"/rebill")
				renewal := fmt.Sprintf("ch_renewal_%v", atPeriodEnd)
				renewed := svc.Operator.Post(t, rebill, "", map[string]any{"txnId": renewal}).Expect(t, http.StatusCreated)
				svc.Operator.Post(t, checkoutPath(acc.ID, "subscriptions/"+sub+"/cancel"), "", map[string]any{"atPeriodEnd": atPeriodEnd}).Expect(t, http.StatusOK)
				retried(t, rebill, renewed, renewal)
				svc.Operator.Post(t, rebill, "", map[string]any{"txnId": renewal + "_next"}).ExpectError(t, http.StatusConflict)
			})
		}
	})
}

// The last installment of a split plan, notified four times on each of two processes at once:
// one records it, the seven others answer it, though most of them find the plan paid off. A
// process that did not record the payment keeps nothing of it, so only the log can tell it
// that the notification is a retry, whichever process it reaches.
func TestConcurrentLastInstallmentsAcrossProcesses(t *testing.T) {
	url := sqldbtest.URL(t, sqldb.Postgres)
	first, second := servicetest.StartOn(t, url, noConfig), servicetest.StartOn(t, url, noConfig)
	acc := first.NewAccount(t)
	pro := first.NewProduct(t, acc.ID, proPlan())
	sub := buy(t, first, acc.ID, map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[2], "email": "ada@example.com", "txnId": "ch_plan_1"}).
		Object(t, "subscription")["id"].(string)
	rebill := checkoutPath(acc.ID, "subscriptions/"+sub+"/rebill")
	first.Operator.Post(t, rebill, "", map[string]any{"txnId": "ch_plan_2"}).Expect(t, http.StatusCreated)
	answers := concurrently(t, 8, func(i int) servicetest.Response {
		return []*servicetest.Service{first, second}[i%2].Operator.Post(t, rebill, "", map[string]any{"txnId": "ch_plan_3"})
	})
	statuses := map[int]int{}
	txns := map[any]bool{}
	for _, res := range answers {
		statuses[res.Status]++
		if res.Status == http.StatusOK || res.Status == http.StatusCreated {
			txns[res.Object(t, "transaction")["id"]] = true
		}
	}
	if statuses[http.StatusCreated] != 1 || statuses[http.StatusOK] != 7 || len(txns) != 1 {
		t.Fatalf("answers by status %v, %d transactions: want one 201, seven 200, one transaction", statuses, len(txns))
	}
	// Later retries, on the process that recorded the payment and on the other, alike.
	for _, svc := range []*servicetest.Service{first, second} {
		if again := svc.Operator.Post(t, rebill, "", map[string]any{"txnId": "ch_plan_3"}).Expect(t, http.StatusOK); !txns[again.Object(t, "transaction")["id"]] {
			t.Fatalf("a later retry answered %s", again.Raw)
		}
	}
}

// noConfig starts a test service as it comes.
func noConfig(*service.Config) {}
