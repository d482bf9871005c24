package domain

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// A state restored from the one taken after the first k events of a stream, with the rest of
// the events replayed on top, is the aggregate a replay of the whole stream gives: every field,
// unexported ones included, and no pending changes. A field that a state struct forgets makes
// the two differ for some sequence (the comparison is of the whole aggregate), so this fails
// until the state struct carries it.

// script draws the choices of an event sequence from bytes (fuzz input, or seeded random bytes).
type script struct{ data []byte }

func (s *script) pick(n int) int {
	if len(s.data) == 0 {
		return 0
	}
	b := s.data[0]
	s.data = s.data[1:]
	return int(b) % n
}

func (s *script) from(values ...string) string { return values[s.pick(len(values))] }

func (s *script) optional(values ...string) *string {
	if s.pick(2) == 0 {
		return nil
	}
	v := s.from(values...)
	return &v
}

func (s *script) fields(ids ...string) map[string]string {
	switch s.pick(3) {
	case 0:
		return nil
	case 1:
		return map[string]string{}
	}
	out := map[string]string{}
	for range s.pick(3) + 1 {
		out[s.from(ids...)] = s.from("", "x", "a longer value")
	}
	return out
}

func (s *script) time() time.Time {
	zones := []*time.Location{time.UTC, time.FixedZone("", 2*3600), time.FixedZone("CET", 3600)}
	base := time.Date(2025, 1, 31, 9, 0, 0, 0, zones[s.pick(len(zones))])
	return base.Add(time.Duration(s.pick(200)) * 37 * time.Minute).Add(time.Duration(s.pick(1000)) * time.Millisecond)
}

func (s *script) sale() Sale {
	sale := Sale{
		Product:     SaleProduct{ID: "prod_1", Name: s.from("Course", "Book"), InternalName: s.from("", "c-1")},
		Transaction: SaleTransaction{ID: s.from("txn_1", "txn_2"), TxnID: s.from("", "ch_1"), Amount: int64(s.pick(5000)), Currency: "EUR", Status: s.from("paid", "refunded"), Processor: s.from("manual", "stripe"), SubscriptionID: "sub_1"},
		Pricing:     SalePricing{TierIndex: s.pick(3), TierName: s.from("Monthly", "Split"), PricingTierID: "tier_1"},
		Customer:    SaleCustomer{Email: "ann@example.com", Name: s.from("", "Ann"), ContactID: "ct_1"},
		Contact:     SaleContact{ContactID: "ct_1", Email: "ann@example.com", FirstName: s.from("", "Ann"), LastName: s.from("", "Lee")},
	}
	if s.pick(2) == 1 {
		sale.Pricing.BumpIndices, sale.Pricing.Bumps = []int{}, []Bump{}
		if s.pick(2) == 1 {
			sale.Pricing.BumpIndices = []int{0}
			sale.Pricing.Bumps = []Bump{{ID: "bump_1", Index: 0, Name: "Workbook", Amount: 900}}
		}
	}
	return sale
}

// restorable is one Restorable aggregate: how to make it empty, and how to draw one event of
// its stream (any event its Replay handles, in any order: a state must hold whatever the log holds).
type restorable struct {
	name  string
	empty func() Restorable
	event func(s *script) Event
}

