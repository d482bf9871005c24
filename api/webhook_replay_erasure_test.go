package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A replay reads a page of the log, its personal values opened, and records the page's
// deliveries afterwards, in a transaction of its own. Here the erasure of a person of that page
// completes in between, for certain: the replay's second batch has read the log and waits for a
// lock on webhook_replays (PostgreSQL's table locks, hence this store only) when the contact is
// erased. Once the erasure has answered, the outbox holds nothing of the person, and nothing of
// the person is sent, whenever the replay records that batch.
func TestAReplayRecordedAfterAnErasureOfItsPageLeavesNothingOfThePerson(t *testing.T) {
	ctx := context.Background()
	databaseURL := sqldbtest.URL(t, sqldb.Postgres)
	batchDone := make(chan string, 1)
	proceed := make(chan struct{})
	svc := servicetest.StartOn(t, databaseURL, func(c *service.Config) {
		c.AfterReplayBatch = func(id string) {
			select {
			case batchDone <- id:
			default:
			}
			<-proceed
		}
	})
	acc := svc.NewAccount(t)
	rec := newRecorder(t)
	svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, map[string]any{"url": rec.URL, "event": "form.submitted"}).Expect(t, http.StatusCreated)
	hook := onlySubscription(t, svc, acc.Key)
	// More submissions than a replay's batch holds: the person's is in the replay's second batch.
	fillerSubmissions(t, svc, acc.ID, 520)
	const email = "qzreplayed.erasure@example.com"
	contact := submitSignup(t, svc, acc, email)
	rec.waitFor(t, 521)

	answer := make(chan servicetest.Response, 1)
	go func() {
		answer <- svc.API.Post(t, "/api/v1/webhooks/subscriptions/"+hook+"/replay", acc.Key,
			map[string]any{"since": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)})
	}()
	select {
	case <-batchDone:
	case <-time.After(60 * time.Second):
		t.Fatal("the replay committed no batch")
	}
	// The first batch is recorded. Lock webhook_replays, so that the second batch's commit waits
	// (its first statement moves the replay's row on), then let the replay go on. A table lock
	// takes no transaction id: it holds back no reader of the log.
	locker, err := sqldb.Open(ctx, databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close()
	held, err := locker.Write.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback()
	if _, err := held.ExecContext(ctx, `LOCK TABLE webhook_replays IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	close(proceed)
	// The second batch has read its page once its commit waits for the lock.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var waiting int
		if err := locker.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'UPDATE webhook_replays%'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the replay's second batch never waited to commit")
		}
	}

	svc.API.Delete(t, "/api/v1/contacts/"+contact, acc.Key).Expect(t, http.StatusOK)
	if n := outboxRowsHolding(t, svc, email); n != 0 {
		t.Fatalf("right after the erasure answered, %d outbox rows hold the erased email", n)
	}
	sentBefore := len(rec.all())
	if err := held.Rollback(); err != nil {
		t.Fatal(err)
	}
	res := <-answer
	res.Expect(t, http.StatusAccepted)
	if got := res.Object(t, "replay")["count"]; got != float64(521) {
		t.Fatalf("the replay recorded %v deliveries, want 521 (the person's submission with its values null)", got)
	}
	waitForNoPendingDelivery(t, svc, acc.ID)
	if n := outboxRowsHolding(t, svc, email); n != 0 {
		t.Fatalf("the replay recorded after the erasure left %d outbox rows holding the erased email", n)
	}
	for _, r := range rec.all()[sentBefore:] {
		if strings.Contains(string(r.body), email) {
			t.Fatalf("after the erasure answered, delivery %s sent the erased email: %s", r.delivery, r.body)
		}
	}
}

// The same race left to the scheduler, on both stores and through both APIs' replays: the
// erasure starts the moment the replay's first batch is recorded, while the second batch, which
// holds the person's submission, is read and recorded. Once both have answered, no outbox row
// holds the person's email, whichever went first. Whether a round meets the window depends on
// the scheduler (without the fix it failed in one to three rounds of six here, not every run):
// the test above is the one that pins the order; this one is the SQLite side, and a smoke test.
func TestAReplayRacingAnErasureLeavesNothingOfThePerson(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		// The erasure to start after the next batch a replay records.
		erasure := make(chan func(), 1)
		svc := servicetest.Start(t, dialect, func(c *service.Config) {
			c.AfterReplayBatch = func(string) {
				select {
				case erase := <-erasure:
					go erase()
				default:
				}
			}
		})
		for round := range 6 {
			acc := svc.NewAccount(t)
			svc.API.Post(t, "/api/v1/webhooks/subscriptions", acc.Key, map[string]any{"url": sink(t), "event": "form.submitted"}).Expect(t, http.StatusCreated)
			hook := onlySubscription(t, svc, acc.Key)
			fillerSubmissions(t, svc, acc.ID, 500)
			email := fmt.Sprintf("qzraced%d.erasure@example.com", round)
			contact := submitSignup(t, svc, acc, email)
			// Events after the person's, more each round, so that the second batch takes longer.
			fillerSubmissions(t, svc, acc.ID, 100*round)
			erased := make(chan servicetest.Response, 1)
			erasure <- func() { erased <- svc.API.Delete(t, "/api/v1/contacts/"+contact, acc.Key) }
			window := map[string]any{"since": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}
			if round%2 == 0 {
				svc.API.Post(t, "/api/v1/webhooks/subscriptions/"+hook+"/replay", acc.Key, window).Expect(t, http.StatusAccepted)
			} else {
				svc.Operator.Post(t, replayPath(acc.ID, hook), "", window).Expect(t, http.StatusAccepted)
			}
			(<-erased).Expect(t, http.StatusOK)
			if n := outboxRowsHolding(t, svc, email); n != 0 {
				t.Fatalf("round %d (%d events after the person's): %d outbox rows hold the erased email after the erasure and the replay answered",
					round, 100*round, n)
			}
		}
	})
}

// onlySubscription returns the id of the account's only webhook subscription.
func onlySubscription(t *testing.T, svc *servicetest.Service, key string) string {
	t.Helper()
	subs := svc.API.Get(t, "/api/v1/webhooks/subscriptions", key).Expect(t, http.StatusOK).List(t, "subscriptions")
	if len(subs) != 1 {
		t.Fatalf("%d webhook subscriptions, want 1", len(subs))
	}
	return subs[0]["id"].(string)
}

// submitSignup answers a new form of the account with an email, and returns the contact made.
func submitSignup(t *testing.T, svc *servicetest.Service, acc servicetest.Account, email string) string {
	t.Helper()
	form, fields := svc.NewForm(t, acc.ID, "Signup", nil, servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"})
	svc.API.Post(t, "/api/v1/forms/"+form+"/submissions", acc.Key, map[string]any{"values": map[string]any{fields[0]: email}}).Expect(t, http.StatusCreated)
	return contactByEmail(t, svc, acc.Key, email)["id"].(string)
}

// fillerSubmissions appends, in one append, a contact, a form and n submissions of it, each with
// an email of its own (all of that contact, for speed), and waits for the read models.
func fillerSubmissions(t *testing.T, svc *servicetest.Service, accountID string, n int) {
	t.Helper()
	ctx := context.Background()
	field := domain.Field{ID: "fld_email", Label: "Email", Type: "email", ContactField: domain.ContactFieldEmail, Required: true}
	formID := domain.NewID("form")
	contactID := domain.NewID("ct")
	appends := []domain.StreamAppend{
		{StreamID: contactID, Events: []domain.Event{domain.ContactCreated{ContactID: contactID, AccountID: accountID, Email: contactID + "@example.com"}}},
		{StreamID: formID, Events: []domain.Event{domain.FormCreated{FormID: formID, AccountID: accountID, Name: "F",
			TagIDs: []string{}, Fields: []domain.Field{field}}}},
	}
	for i := range n {
		id := domain.NewID("fsub")
		email := fmt.Sprintf("filler%d@example.com", i)
		appends = append(appends, domain.StreamAppend{StreamID: id, Events: []domain.Event{domain.FormSubmitted{
			SubmissionID: id, FormID: formID, FormName: "F", AccountID: accountID, ContactID: contactID, SubmittedAt: time.Now().UTC(),
			Fields:  []domain.SubmittedField{{Field: field, Value: email}},
			Contact: &domain.ContactSnapshot{ContactID: contactID, Email: email, CustomFields: map[string]string{}, CustomFieldsLabeled: []domain.LabeledValue{}},
		}}})
	}
	pos, err := svc.App.Store().Append(ctx, domain.Metadata{AccountID: accountID, Actor: "test"}, appends...)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.App.ReadModels().WaitReadModels(ctx, pos); err != nil {
		t.Fatal(err)
	}
}

// outboxRowsHolding counts the rows of the webhook outbox whose body holds a value.
func outboxRowsHolding(t *testing.T, svc *servicetest.Service, value string) int {
	t.Helper()
	var n int
	if err := svc.App.DB().Read.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM webhook_deliveries WHERE body LIKE $1`,
		"%"+value+"%").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitForNoPendingDelivery waits until no delivery of the account is pending: each was sent or
// given up.
func waitForNoPendingDelivery(t *testing.T, svc *servicetest.Service, accountID string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var pending int
		if err := svc.App.DB().Read.QueryRowContext(context.Background(), `SELECT COUNT(*) FROM webhook_deliveries WHERE account_id = $1 AND status = 'pending'`,
			accountID).Scan(&pending); err != nil {
			t.Fatal(err)
		}
		if pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries still pending", pending)
		}
	}
}
