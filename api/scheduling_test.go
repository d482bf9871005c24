package api_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// slotBase is a whole hour a week ahead: far enough in the future for any test run.
var slotBase = time.Now().UTC().Add(7 * 24 * time.Hour).Truncate(time.Hour)

// futureSlot is the start of the n-th hour after slotBase, as a client sends it.
func futureSlot(n int) string { return slotBase.Add(time.Duration(n) * time.Hour).Format(time.RFC3339) }

func TestEventTypesListAndGet(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		intro, q := svc.NewEventType(t, acc.ID, "Intro call", 30,
			servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email", "required": true},
			servicetest.Field{"label": "Topic", "type": "textarea"},
		)
		demo := svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/event-types", "", map[string]any{"name": "Demo", "durationMinutes": 60, "questions": []any{}}).
			Expect(t, http.StatusCreated).Object(t, "eventType")
		foreign, _ := svc.NewEventType(t, other.ID, "Theirs", 15)

		list := svc.API.Get(t, "/api/v1/scheduling/event-types", acc.Key).Expect(t, http.StatusOK).List(t, "eventTypes")
		if len(list) != 2 || list[0]["id"] != intro || list[1]["id"] != demo["id"] {
			t.Fatalf("event types = %v", list)
		}
		if list[1]["meetingUrl"] != nil || len(list[1]["questions"].([]any)) != 0 {
			t.Fatalf("event type without meetingUrl or questions = %v", list[1])
		}
		got := svc.API.Get(t, "/api/v1/scheduling/event-types/"+intro, acc.Key).Expect(t, http.StatusOK).Object(t, "eventType")
		questions := got["questions"].([]any)
		if got["name"] != "Intro call" || got["durationMinutes"] != float64(30) || got["meetingUrl"] != "https://meet.example.com/Intro%20call" ||
			got["createdAt"] == nil || len(questions) != 2 {
			t.Fatalf("event type = %v", got)
		}
		first := questions[0].(map[string]any)
		if first["id"] != q[0] || !strings.HasPrefix(q[0], "q_") || first["label"] != "Email" || first["type"] != "email" ||
			first["contactField"] != "builtin:email" || first["required"] != true {
			t.Fatalf("question = %v", first)
		}
		page := svc.API.Get(t, "/api/v1/scheduling/event-types?limit=1", acc.Key).Expect(t, http.StatusOK)
		if l := svc.API.Get(t, "/api/v1/scheduling/event-types?limit=1&cursor="+page.Body["nextCursor"].(string), acc.Key).Expect(t, http.StatusOK).List(t, "eventTypes"); len(l) != 1 || l[0]["id"] != demo["id"] {
			t.Fatalf("second page = %v", l)
		}
		svc.API.Get(t, "/api/v1/scheduling/event-types/"+foreign, acc.Key).ExpectError(t, http.StatusForbidden)
		svc.API.Get(t, "/api/v1/scheduling/event-types/evt_doesnotexist", acc.Key).ExpectError(t, http.StatusNotFound)
	})
}