var restorables = []restorable{
	{"Contact", func() Restorable { return ContactStream("ct_1") }, func(s *script) Event {
		switch s.pick(7) {
		case 0:
			return ContactCreated{ContactID: "ct_1", AccountID: s.from("acc_1", "acc_2"), Email: s.from("Ann@example.com", "b@x.io"),
				FirstName: s.from("", "Ann"), LastName: s.from("", "Lee"), Phone: s.from("", "+33 1"), CustomFields: s.fields("f1", "f2", "f3")}
		case 1:
			return ContactUpdated{ContactID: "ct_1", FirstName: s.optional("", "Bo"), LastName: s.optional("", "Ng"), Phone: s.optional("", "555"), CustomFields: s.fields("f1", "f2", "f3")}
		case 2:
			return TagApplied{ContactID: "ct_1", TagID: s.from("tag_1", "tag_2", "tag_3", "tag_4"), TagName: "t"}
		case 3:
			return TagRemoved{ContactID: "ct_1", TagID: s.from("tag_1", "tag_2", "tag_3", "tag_4"), TagName: "t"}
		case 4:
			return LeadAssigned{ContactID: "ct_1", LeadID: s.from("lead_1", "lead_2", "lead_3"), CRMID: s.from("crm_1", "crm_2")}
		case 5:
			return EmailQueued{ContactID: "ct_1", TagID: "tag_1", Subject: "Hi", Body: "Welcome"}
		default:
			return CampaignEnrolled{ContactID: "ct_1", TagID: "tag_2", CampaignID: "camp_1"}
		}
	}},
	{"Account", func() Restorable { return AccountStream("acc_1") }, func(s *script) Event {
		switch s.pick(4) {
		case 0:
			return AccountCreated{AccountID: "acc_1", Name: s.from("Acme", "Shop")}
		case 1:
			return APIKeyIssued{AccountID: "acc_1", KeyID: s.from("key_1", "key_2", "key_3"), Name: s.from("", "ci"), Scopes: []Scope{"contacts:read"}, KeyHash: "h"}
		case 2:
			return APIKeyRevoked{AccountID: "acc_1", KeyID: s.from("key_1", "key_2", "key_3", "key_4")}
		default:
			return CustomFieldDefined{AccountID: "acc_1", FieldID: s.from("f1", "f2", "f3"), Name: s.from("Plan", "plan", "Size")}
		}
	}},
	{"Lead", func() Restorable { return LeadStream("lead_1") }, func(s *script) Event {
		switch s.pick(3) {
		case 0:
			return LeadCreated{LeadID: "lead_1", AccountID: "acc_1", CRMID: s.from("crm_1", "crm_2"), StageID: s.from("st_1", "st_2"), ContactID: "ct_1", Title: s.from("", "Deal")}
		case 1:
			return LeadMoved{LeadID: "lead_1", ContactID: "ct_1", CRMID: "crm_1", FromStageID: "st_1", ToStageID: s.from("st_1", "st_2", "st_3")}
		default:
			var amount *int64
			if s.pick(2) == 1 {
				a := int64(s.pick(100000))
				amount = &a
			}
			return LeadUpdated{LeadID: "lead_1", ContactID: "ct_1", Title: s.optional("", "Renewal", "Big deal"), Amount: amount}
		}
	}},
	{"Customer", func() Restorable { return CustomerStream("cus_1") }, func(s *script) Event {
		if s.pick(2) == 0 {
			return CustomerCreated{CustomerID: "cus_1", AccountID: "acc_1", Email: s.from("ann@example.com", "Ann@Example.com"), Name: s.from("", "Ann"), ContactID: "ct_1"}
		}
		return CustomerRenamed{CustomerID: "cus_1", Name: s.from("Ann Lee", "A. Lee")}
	}},
	{"WebhookSubscription", func() Restorable { return WebhookSubscriptionStream("wh_1") }, func(s *script) Event {
		switch s.pick(4) {
		case 0:
			return WebhookSubscribed{SubscriptionID: "wh_1", AccountID: "acc_1", Kind: s.from(WebhookKinds...), URL: "https://example.com/hook",
				Events: []string{"contact.created"}, Filters: WebhookFilters{FormIDs: []string{}}, Secret: s.from("whsec_a", "whsec_b")}
		case 1:
			return WebhookSubscriptionDeleted{SubscriptionID: "wh_1"}
		case 2:
			return WebhookSubscriptionDisabled{SubscriptionID: "wh_1", Reason: "410 Gone"}
		default:
			return WebhookSecretRotated{SubscriptionID: "wh_1", Secret: s.from("whsec_c", "whsec_d"), PreviousSecret: "whsec_a", PreviousValidUntil: s.time()}
		}
	}},
	{"Subscription", func() Restorable { return BillingSubscriptionStream("sub_1") }, func(s *script) Event {
		switch s.pick(5) {
		case 0:
			return SubscriptionStarted{SubscriptionID: "sub_1", AccountID: "acc_1", CustomerID: "cus_1", Interval: s.from(IntervalMonth, IntervalYear, IntervalSplit),
				Installments: s.pick(4), RenewalAmount: int64(s.pick(9000)), StartedAt: s.time(), CurrentPeriodEnd: s.time(), Sale: s.sale()}
		case 1:
			return SubscriptionRenewed{SubscriptionID: "sub_1", TransactionID: "txn_2", Payments: s.pick(12) + 1, CurrentPeriodEnd: s.time(), Sale: s.sale()}
		case 2:
			return SubscriptionCompleted{SubscriptionID: "sub_1", CompletedAt: s.time()}
		case 3:
			return SubscriptionCancelScheduled{AccountID: "acc_1", CustomerID: "cus_1", Sale: s.sale(),
				Subscription: ScheduledSubscription{ID: "sub_1", Status: SubscriptionStatusActive, CancelAtPeriodEnd: s.pick(2) == 1, CurrentPeriodEnd: s.time(), ScheduledAt: s.time()}}
		default:
			return SubscriptionCancelled{AccountID: "acc_1", CustomerID: "cus_1", Sale: s.sale(),
				Subscription: CancelledSubscription{ID: "sub_1", Status: SubscriptionStatusCancelled, CancelledAt: s.time()}}
		}
	}},
	{"Form", func() Restorable { return FormStream("form_1") }, func(s *script) Event {
		fields := []Field{}
		for i := range s.pick(3) {
			fields = append(fields, Field{ID: fmt.Sprintf("fld_%d", i), Label: s.from("Email", "Name"), Type: s.from("email", "text"), ContactField: s.from("", ContactFieldEmail), Required: s.pick(2) == 1})
		}
		tags := []string{}
		for range s.pick(3) {
			tags = append(tags, s.from("tag_1", "tag_2"))
		}
		return FormCreated{FormID: "form_1", AccountID: "acc_1", Name: s.from("Signup", "Survey"), Fields: fields, TagIDs: tags}
	}},
	{"EventType", func() Restorable { return CalendarStream("evt_1") }, func(s *script) Event {
		if s.pick(3) == 0 {
			questions := []Field{}
			for i := range s.pick(3) {
				questions = append(questions, Field{ID: fmt.Sprintf("q_%d", i), Label: s.from("Email", "Name"), Type: s.from("email", "text"), ContactField: s.from("", ContactFieldEmail), Required: s.pick(2) == 1})
			}
			return CalendarCreated{CalendarID: "evt_1", AccountID: "acc_1", Name: s.from("Call", "Demo"), DurationMinutes: s.pick(90) + 1, MeetingURL: s.from("", "https://meet.example.com/x"), Questions: questions}
		}
		start := s.time().UTC().Truncate(time.Millisecond)
		return BookingCreated{BookingID: "bk_1", CalendarID: "evt_1", CalendarName: "Call", AccountID: "acc_1", StartTime: start, EndTime: start.Add(30 * time.Minute),
			Answers: Answers{"q_0": "ann@example.com"}, ContactFields: map[string]any{}}
	}},
}

