package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

func TestMain(m *testing.M) { servicetest.Main(m) }

// fast is a retry schedule that runs ten attempts in well under a second.
func fast(c *service.Config) {
	c.WebhookBackoffBase = 10 * time.Millisecond
	c.WebhookBackoffCap = 80 * time.Millisecond
}

// run runs fn on a fresh service of each storage mode, configured by configure.
func run(t *testing.T, configure func(*service.Config), fn func(t *testing.T, svc *servicetest.Service)) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) { fn(t, servicetest.Start(t, d, configure)) })
}

// received is one request a receiver got.
type received struct {
	at     time.Time
	header http.Header
	body   []byte
}

// receiver is a real HTTP server on loopback that answers with the statuses it is given, in turn
// (the last one repeats), and records every request. Each body it gets must conform to the
// integration API's OpenAPI document (servicetest.CheckWebhook).
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	got      []received
	statuses []int
	headers  map[string]string
	notify   chan struct{}
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses, notify: make(chan struct{}, 1000)}
	if len(r.statuses) == 0 {
		r.statuses = []int{http.StatusOK}
	}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		servicetest.CheckWebhook(t, req.Header, body)
		r.mu.Lock()
		r.got = append(r.got, received{at: time.Now(), header: req.Header.Clone(), body: body})
		status := r.statuses[min(len(r.got), len(r.statuses))-1]
		for k, v := range r.headers {
			w.Header().Set(k, v)
		}
		r.mu.Unlock()
		w.WriteHeader(status)
		r.notify <- struct{}{}
	}))
	t.Cleanup(r.Close)
	return r
}

// waitFor waits until the receiver got n requests, and returns them.
func (r *receiver) waitFor(t *testing.T, n int, within time.Duration) []received {
	t.Helper()
	deadline := time.After(within)
	for {
		r.mu.Lock()
		got := append([]received(nil), r.got...)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-r.notify:
		case <-deadline:
			t.Fatalf("receiver got %d requests, want %d", len(got), n)
		}
	}
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// byDelivery counts the requests the receiver got for each delivery (X-Service-Delivery).
func (r *receiver) byDelivery() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := map[string]int{}
	for _, g := range r.got {
		n[g.header.Get("X-Service-Delivery")]++
	}
	return n
}

// aheadClock runs with time.Now, and a test moves it forward, never back: the clock of the
// webhook retry schedule (service.Config.WebhookNow), so that a retry due in an hour falls due
// without the test waiting for it.
type aheadClock struct{ ahead atomic.Int64 }

func (c *aheadClock) Now() time.Time { return time.Now().Add(time.Duration(c.ahead.Load())) }

// reach moves the clock forward until it reads at least at.
func (c *aheadClock) reach(at time.Time) {
	for {
		was := c.ahead.Load()
		need := int64(time.Until(at))
		if need <= was || c.ahead.CompareAndSwap(was, need) {
			return
		}
	}
}

// timeOf reads a timestamp of an API answer.
func timeOf(t *testing.T, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("not a timestamp: %v", v)
	}
	return at
}

// record appends events to the log as the commands of forms and scheduling do, and waits until
// the read models (the webhook projector among them) applied them.
func record(t *testing.T, svc *servicetest.Service, accountID string, appends ...domain.StreamAppend) {
	t.Helper()
	ctx := context.Background()
	pos, err := svc.App.Store().Append(ctx, domain.Metadata{AccountID: accountID, Actor: "test"}, appends...)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	if err := svc.App.ReadModels().WaitReadModels(ctx, pos); err != nil {
		t.Fatal(err)
	}
}