func TestOperatorCreateEventType(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		base := "/admin/v1/accounts/" + acc.ID + "/event-types"
		et := svc.Operator.Post(t, base, "", map[string]any{"name": "Call", "durationMinutes": 45, "meetingUrl": "https://meet.example.com/x",
			"questions": []any{map[string]any{"label": "Email", "type": "email", "contactField": "builtin:email"}}}).Expect(t, http.StatusCreated).Object(t, "eventType")
		if !strings.HasPrefix(et["id"].(string), "evt_") || et["durationMinutes"] != float64(45) || et["meetingUrl"] != "https://meet.example.com/x" {
			t.Fatalf("event type = %v", et)
		}
		cases := []struct {
			name string
			body map[string]any
			want string
		}{
			{"no name", map[string]any{"durationMinutes": 30}, "name"},
			{"no duration", map[string]any{"name": "X"}, "durationMinutes"},
			{"duration too long", map[string]any{"name": "X", "durationMinutes": 24*60 + 1}, "durationMinutes"},
			{"duration not a number", map[string]any{"name": "X", "durationMinutes": "30"}, "durationMinutes"},
			{"meetingUrl not http", map[string]any{"name": "X", "durationMinutes": 30, "meetingUrl": "ftp://files.example.com"}, "meetingUrl"},
			{"meetingUrl relative", map[string]any{"name": "X", "durationMinutes": 30, "meetingUrl": "/room"}, "meetingUrl"},
			{"question type", map[string]any{"name": "X", "durationMinutes": 30, "questions": []any{map[string]any{"label": "A", "type": "file"}}}, "type"},
			{"question contactField", map[string]any{"name": "X", "durationMinutes": 30, "questions": []any{map[string]any{"label": "A", "type": "text", "contactField": "custom:cf_nope"}}}, "contactField"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				msg := svc.Operator.Post(t, base, "", tc.body).ExpectError(t, http.StatusBadRequest)
				if !strings.Contains(msg, tc.want) {
					t.Fatalf("message %q does not mention %q", msg, tc.want)
				}
			})
		}
		if l := svc.Operator.Get(t, base, "").Expect(t, http.StatusOK).List(t, "eventTypes"); len(l) != 1 {
			t.Fatalf("refused event types were created: %v", l)
		}
		svc.Operator.Post(t, "/admin/v1/accounts/acc_nope/event-types", "", map[string]any{"name": "X", "durationMinutes": 30}).ExpectError(t, http.StatusNotFound)
	})
}

