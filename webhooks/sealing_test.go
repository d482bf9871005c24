package webhooks_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore/eventstoretest"
	"github.com/funnelhq/funnel/infra/sealing"
	"github.com/funnelhq/funnel/infra/sealing/sealingtest"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// Activation tokens are kept sealed with the server key (docs/architecture.md "Secrets"): after
// purchases of a saas_signup product no table of the database holds a token in the clear (the
// log, the outbox, every read model), while the webhooks still hand the tokens over and the
// activation endpoints still find them. Only the deliveries that carry a token are sealed: the
// others stay readable.
func TestActivationTokensAreKeptNowhereInTheClear(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		p := pro(t, svc, acc.ID)
		rcv := newReceiver(t)
		subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": checkoutEvents})

		once := pay(t, svc, acc.ID, "purchases", map[string]any{"productId": p.ID, "pricingTierId": p.TierIDs[0], "email": "ada@example.com"})
		monthly := pay(t, svc, acc.ID, "purchases", map[string]any{"productId": p.ID, "pricingTierId": p.TierIDs[1], "email": "grace@example.com"})
		pay(t, svc, acc.ID, "subscriptions/"+monthly.Object(t, "subscription")["id"].(string)+"/rebill", map[string]any{})
		answered := map[string]map[string]any{}
		for _, bought := range []servicetest.Response{once, monthly} {
			a := bought.Object(t, "activation")
			answered[a["token"].(string)] = a
		}

		// The webhooks hand each token over with its URL, as the purchase answered them.
		types := map[string]int{}
		for _, g := range rcv.waitFor(t, 3, 10*time.Second) {
			env := decode(t, g.body)
			types[env["type"].(string)]++
			if env["type"] != "checkout.purchased" {
				continue
			}
			got := env["data"].(map[string]any)["activation"].(map[string]any)
			want := answered[got["token"].(string)]
			if want == nil || got["url"] != want["url"] || got["expiresAt"] != want["expiresAt"] {
				t.Fatalf("delivered activation %v, answered %v", got, answered)
			}
			delete(answered, got["token"].(string))
		}
		if types["checkout.purchased"] != 2 || types["checkout.rebilled"] != 1 || len(answered) != 0 {
			t.Fatalf("delivered %v; tokens not delivered: %v", types, answered)
		}

		tokens := []string{once.Object(t, "activation")["token"].(string), monthly.Object(t, "activation")["token"].(string)}
		// The activation endpoints find the activation of a token, and complete it.
		for _, token := range tokens {
			svc.API.Get(t, "/api/v1/checkout/activations/"+token, acc.Key).Expect(t, http.StatusOK)
			svc.API.Post(t, "/api/v1/checkout/activations/"+token+"/complete", acc.Key, map[string]any{"externalUserId": "user-1"}).Expect(t, http.StatusOK)
		}

		// The outbox: the purchases' bodies are sealed, the rebill's is its JSON.
		rows, err := svc.App.DB().Read.Query(`SELECT event_type, body, body_sealed FROM webhook_deliveries WHERE account_id = $1`, acc.ID)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var typ, body string
			var sealed int
			if err := rows.Scan(&typ, &body, &sealed); err != nil {
				t.Fatal(err)
			}
			readable := json.Valid([]byte(body))
			if (typ == "checkout.purchased") != (sealed == 1 && strings.HasPrefix(body, "v1.") && !readable) || (sealed == 0 && !readable) {
				t.Errorf("%s delivery stored with body_sealed %d: %.60s", typ, sealed, body)
			}
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}

		// No table holds a token, nor its URL (which holds the token as it is).
		for _, token := range tokens {
			if found := tablesHolding(t, svc.App.DB(), token); len(found) > 0 {
				t.Errorf("the token is stored in the clear in %v", found)
			}
		}
	})
}