// contactOfRecords makes sure the contact that submit's and book's records name exists: the
// store keeps a person's key by the contact's first event. It is created in an account of its
// own, which no subscription belongs to, so that no test's receiver sees it.
func contactOfRecords(t *testing.T, svc *servicetest.Service, contactID string) {
	t.Helper()
	ctx := context.Background()
	if events, err := svc.App.Store().ReadStream(ctx, contactID); err != nil || len(events) > 0 {
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	created := domain.ContactCreated{ContactID: contactID, AccountID: "acc_records", Email: contactID + "@example.com"}
	_, err := svc.App.Store().Append(ctx, domain.Metadata{AccountID: "acc_records", Actor: "test"},
		domain.StreamAppend{StreamID: contactID, Events: []domain.Event{created}})
	if err != nil && !errors.Is(err, domain.ErrWrongVersion) { // another test created it first
		t.Fatalf("create %s: %v", contactID, err)
	}
}

// newForm defines a form of the account and returns its id.
func newForm(t *testing.T, svc *servicetest.Service, accountID, name string) string {
	id := domain.NewID("form")
	record(t, svc, accountID, domain.StreamAppend{StreamID: id, Events: []domain.Event{domain.FormCreated{
		FormID: id, AccountID: accountID, Name: name, TagIDs: []string{},
		Fields: []domain.Field{{ID: "fld_email", Label: "Email", Type: "email", ContactField: domain.ContactFieldEmail, Required: true}},
	}}})
	return id
}

// newCalendar defines an event type of the account and returns its id.
func newCalendar(t *testing.T, svc *servicetest.Service, accountID, name string) string {
	id := domain.NewID("evt")
	record(t, svc, accountID, domain.StreamAppend{StreamID: id, Events: []domain.Event{domain.CalendarCreated{
		CalendarID: id, AccountID: accountID, Name: name, DurationMinutes: 30, MeetingURL: "https://meet.example.com/x", Questions: []domain.Field{},
	}}})
	return id
}

// submit records a submission of a form and returns the event id the webhook envelope carries.
func submit(t *testing.T, svc *servicetest.Service, accountID, formID, email string) string {
	t.Helper()
	sub := domain.NewID("fsub")
	contactOfRecords(t, svc, "ct_x")
	record(t, svc, accountID, domain.StreamAppend{StreamID: sub, Events: []domain.Event{domain.FormSubmitted{
		SubmissionID: sub, FormID: formID, FormName: "Form", AccountID: accountID, ContactID: "ct_x", SubmittedAt: time.Now().UTC(),
		Fields:  []domain.SubmittedField{{Field: domain.Field{ID: "fld_email", Label: "Email", Type: "email", ContactField: domain.ContactFieldEmail, Required: true}, Value: email}},
		Contact: &domain.ContactSnapshot{ContactID: "ct_x", Email: email, CustomFields: map[string]string{}, CustomFieldsLabeled: []domain.LabeledValue{}},
	}}})
	events, err := svc.App.Store().ReadStream(context.Background(), sub)
	if err != nil || len(events) != 1 {
		t.Fatalf("read submission: %v", err)
	}
	return events[0].ID
}

// book records a booking of a calendar.
func book(t *testing.T, svc *servicetest.Service, accountID, calendarID, email string) {
	t.Helper()
	start := time.Now().Add(24 * time.Hour).UTC()
	contactOfRecords(t, svc, "ct_y")
	record(t, svc, accountID, domain.StreamAppend{StreamID: calendarID, ExpectedVersion: domain.AnyVersion, Events: []domain.Event{domain.BookingCreated{
		BookingID: domain.NewID("bkg"), CalendarID: calendarID, CalendarName: "Call", AccountID: accountID, ContactID: "ct_y",
		StartTime: start, EndTime: start.Add(30 * time.Minute), MeetingURL: "https://meet.example.com/x",
		Answers: domain.Answers{}, ContactFields: map[string]any{domain.ContactFieldEmail: email},
		Contact: &domain.ContactSnapshot{ContactID: "ct_y", Email: email},
	}}})
}

// subscribe creates a custom webhook through the operator API and returns its id and secret.
func subscribe(t *testing.T, svc *servicetest.Service, accountID string, body map[string]any) (string, string) {
	t.Helper()
	res := svc.Operator.Post(t, "/admin/v1/accounts/"+accountID+"/webhooks", "", body).Expect(t, http.StatusCreated)
	hook := res.Object(t, "webhook")
	return hook["id"].(string), hook["secret"].(string)
}

// deliveries lists an account's deliveries through the operator API.
func deliveries(t *testing.T, svc *servicetest.Service, accountID, query string) []map[string]any {
	t.Helper()
	return svc.Operator.Get(t, "/admin/v1/accounts/"+accountID+"/webhook-deliveries"+query, "").Expect(t, http.StatusOK).List(t, "deliveries")
}

// waitDelivery waits until the account's only delivery reached a status, and returns it.
func waitDelivery(t *testing.T, svc *servicetest.Service, accountID, status string, within time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		list := deliveries(t, svc, accountID, "")
		if len(list) == 1 && list[0]["status"] == status {
			return list[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries did not reach %s: %v", status, list)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func decode(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body is not JSON: %s", body)
	}
	return m
}