func TestBookEvent(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		callID, q := svc.NewEventType(t, acc.ID, "Call", 30,
			servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email", "required": true},
			servicetest.Field{"label": "Name", "type": "text", "contactField": "builtin:fullName"},
			servicetest.Field{"label": "Notes", "type": "textarea"},
		)
		demoID, _ := svc.NewEventType(t, acc.ID, "Demo", 60)
		foreign, _ := svc.NewEventType(t, other.ID, "Theirs", 30)
		path := "/api/v1/scheduling/" + callID + "/bookings"
		book := func(start string, answers map[string]any) servicetest.Response {
			return svc.API.Post(t, path, acc.Key, map[string]any{"startTime": start, "answers": answers})
		}

		res := svc.API.Post(t, path, acc.Key, map[string]any{"startTime": futureSlot(0), "timezone": "Europe/Paris",
			"answers": map[string]any{q[0]: "Booker@Example.com", q[1]: "Katherine Johnson", q[2]: "About orbits"}}).Expect(t, http.StatusCreated)
		b := res.Object(t, "booking")
		if res.Body["success"] != true || !strings.HasPrefix(b["id"].(string), "bkg_") || b["eventTypeId"] != callID ||
			b["when"] != slotBase.Format("2006-01-02T15:04:05.000Z") || b["endTime"] != slotBase.Add(30*time.Minute).Format("2006-01-02T15:04:05.000Z") ||
			b["meetingUrl"] != "https://meet.example.com/Call" {
			t.Fatalf("booking = %v", b)
		}
		contactID := b["contactId"].(string)
		c := svc.API.Get(t, "/api/v1/contacts/"+contactID, acc.Key).Expect(t, http.StatusOK).Object(t, "contact")
		if c["email"] != "Booker@Example.com" || c["firstName"] != "Katherine" || c["lastName"] != "Johnson" {
			t.Fatalf("contact = %v", c)
		}

		// An offset start is the same instant in UTC; the slot right after the first is free.
		next := slotBase.Add(30 * time.Minute).In(time.FixedZone("", 2*3600)).Format(time.RFC3339)
		if got := book(next, map[string]any{q[0]: "second@example.com"}).Expect(t, http.StatusCreated).Object(t, "booking"); got["when"] != slotBase.Add(30*time.Minute).Format("2006-01-02T15:04:05.000Z") {
			t.Fatalf("offset booking = %v", got)
		}
		// Another calendar is booked independently, and without an email question there is no contact.
		anon := svc.API.Post(t, "/api/v1/scheduling/"+demoID+"/bookings", acc.Key, map[string]any{"startTime": futureSlot(0)}).Expect(t, http.StatusCreated).Object(t, "booking")
		if v, has := anon["contactId"]; !has || v != nil {
			t.Fatalf("booking without an email = %v, want contactId null", anon)
		}

		overlap := slotBase.Add(15 * time.Minute).Format(time.RFC3339)
		cases := []struct {
			name   string
			path   string
			body   any
			status int
			want   string
		}{
			{"overlapping booking", path, map[string]any{"startTime": overlap, "answers": map[string]any{q[0]: "late@example.com"}}, http.StatusConflict, "overlaps"},
			{"start in the past", path, map[string]any{"startTime": time.Now().Add(-time.Hour).Format(time.RFC3339), "answers": map[string]any{q[0]: "past@example.com"}}, http.StatusBadRequest, "startTime"},
			{"start beyond ten years", path, map[string]any{"startTime": time.Now().AddDate(11, 0, 0).Format(time.RFC3339), "answers": map[string]any{q[0]: "bad@example.com"}}, http.StatusBadRequest, "startTime"},
			{"start at the end of year 9999", path, map[string]any{"startTime": "9999-12-31T23:30:00Z", "answers": map[string]any{q[0]: "bad@example.com"}}, http.StatusBadRequest, "startTime"},
			{"start not a timestamp", path, map[string]any{"startTime": "tomorrow at 10", "answers": map[string]any{q[0]: "bad@example.com"}}, http.StatusBadRequest, "startTime"},
			{"start without a zone", path, map[string]any{"startTime": "2031-01-01T10:00:00", "answers": map[string]any{q[0]: "bad@example.com"}}, http.StatusBadRequest, "startTime"},
			{"no start", path, map[string]any{"answers": map[string]any{q[0]: "bad@example.com"}}, http.StatusBadRequest, "startTime"},
			{"unknown timezone", path, map[string]any{"startTime": futureSlot(5), "timezone": "Mars/Olympus", "answers": map[string]any{q[0]: "bad@example.com"}}, http.StatusBadRequest, "timezone"},
			{"unknown question", path, map[string]any{"startTime": futureSlot(5), "answers": map[string]any{q[0]: "bad@example.com", "q_nope": "x"}}, http.StatusBadRequest, "q_nope"},
			{"required answer missing", path, map[string]any{"startTime": futureSlot(5), "answers": map[string]any{q[1]: "No Email"}}, http.StatusBadRequest, q[0]},
			{"answers not an object", path, map[string]any{"startTime": futureSlot(5), "answers": "x"}, http.StatusBadRequest, "answers"},
			{"calendar of another account", "/api/v1/scheduling/" + foreign + "/bookings", map[string]any{"startTime": futureSlot(5)}, http.StatusForbidden, "another account"},
			{"unknown calendar", "/api/v1/scheduling/evt_doesnotexist/bookings", map[string]any{"startTime": futureSlot(5)}, http.StatusNotFound, "event type"},
			{"not a calendar id", "/api/v1/scheduling/" + contactID + "/bookings", map[string]any{"startTime": futureSlot(5)}, http.StatusNotFound, "event type"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				msg := svc.API.Post(t, tc.path, acc.Key, tc.body).ExpectError(t, tc.status)
				if !strings.Contains(msg, tc.want) {
					t.Fatalf("message %q does not mention %q", msg, tc.want)
				}
			})
		}
		for _, email := range []string{"late@example.com", "past@example.com", "bad@example.com"} {
			if c := contactByEmail(t, svc, acc.Key, email); c != nil {
				t.Fatalf("a refused booking created contact %v", c)
			}
		}
		bookings := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/event-types/"+callID+"/bookings", "").Expect(t, http.StatusOK).List(t, "bookings")
		if len(bookings) != 2 || bookings[0]["when"] != slotBase.Add(30*time.Minute).Format("2006-01-02T15:04:05.000Z") || bookings[1]["id"] != b["id"] {
			t.Fatalf("bookings (newest first) = %v", bookings)
		}
		if bookings[1]["timezone"] != "Europe/Paris" || bookings[1]["answers"].(map[string]any)[q[2]] != "About orbits" {
			t.Fatalf("stored booking = %v", bookings[1])
		}
		svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/event-types/"+foreign+"/bookings", "").ExpectError(t, http.StatusForbidden)
	})
}