// tablesHolding lists the table.column of every column of the database, whatever its type, in
// which some row's text holds s.
func tablesHolding(t *testing.T, db *sqldb.DB, s string) []string {
	t.Helper()
	columnsQuery := `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()`
	contains := `strpos(CAST(%q AS TEXT), $1) > 0`
	if db.Dialect == sqldb.SQLite {
		columnsQuery = `SELECT m.name, c.name FROM sqlite_master m, pragma_table_info(m.name) c WHERE m.type = 'table'`
		contains = `instr(CAST(%q AS TEXT), $1) > 0`
	}
	rows, err := db.Read.Query(columnsQuery)
	if err != nil {
		t.Fatal(err)
	}
	var columns [][2]string
	for rows.Next() {
		var c [2]string
		if err := rows.Scan(&c[0], &c[1]); err != nil {
			t.Fatal(err)
		}
		columns = append(columns, c)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if len(columns) < 50 {
		t.Fatalf("found only %d columns to search: %v", len(columns), columns)
	}
	var found []string
	for _, c := range columns {
		var n int
		if err := db.Read.QueryRow(fmt.Sprintf(`SELECT COUNT(*) FROM %q WHERE `+contains, c[0], c[1]), s).Scan(&n); err != nil {
			t.Fatalf("search %s.%s: %v", c[0], c[1], err)
		}
		if n > 0 {
			found = append(found, c[0]+"."+c[1])
		}
	}
	return found
}

// purchasesTo makes an account with the pro product whose checkout.purchased webhooks go to rcv.
func purchasesTo(t *testing.T, svc *servicetest.Service, rcv *receiver) (servicetest.Account, servicetest.Product) {
	t.Helper()
	acc := svc.NewAccount(t)
	p := pro(t, svc, acc.ID)
	subscribe(t, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"checkout.purchased"}})
	return acc, p
}

// purchasedWith is a purchase of a saas_signup product as a service sealing with sealer records
// it, with a fresh token: the event and the token.
func purchasedWith(t *testing.T, sealer *sealing.Sealer, accountID, productID string) (domain.CheckoutPurchased, string) {
	t.Helper()
	token, err := domain.NewActivationToken()
	if err != nil {
		t.Fatal(err)
	}
	activationID := domain.ActivationIDFor(token)
	sealed, err := sealer.Seal([]byte(token), domain.ActivationTokenSealing(activationID))
	if err != nil {
		t.Fatal(err)
	}
	txn := domain.NewID("txn")
	return domain.CheckoutPurchased{AccountID: accountID, CustomerID: "cus_1", PurchasedAt: time.Now().UTC(),
		Sale: domain.Sale{Product: domain.SaleProduct{ID: productID, Name: "Pro Plan"}, Transaction: domain.SaleTransaction{ID: txn, TxnID: txn,
			Amount: 100, Currency: "USD", Status: domain.TransactionSucceeded, Processor: "stripe"}},
		Activation: &domain.SealedActivationGrant{ActivationID: activationID, SealedToken: sealed, ActivationBaseURL: "https://app.example.com/signup",
			ExpiresAt: time.Now().Add(domain.ActivationTTL).UTC()},
	}, token
}

// deliveredToken is the activation token of a checkout.purchased body.
func deliveredToken(t *testing.T, body []byte) string {
	t.Helper()
	a, _ := decode(t, body)["data"].(map[string]any)["activation"].(map[string]any)
	token, _ := a["token"].(string)
	if token == "" || a["url"] != "https://app.example.com/signup?token="+token {
		t.Fatalf("delivered activation %v", a)
	}
	return token
}

