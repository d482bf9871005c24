package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A NUL character or invalid UTF-8 anywhere in a request (a body string, the path, the query, a
// cursor) is refused with 400 on every route, before anything is appended: PostgreSQL cannot
// store or compare such text, and an event holding it would stall every read model after it.
// Each storage mode gets a service of its own, so that a regression cannot poison other tests.
func TestNULAndInvalidUTF8AreRefused(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		svc := servicetest.Start(t, d, func(*service.Config) {})
		acc := svc.NewAccount(t)
		crm := svc.NewCRM(t, acc.ID, "Sales", "New")
		form, fields := svc.NewForm(t, acc.ID, "Signup", nil,
			servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email"},
			servicetest.Field{"label": "Note", "type": "text"})
		nul := `a\u0000b`

		for _, c := range []struct{ path, body string }{
			{"/api/v1/contacts", `{"email": "nul@example.com", "firstName": "` + nul + `"}`},
			{"/api/v1/contacts", `{"email": "nul@example.com", "customFields": {"cf_x": "` + nul + `"}}`},
			{"/api/v1/contacts/tags", `{"email": "nul@example.com", "tagNames": ["` + nul + `"]}`},
			{"/api/v1/crms/" + crm.ID + "/leads", `{"contactEmail": "nul@example.com", "title": "` + nul + `"}`},
			{"/api/v1/forms/" + form + "/submissions", `{"values": {"` + fields[0] + `": "nul@example.com", "` + fields[1] + `": "` + nul + `"}}`},
			{"/api/v1/webhooks/subscriptions", `{"url": "https://example.com/` + nul + `", "event": "form.submitted"}`},
		} {
			msg := svc.API.Post(t, c.path, acc.Key, c.body).ExpectError(t, http.StatusBadRequest)
			if !strings.Contains(msg, "NUL") {
				t.Errorf("POST %s: message %q does not say what is wrong", c.path, msg)
			}
		}
		for _, c := range []struct{ path, body string }{
			{"/admin/v1/accounts", `{"name": "` + nul + `"}`},
			{"/admin/v1/accounts/" + acc.ID + "/tags", `{"name": "` + nul + `"}`},
			{"/admin/v1/accounts/" + acc.ID + "/crms", `{"name": "Other", "stages": [{"name": "` + nul + `"}]}`},
		} {
			svc.Operator.Post(t, c.path, "", c.body).ExpectError(t, http.StatusBadRequest)
		}

		// An escaped backslash before u0000 is plain text, and kept as sent.
		res := svc.API.Post(t, "/api/v1/contacts", acc.Key, `{"email": "text@example.com", "firstName": "a\\u0000b"}`).Expect(t, http.StatusOK)
		if got := res.Object(t, "contact")["firstName"]; got != `a\u0000b` {
			t.Fatalf("firstName = %q", got)
		}

		for _, path := range []string{
			"/api/v1/contacts?email=a%00@example.com",
			"/api/v1/contacts/ct_%00",
			"/api/v1/contacts/%ff%fe",
			"/api/v1/tags?cursor=%ff",
			"/api/v1/contacts?x=%zz&email=a%00@example.com", // a pair that does not parse hides nothing
		} {
			svc.API.Get(t, path, acc.Key).ExpectError(t, http.StatusBadRequest)
		}
		// A pair that does not parse is ignored, as it always was: it is not an error.
		svc.API.Get(t, "/api/v1/tags?x=%zz;y", acc.Key).Expect(t, http.StatusOK)
		svc.Operator.Get(t, "/admin/v1/accounts/acc_%00", "").ExpectError(t, http.StatusBadRequest)

		// Cursors are the client's input too: one that holds what no database can compare is a 400;
		// a sort key past every row (an order wider than the column) is simply past the end.
		for _, key := range []string{`{"o":1,"n":"\u0000","i":"y"}`, `{"o":1e30,"n":"x","i":"y"}`} {
			svc.API.Get(t, "/api/v1/tags?cursor="+cursorOf("/api/v1/tags", acc.ID, key), acc.Key).ExpectError(t, http.StatusBadRequest)
		}
		tagged := svc.NewAccount(t)
		svc.NewTag(t, tagged.ID, "Lead")
		past := cursorOf("/api/v1/tags", tagged.ID, `{"o":3000000000,"n":"x","i":"y"}`)
		before := cursorOf("/api/v1/tags", tagged.ID, `{"o":-3000000000,"n":"x","i":"y"}`)
		if tags := svc.API.Get(t, "/api/v1/tags?cursor="+past, tagged.Key).Expect(t, http.StatusOK).List(t, "tags"); len(tags) != 0 {
			t.Fatalf("tags after a cursor past every order = %v", tags)
		}
		if tags := svc.API.Get(t, "/api/v1/tags?cursor="+before, tagged.Key).Expect(t, http.StatusOK).List(t, "tags"); len(tags) != 1 {
			t.Fatalf("tags after a cursor before every order = %v", tags)
		}
		stages := "/api/v1/crms/" + crm.ID + "/stages"
		svc.API.Get(t, stages+"?cursor="+cursorOf(stages, acc.ID, `3000000000`), acc.Key).ExpectError(t, http.StatusBadRequest)

		// A tag order must fit the read model's column.
		svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/tags", "", map[string]any{"name": "Big", "order": 10_000_000_000}).ExpectError(t, http.StatusBadRequest)

		// Nothing of the above was written, and the read models still follow the log: a write
		// is answered (not 503) and read back at once.
		svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "after@example.com", "firstName": "After"}).Expect(t, http.StatusOK)
		list := svc.API.Get(t, "/api/v1/contacts?limit=200", acc.Key).Expect(t, http.StatusOK).List(t, "contacts")
		if len(list) != 2 {
			t.Fatalf("contacts = %v, want text@ and after@ only", list)
		}
		if tags := svc.API.Get(t, "/api/v1/tags", acc.Key).List(t, "tags"); len(tags) != 0 {
			t.Fatalf("tags = %v", tags)
		}
	})
}

