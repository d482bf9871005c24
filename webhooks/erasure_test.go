package webhooks_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// A delivery a dispatcher has in flight when its person is erased: the erasure gives it up
// (failed, "erased") at once, and answers only once that attempt is over, so that after the
// answer nothing carrying the person's data is being sent; no attempt follows it.
func TestErasureWaitsForTheAttemptInFlightAndNoneFollows(t *testing.T) {
	run(t, fast, func(t *testing.T, svc *servicetest.Service) {
		ctx := context.Background()
		acc := svc.NewAccount(t)
		const email = "qzinflight.person@example.com"

		// The receiver holds its first request until released, then fails it (a retry would
		// follow, were the delivery still pending); any later request it records and accepts.
		arrived, release := make(chan struct{}), make(chan struct{})
		var mu sync.Mutex
		var bodies [][]byte
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			body, _ := io.ReadAll(req.Body)
			mu.Lock()
			bodies = append(bodies, body)
			first := len(bodies) == 1
			mu.Unlock()
			if first {
				close(arrived)
				<-release
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusOK)
		}))
		defer rcv.Close()
		subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}})
		contactID := submittedContact(t, svc, acc, email)

		select {
		case <-arrived:
		case <-time.After(10 * time.Second):
			t.Fatal("the delivery was not attempted")
		}
		erased := eraseInBackground(t, svc, acc.ID, contactID)

		// The erasure gives the delivery up while its attempt hangs, and waits for that attempt.
		db := svc.App.DB()
		deadline := time.Now().Add(10 * time.Second)
		for {
			var status, lastError string
			if err := db.Read.QueryRowContext(ctx, `SELECT status, last_error FROM webhook_deliveries WHERE account_id = $1`, acc.ID).Scan(&status, &lastError); err != nil {
				t.Fatal(err)
			}
			if status == "failed" && lastError == "erased" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the delivery is %s (%q) while its person is erased", status, lastError)
			}
			time.Sleep(10 * time.Millisecond)
		}
		select {
		case status := <-erased:
			t.Fatalf("the erasure answered %d while an attempt carrying the person's data was in flight", status)
		default:
		}
		close(release)
		if status := <-erased; status != http.StatusOK {
			t.Fatalf("erase: %d", status)
		}

		// Nothing follows: the delivery is failed, erased, without a body and unclaimed, so no
		// dispatcher takes it again; the receiver got the one attempt made before the erasure.
		var status, lastError, body string
		var claimedUntil int64
		if err := db.Read.QueryRowContext(ctx, `SELECT status, last_error, body, claimed_until FROM webhook_deliveries WHERE account_id = $1`, acc.ID).
			Scan(&status, &lastError, &body, &claimedUntil); err != nil {
			t.Fatal(err)
		}
		if status != "failed" || lastError != "erased" || body != "" || claimedUntil != 0 {
			t.Errorf("after the erasure the delivery is %s (%q), body %q, claimed until %d; want failed, erased, none, 0", status, lastError, body, claimedUntil)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(bodies) != 1 || !bytes.Contains(bodies[0], []byte(email)) {
			t.Errorf("the receiver got %d requests, want the one made before the erasure", len(bodies))
		}
	})
}

// A delivery made before its contact was erased lost its body to the erasure, so its retry is
// refused (409), and the refusal says why: the contact was erased. Its lastError, which the
// refusal of a delivery recorded without a body quotes, is empty for a delivery that had
// succeeded, and the message ended on "cannot be sent: " with nothing after it.
func TestRetryOfADeliveryWhoseContactWasErasedSaysSo(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		base := "/admin/v1/accounts/" + acc.ID
		rcv := newReceiver(t)
		subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"checkout.purchased"}})
		pro := svc.NewProduct(t, acc.ID, map[string]any{"name": "Book", "pricingTiers": []any{map[string]any{"name": "Once", "amount": 1000, "currency": "EUR", "interval": "one_time"}}})
		contact := svc.Operator.Post(t, base+"/checkout/purchases", "", map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[0], "email": "gone@example.com", "name": "Gone Soon"}).
			Expect(t, http.StatusCreated).Object(t, "customer")["contactId"].(string)
		delivery := waitDelivery(t, svc, acc.ID, "succeeded", 10*time.Second)["id"].(string)
		svc.Operator.Post(t, base+"/contacts/"+contact+"/erase", "", map[string]any{}).Expect(t, http.StatusOK)
		msg := svc.Operator.Post(t, base+"/webhook-deliveries/"+delivery+"/retry", "", map[string]any{}).ExpectError(t, http.StatusConflict)
		if msg != "the delivery's contact was erased: its body was dropped and it cannot be sent" {
			t.Fatalf("retry of a delivery whose contact was erased: %q, want it to say the contact was erased", msg)
		}
	})
}

// submittedContact submits email through a new form of acc's and returns the contact the
// submission made.
func submittedContact(t *testing.T, svc *servicetest.Service, acc servicetest.Account, email string) string {
	t.Helper()
	form := svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/forms", "", map[string]any{"name": "Signup",
		"fields": []map[string]any{{"label": "Email", "type": "email", "contactField": "builtin:email", "required": true}}}).
		Expect(t, http.StatusCreated).Object(t, "form")
	fieldID := form["fields"].([]any)[0].(map[string]any)["id"].(string)
	svc.API.Post(t, "/api/v1/forms/"+form["id"].(string)+"/submissions", acc.Key, map[string]any{"values": map[string]any{fieldID: email}}).
		Expect(t, http.StatusCreated)
	contacts := svc.API.Get(t, "/api/v1/contacts?email="+url.QueryEscape(email), acc.Key).Expect(t, http.StatusOK).List(t, "contacts")
	if len(contacts) != 1 {
		t.Fatalf("contacts of %s: %v", email, contacts)
	}
	return contacts[0]["id"].(string)
}

// eraseInBackground asks svc's operator API to erase a contact and returns where the answer's
// status comes (0: no answer).
func eraseInBackground(t *testing.T, svc *servicetest.Service, accountID, contactID string) <-chan int {
	erased := make(chan int, 1)
	client := svc.Operator.HTTPClient(t)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, svc.Operator.URL()+"/admin/v1/accounts/"+accountID+"/contacts/"+contactID+"/erase", nil)
		req.Header.Set("Authorization", "Bearer "+servicetest.AdminToken)
		res, err := client.Do(req)
		if err != nil {
			erased <- 0
			return
		}
		res.Body.Close()
		erased <- res.StatusCode
	}()
	return erased
}