// waitAttempts waits until the account's only delivery was attempted n times, and returns it.
func waitAttempts(t *testing.T, svc *servicetest.Service, accountID string, n int) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		list := deliveries(t, svc, accountID, "")
		if len(list) == 1 && len(list[0]["attempts"].([]any)) == n {
			return list[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries did not reach %d attempts: %v", n, list)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// retry asks the operator API for one more attempt of a delivery now.
func retry(t *testing.T, svc *servicetest.Service, accountID, deliveryID string) servicetest.Response {
	t.Helper()
	return svc.Operator.Post(t, "/admin/v1/accounts/"+accountID+"/webhook-deliveries/"+deliveryID+"/retry", "", nil)
}

// A rotation lists the new key first and the old one after it: what the old key sealed still
// opens (a delivery it sealed in the outbox, a purchase it sealed in the log that is projected
// after the rotation), while the new key seals what comes next.
func TestATokenSealedWithAnOldKeyIsDeliveredAfterARotation(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		url := sqldbtest.URL(t, d)
		oldKey, oldSealer := sealingtest.NewKey(t)
		newKey, newSealer := sealingtest.NewKey(t)
		rcv := newReceiver(t, http.StatusInternalServerError, http.StatusOK)
		svc := servicetest.StartOn(t, url, func(c *service.Config) {
			c.SecretKey = oldKey
			c.WebhookBackoffBase, c.WebhookBackoffCap = time.Hour, time.Hour // the retry waits for the rotation
		})
		acc, p := purchasesTo(t, svc, rcv)
		token := pay(t, svc, acc.ID, "purchases", map[string]any{"productId": p.ID, "pricingTierId": p.TierIDs[0], "email": "ada@example.com"}).
			Object(t, "activation")["token"].(string)
		pending := waitAttempts(t, svc, acc.ID, 1)
		svc.Stop()

		svc = servicetest.StartOn(t, url, func(c *service.Config) { c.SecretKey = newKey + "," + oldKey; fast(c) })
		retry(t, svc, acc.ID, pending["id"].(string)).Expect(t, http.StatusOK)
		if got := deliveredToken(t, rcv.waitFor(t, 2, 10*time.Second)[1].body); got != token {
			t.Fatalf("the delivery sealed with the old key sent token %q, want %q", got, token)
		}

		// A purchase the old key sealed in the log, projected after the rotation.
		old, oldToken := purchasedWith(t, oldSealer, acc.ID, p.ID)
		record(t, svc, acc.ID, domain.StreamAppend{StreamID: old.Transaction.ID, Events: []domain.Event{old}})
		if got := deliveredToken(t, rcv.waitFor(t, 3, 10*time.Second)[2].body); got != oldToken {
			t.Fatalf("the purchase sealed with the old key sent token %q, want %q", got, oldToken)
		}

		// A new purchase is sealed with the new key.
		bought := pay(t, svc, acc.ID, "purchases", map[string]any{"productId": p.ID, "pricingTierId": p.TierIDs[0], "email": "grace@example.com"})
		newToken := bought.Object(t, "activation")["token"].(string)
		if got := deliveredToken(t, rcv.waitFor(t, 4, 10*time.Second)[3].body); got != newToken {
			t.Fatalf("the new purchase sent token %q, want %q", got, newToken)
		}
		recorded, err := svc.App.Store().ReadStream(context.Background(), bought.Object(t, "transaction")["id"].(string))
		if err != nil {
			t.Fatal(err)
		}
		e, err := recorded[0].Decode()
		if err != nil {
			t.Fatal(err)
		}
		sealed := e.(domain.CheckoutPurchased).Activation.SealedToken
		if opened, err := newSealer.Open(sealed, domain.ActivationTokenSealing(domain.ActivationIDFor(newToken))); err != nil || string(opened) != newToken {
			t.Fatalf("the new purchase is not sealed with the new key: %q (%v)", sealed, err)
		}
	})
}

// A purchase whose token no configured key opens (sealed by a process with another key, or by a
// key rotated out or lost) fails its deliveries at once, with the reason, and nothing else: the
// events after it are delivered, and a retry of the failed delivery is refused rather than send
// the payload without its token.
func TestAPurchaseWhoseTokenCannotBeOpenedFailsAlone(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		rcv := newReceiver(t)
		acc, p := purchasesTo(t, svc, rcv)
		_, foreign := sealingtest.NewKey(t)
		unopenable, _ := purchasedWith(t, foreign, acc.ID, p.ID)
		record(t, svc, acc.ID, domain.StreamAppend{StreamID: unopenable.Transaction.ID, Events: []domain.Event{unopenable}})

		failed := waitDelivery(t, svc, acc.ID, "failed", 10*time.Second)
		foreignID := foreign.KeyIDs()[0]
		if msg, _ := failed["lastError"].(string); !strings.HasPrefix(msg, "not sent: its activation token could not be opened with the configured keys (FUNNEL_SECRET_KEY)") ||
			!strings.Contains(msg, "key id "+foreignID) {
			t.Fatalf("failed delivery %v", failed)
		}
		msg := retry(t, svc, acc.ID, failed["id"].(string)).ExpectError(t, http.StatusConflict)
		if !strings.Contains(msg, "recorded without a body") || !strings.Contains(msg, foreignID) {
			t.Fatalf("retry of a delivery without its token: %q", msg)
		}

		// The purchases after it are delivered.
		token := pay(t, svc, acc.ID, "purchases", map[string]any{"productId": p.ID, "pricingTierId": p.TierIDs[0], "email": "ada@example.com"}).
			Object(t, "activation")["token"].(string)
		if got := deliveredToken(t, rcv.waitFor(t, 1, 10*time.Second)[0].body); got != token {
			t.Fatalf("delivered %q, want %q", got, token)
		}
		if n := rcv.count(); n != 1 {
			t.Fatalf("the receiver got %d requests; the failed delivery was sent", n)
		}
	})
}