// stored returns the events as a read of the log gives them: encoded, then decoded.
func stored(t testing.TB, events []Event) []Event {
	t.Helper()
	out := make([]Event, len(events))
	for i, e := range events {
		typ, version, data, err := EncodeEvent(e)
		if err != nil {
			t.Fatal(err)
		}
		if out[i], err = DecodeEvent(typ, version, data); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// checkRestores compares, for every split of the sequence, the restored and replayed aggregate
// with the one a full replay gives.
func checkRestores(t testing.TB, r restorable, events []Event) {
	t.Helper()
	events = stored(t, events)
	replayed := r.empty()
	for _, e := range events {
		replayed.Replay(e)
	}
	for k := 0; k <= len(events); k++ {
		prefix := r.empty()
		for _, e := range events[:k] {
			prefix.Replay(e)
		}
		data, err := prefix.EncodeState()
		if err != nil {
			t.Fatalf("%s: encode after %d events: %v", r.name, k, err)
		}
		restored := r.empty()
		if err := restored.RestoreState(data); err != nil {
			t.Fatalf("%s: restore after %d events: %v", r.name, k, err)
		}
		for _, e := range events[k:] {
			restored.Replay(e)
		}
		if !reflect.DeepEqual(restored, replayed) {
			t.Fatalf("%s: restored after %d of %d events differs from a full replay\nevents:   %#v\nrestored: %#v\nreplayed: %#v", r.name, k, len(events), events, restored, replayed)
		}
		if len(restored.Changes()) != 0 {
			t.Fatalf("%s: a restored aggregate has changes: %#v", r.name, restored.Changes())
		}
	}
}

// sequence draws up to max events from a script.
func sequence(r restorable, s *script, max int) []Event {
	var events []Event
	for len(s.data) > 0 && len(events) < max {
		events = append(events, r.event(s))
	}
	return events
}

func TestRestoredStateEqualsFullReplay(t *testing.T) {
	for _, r := range restorables {
		t.Run(r.name, func(t *testing.T) {
			random := rand.New(rand.NewPCG(1, uint64(len(r.name))))
			for range 150 {
				data := make([]byte, 40+random.IntN(200))
				for i := range data {
					data[i] = byte(random.UintN(256))
				}
				checkRestores(t, r, sequence(r, &script{data: data}, 40))
			}
		})
	}
}

// FuzzRestoredStateEqualsFullReplay explores more sequences: go test -fuzz FuzzRestoredState ./domain/
// (the first byte chooses the aggregate).
func FuzzRestoredStateEqualsFullReplay(f *testing.F) {
	for i := range restorables {
		f.Add([]byte{byte(i), 0, 0, 2, 1, 3, 0, 4, 9, 1, 1, 2, 7, 5, 3, 200, 17, 4, 4, 0, 1})
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		r := restorables[int(data[0])%len(restorables)]
		checkRestores(t, r, sequence(r, &script{data: data[1:]}, 60))
	})
}

// Every Restorable aggregate of the domain is in the table above.
func TestEveryRestorableAggregateIsChecked(t *testing.T) {
	checked := map[reflect.Type]bool{}
	for _, r := range restorables {
		checked[reflect.TypeOf(r.empty())] = true
	}
	for _, agg := range []Aggregate{ContactStream("x"), AccountStream("x"), LeadStream("x"), CustomerStream("x"),
		WebhookSubscriptionStream("x"), BillingSubscriptionStream("x"), CalendarStream("x"), TransactionStream("x"),
		ActivationStream("x"), CRMStream("x"), TagStream("x"), FormStream("x"), ProductStream("x")} {
		if _, ok := agg.(Restorable); ok && !checked[reflect.TypeOf(agg)] {
			t.Errorf("%T is Restorable but not in the restorables table", agg)
		}
	}
}

// The state leaves out the changes a decision recorded: the aggregate restored from it has the
// state those changes made, and no changes of its own.
func TestEncodedStateLeavesOutChanges(t *testing.T) {
	c := ContactStream("ct_1")
	first := "Ann"
	if _, err := c.Upsert("acc_1", "ann@example.com", ContactProfile{FirstName: &first, CustomFields: map[string]string{"f1": "x"}}); err != nil {
		t.Fatal(err)
	}
	c.AddTags([]TagRef{{ID: "tag_1", Name: "Lead"}})
	c.AssignLead("lead_1", "crm_1")
	data, err := c.EncodeState()
	if err != nil {
		t.Fatal(err)
	}
	restored := ContactStream("ct_1")
	if err := restored.RestoreState(data); err != nil {
		t.Fatal(err)
	}
	replayed := ContactStream("ct_1")
	for _, e := range stored(t, c.Changes()) {
		replayed.Replay(e)
	}
	if !reflect.DeepEqual(restored, replayed) {
		t.Fatalf("restored %#v, want %#v", restored, replayed)
	}
}

// A state of another format, or one that does not decode, is refused and changes nothing: the
// caller replays the stream instead.
func TestRestoreRefusesAnUnknownFormat(t *testing.T) {
	for _, r := range restorables {
		for _, c := range []struct {
			data          string
			unknownFormat bool
		}{
			{`{"format": 999, "state": {}}`, true},
			{`{"state": {"exists": true}}`, true},
			{`not json`, true},
			{`{"format": 1, "state": {"exists": "yes"}}`, false},
		} {
			agg := r.empty()
			err := agg.RestoreState([]byte(c.data))
			if err == nil || errors.Is(err, ErrUnknownStateFormat) != c.unknownFormat {
				t.Errorf("%s: restore %s: %v", r.name, c.data, err)
			}
			if !reflect.DeepEqual(agg, r.empty()) {
				t.Errorf("%s: a refused state changed the aggregate: %#v", r.name, agg)
			}
		}
	}
}