// Twenty clients race for one slot: exactly one gets it, the others get 409, and the log holds
// one booking and none of the losers' contacts.
func TestConcurrentBookingsOfOneSlot(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		eventTypeID, q := svc.NewEventType(t, acc.ID, "Popular", 30, servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email", "required": true})
		const n = 20
		statuses := make([]int, n)
		emails := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			emails[i] = "racer" + string(rune('a'+i)) + "@example.com"
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := svc.API.Post(t, "/api/v1/scheduling/"+eventTypeID+"/bookings", acc.Key, map[string]any{"startTime": futureSlot(3), "answers": map[string]any{q[0]: emails[i]}})
				statuses[i] = res.Status
			}()
		}
		wg.Wait()
		won, lost := 0, 0
		winner := ""
		for i, s := range statuses {
			switch s {
			case http.StatusCreated:
				won++
				winner = emails[i]
			case http.StatusConflict:
				lost++
			default:
				t.Errorf("request %d answered %d", i, s)
			}
		}
		if won != 1 || lost != n-1 {
			t.Fatalf("%d bookings succeeded and %d conflicted, want 1 and %d", won, lost, n-1)
		}
		bookings := svc.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/event-types/"+eventTypeID+"/bookings", "").Expect(t, http.StatusOK).List(t, "bookings")
		if len(bookings) != 1 {
			t.Fatalf("%d bookings in the read model", len(bookings))
		}
		for _, email := range emails {
			c := contactByEmail(t, svc, acc.Key, email)
			if email != winner {
				if c != nil {
					t.Fatalf("a losing booking left contact %v", c)
				}
				continue
			}
			if counts := countTypes(history(t, svc, acc.ID, c["id"].(string))); counts["BookingCreated"] != 1 {
				t.Fatalf("winner's history = %v", counts)
			}
		}
	})
}

// Two processes on one PostgreSQL database race for one slot: nothing serializes them but the
// calendar stream's expected version, and still exactly one booking is appended.
func TestConcurrentBookingsAcrossProcesses(t *testing.T) {
	url := sqldbtest.URL(t, sqldb.Postgres)
	first := servicetest.StartOn(t, url, func(*service.Config) {})
	second := servicetest.StartOn(t, url, func(*service.Config) {})
	acc := first.NewAccount(t)
	eventTypeID, _ := first.NewEventType(t, acc.ID, "Shared", 30)
	const perProcess = 10
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for _, svc := range []*servicetest.Service{first, second} {
		for range perProcess {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := svc.API.Post(t, "/api/v1/scheduling/"+eventTypeID+"/bookings", acc.Key, map[string]any{"startTime": futureSlot(1)})
				mu.Lock()
				statuses[res.Status]++
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	if statuses[http.StatusCreated] != 1 || statuses[http.StatusConflict] != 2*perProcess-1 {
		t.Fatalf("statuses = %v, want one 201 and the rest 409", statuses)
	}
	var bookings []map[string]any
	deadline := time.Now().Add(5 * time.Second)
	for { // the other process's read model catches up by polling the log
		bookings = first.Operator.Get(t, "/admin/v1/accounts/"+acc.ID+"/event-types/"+eventTypeID+"/bookings", "").Expect(t, http.StatusOK).List(t, "bookings")
		if len(bookings) > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(bookings) != 1 {
		t.Fatalf("%d bookings", len(bookings))
	}
}

// A startTime is RFC 3339, which lets its "T" and "Z" be lower case (section 5.6): such a
// booking is taken, where Go's layout alone refused it.
func TestABookingsStartTimeMayWriteTAndZInLowerCase(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		calendar, _ := svc.NewEventType(t, acc.ID, "Intro", 30)
		start := time.Now().UTC().Add(72 * time.Hour).Truncate(time.Hour)
		for i, s := range []string{start.Format("2006-01-02t15:04:05z"), start.Add(2 * time.Hour).Format("2006-01-02t15:04:05Z")} {
			booking := svc.API.Post(t, "/api/v1/scheduling/"+calendar+"/bookings", acc.Key, map[string]any{"startTime": s}).
				Expect(t, http.StatusCreated).Object(t, "booking")
			if got, want := booking["when"], start.Add(time.Duration(2*i)*time.Hour).Format("2006-01-02T15:04:05.000Z"); got != want {
				t.Errorf("startTime %q was booked at %v, want %s", s, got, want)
			}
		}
	})
}