// A purchase recorded before tokens were sealed (CheckoutPurchased version 1) kept its token in
// the clear in the log: it still produces its webhook, with that token and its URL as recorded,
// and the outbox keeps that body sealed like any other that carries a token.
func TestAVersion1PurchaseStillDeliversItsToken(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		rcv := newReceiver(t)
		acc, p := purchasesTo(t, svc, rcv)

		token, err := domain.NewActivationToken()
		if err != nil {
			t.Fatal(err)
		}
		txn := domain.NewID("txn")
		v1 := map[string]any{"accountId": acc.ID, "customerId": "cus_1", "purchasedAt": "2025-01-31T10:00:00Z",
			"product":     map[string]any{"id": p.ID, "name": "Pro Plan", "internalName": "pro-2030"},
			"transaction": map[string]any{"id": txn, "txnId": txn, "amount": 49900, "currency": "USD", "status": "succeeded", "processor": "stripe"},
			"activation":  map[string]any{"token": token, "url": "https://app.example.com/signup?token=" + token, "expiresAt": "2025-02-07T10:00:00Z"}}
		pos := appendAsVersion1(t, svc, acc.ID, txn, v1)
		if err := svc.App.ReadModels().WaitReadModels(context.Background(), pos); err != nil {
			t.Fatal(err)
		}

		env := decode(t, rcv.waitFor(t, 1, 10*time.Second)[0].body)
		a := env["data"].(map[string]any)["activation"].(map[string]any)
		if env["type"] != "checkout.purchased" || a["token"] != token || a["url"] != "https://app.example.com/signup?token="+token || a["expiresAt"] != "2025-02-07T10:00:00.000Z" {
			t.Fatalf("delivered %v", env)
		}
		var sealed int
		if err := svc.App.DB().Read.QueryRow(`SELECT body_sealed FROM webhook_deliveries WHERE account_id = $1`, acc.ID).Scan(&sealed); err != nil || sealed != 1 {
			t.Fatalf("body_sealed = %d, %v", sealed, err)
		}
		// Its token stays where it was recorded (the log is never rewritten), and nowhere else.
		if found := tablesHolding(t, svc.App.DB(), token); len(found) != 1 || found[0] != "events.data" {
			t.Fatalf("the version 1 token is stored in %v, want events.data alone", found)
		}
	})
}