// A body is UTF-8 text (integration-api.md "Everywhere"). encoding/json would put U+FFFD in place
// of each byte that is not UTF-8, and of an escape that is half a surrogate pair (\ud800), and
// go on: the value would be changed without an error, and two different addresses
// (u\xff@example.com, u\xfe@example.com) would be one contact. Such a body is a 400 invalid_json,
// and nothing is written.
func TestABodyThatIsNotUTF8IsRefused(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		for name, body := range map[string]string{
			"invalid byte in email":    "{\"email\": \"u\xff@example.com\"}",
			"other byte in email":      "{\"email\": \"u\xfe@example.com\"}",
			"invalid bytes in a name":  "{\"email\": \"utf@example.com\", \"firstName\": \"a\xff\xfeb\"}",
			"lone surrogate in a name": `{"email": "utf@example.com", "firstName": "a\ud800b"}`,
		} {
			t.Run(name, func(t *testing.T) {
				res := svc.API.Post(t, "/api/v1/contacts", acc.Key, body)
				if res.Status != http.StatusBadRequest || res.Body["code"] != "invalid_json" {
					t.Errorf("status %d, want 400 invalid_json; body: %s", res.Status, res.Raw)
				}
			})
		}
		svc.Operator.Post(t, "/admin/v1/accounts", "", "{\"name\": \"a\xffb\"}").ExpectError(t, http.StatusBadRequest)
		if list := svc.API.Get(t, "/api/v1/contacts", acc.Key).Expect(t, http.StatusOK).List(t, "contacts"); len(list) != 0 {
			t.Errorf("refused bodies wrote %d contacts: %v", len(list), list)
		}
		// A character outside the BMP, escaped as a surrogate pair, is text.
		res := svc.API.Post(t, "/api/v1/contacts", acc.Key, `{"email": "pair@example.com", "firstName": "a\ud83d\ude00"}`).Expect(t, http.StatusOK)
		if got := res.Object(t, "contact")["firstName"]; got != "a😀" {
			t.Errorf("firstName = %q, want a😀", got)
		}
	})
}