// appendAsVersion1 appends a CheckoutPurchased of schema version 1 as a binary from before
// sealing did: at the next position, taken as an append takes it. It returns the position.
func appendAsVersion1(t *testing.T, svc *servicetest.Service, accountID, transactionID string, data map[string]any) int64 {
	t.Helper()
	ctx := context.Background()
	encoded, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := json.Marshal(domain.Metadata{AccountID: accountID, Actor: string(domain.OperatorActor)})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := svc.App.DB().Write.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	pos := eventstoretest.TakePosition(t, tx, svc.App.DB().Dialect)
	if _, err := tx.ExecContext(ctx, `INSERT INTO events (position, event_id, stream_id, version, type, schema_version, occurred_at, account_id, contact_id, subscription_id, data, metadata)
		VALUES ($1, $2, $3, 1, 'CheckoutPurchased', 1, $4, $5, NULL, NULL, $6, $7)`,
		pos, uuid.NewString(), transactionID, time.Now().UnixMilli(), accountID, string(encoded), string(meta)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return pos
}

// An embedded service makes its key file beside the database on its first start, readable by
// its owner only, and keeps using it: a restart opens what it sealed before. A lost key file
// is replaced by a new key, and what the lost one sealed fails to send, with the reason, while
// new purchases are delivered once the subscription's secret, sealed with the lost key too, is
// rotated.
func TestTheKeyFileBesideASQLiteDatabase(t *testing.T) {
	url := sqldbtest.URL(t, sqldb.SQLite)
	keyFile := strings.TrimPrefix(url, "sqlite:") + ".key"
	slow := func(c *service.Config) { c.WebhookBackoffBase, c.WebhookBackoffCap = time.Hour, time.Hour }
	// The purchase's first attempt fails, its retry after the restart succeeds; the second
	// purchase's first attempt fails; then every attempt succeeds.
	rcv := newReceiver(t, http.StatusInternalServerError, http.StatusOK, http.StatusInternalServerError, http.StatusOK)
	svc := servicetest.StartOn(t, url, slow)
	info, err := os.Stat(keyFile)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file %s: %v, %v", keyFile, info, err)
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	acc, p := purchasesTo(t, svc, rcv)
	buy := func(svc *servicetest.Service, email string) string {
		return pay(t, svc, acc.ID, "purchases", map[string]any{"productId": p.ID, "pricingTierId": p.TierIDs[0], "email": email}).
			Object(t, "activation")["token"].(string)
	}
	token := buy(svc, "ada@example.com")
	first := waitAttempts(t, svc, acc.ID, 1)
	svc.Stop()

	// Restarted with its key file: the delivery sealed before opens, the token still works.
	svc = servicetest.StartOn(t, url, slow)
	if again, err := os.ReadFile(keyFile); err != nil || string(again) != string(key) {
		t.Fatalf("the key file changed at a restart: %v", err)
	}
	retry(t, svc, acc.ID, first["id"].(string)).Expect(t, http.StatusOK)
	if got := deliveredToken(t, rcv.waitFor(t, 2, 10*time.Second)[1].body); got != token {
		t.Fatalf("delivered %q after the restart, want %q", got, token)
	}
	svc.API.Get(t, "/api/v1/checkout/activations/"+token, acc.Key).Expect(t, http.StatusOK)

	buy(svc, "grace@example.com")
	rcv.waitFor(t, 3, 10*time.Second)
	var second string
	if err := svc.App.DB().Read.QueryRow(`SELECT id FROM webhook_deliveries WHERE account_id = $1 AND status = 'pending'`, acc.ID).Scan(&second); err != nil {
		t.Fatal(err)
	}
	svc.Stop()

	// The key file is lost: a new key is made, and the delivery the old one sealed cannot be sent.
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	svc = servicetest.StartOn(t, url, fast)
	if again, err := os.ReadFile(keyFile); err != nil || string(again) == string(key) {
		t.Fatalf("no new key file after the old one was lost: %v", err)
	}
	retry(t, svc, acc.ID, second).Expect(t, http.StatusOK)
	var status, lastError string
	deadline := time.Now().Add(10 * time.Second)
	for status != "failed" && time.Now().Before(deadline) {
		if err := svc.App.DB().Read.QueryRow(`SELECT status, last_error FROM webhook_deliveries WHERE id = $1`, second).Scan(&status, &lastError); err != nil && err != sql.ErrNoRows {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status != "failed" || !strings.HasPrefix(lastError, "not sent: its body could not be opened with the configured keys (FUNNEL_SECRET_KEY)") {
		t.Fatalf("the delivery sealed with the lost key: %s, %q", status, lastError)
	}
	// The subscription's signing secret was sealed with the lost key too: nothing can be signed
	// until the operator rotates it, which seals a new one with the new key.
	var subID string
	if err := svc.App.DB().Read.QueryRow(`SELECT id FROM webhook_subscriptions WHERE account_id = $1`, acc.ID).Scan(&subID); err != nil {
		t.Fatal(err)
	}
	svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/webhooks/"+subID+"/rotate-secret", "", nil).Expect(t, http.StatusOK)
	newToken := buy(svc, "linus@example.com")
	if got := deliveredToken(t, rcv.waitFor(t, 4, 10*time.Second)[3].body); got != newToken {
		t.Fatalf("delivered %q after the key was lost, want %q", got, newToken)
	}
	if n := rcv.count(); n != 4 {
		t.Fatalf("the receiver got %d requests, want 4: the delivery sealed with the lost key was sent", n)
	}
}
