package api_test

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

func upsert(t *testing.T, svc *servicetest.Service, key string, body any) servicetest.Response {
	t.Helper()
	return svc.API.Post(t, "/api/v1/contacts", key, body)
}

func TestUpsertContactCreatesThenUpdates(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		first := upsert(t, svc, acc.Key, map[string]any{"email": "  Ada.Lovelace@Example.com ", "firstName": "Ada", "lastName": "Lovelace", "phone": "+44 20"}).Expect(t, http.StatusOK)
		if first.Body["success"] != true || first.Body["created"] != true {
			t.Fatalf("first upsert = %s", first.Raw)
		}
		c := first.Object(t, "contact")
		id := c["id"].(string)
		if c["email"] != "Ada.Lovelace@Example.com" || c["firstName"] != "Ada" || c["lastName"] != "Lovelace" || c["phone"] != "+44 20" {
			t.Fatalf("contact = %v", c)
		}
		if tags := servicetest.Strings(t, c["tagIds"]); len(tags) != 0 {
			t.Fatalf("tagIds = %v", tags)
		}

		// Same email in another case: the same contact, keeping its first casing; only the
		// fields present change, and an empty string clears.
		second := upsert(t, svc, acc.Key, map[string]any{"email": "ada.lovelace@example.COM", "lastName": "", "phone": "+44 21"}).Expect(t, http.StatusOK)
		if second.Body["created"] != false {
			t.Fatalf("second upsert created a contact: %s", second.Raw)
		}
		c = second.Object(t, "contact")
		if c["id"] != id || c["email"] != "Ada.Lovelace@Example.com" || c["firstName"] != "Ada" || c["lastName"] != "" || c["phone"] != "+44 21" {
			t.Fatalf("updated contact = %v", c)
		}

		got := svc.API.Get(t, "/api/v1/contacts/"+id, acc.Key).Expect(t, http.StatusOK).Object(t, "contact")
		if got["phone"] != "+44 21" || got["lastName"] != "" || got["createdAt"] == nil || got["updatedAt"] == nil {
			t.Fatalf("GET contact = %v", got)
		}
		if ts := got["createdAt"].(string); len(ts) != len("2006-01-02T15:04:05.000Z") || !strings.HasSuffix(ts, "Z") {
			t.Fatalf("createdAt %q is not RFC 3339 UTC with milliseconds", ts)
		}
		list := svc.API.Get(t, "/api/v1/contacts?email=ADA.LOVELACE@example.com", acc.Key).Expect(t, http.StatusOK).List(t, "contacts")
		if len(list) != 1 || list[0]["id"] != id {
			t.Fatalf("list by email = %v", list)
		}
		if none := svc.API.Get(t, "/api/v1/contacts?email=nobody@example.com", acc.Key).Expect(t, http.StatusOK).List(t, "contacts"); len(none) != 0 {
			t.Fatalf("list by unknown email = %v", none)
		}
	})
}

func TestUpsertContactTagReport(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		vip := svc.NewTag(t, acc.ID, "VIP")
		lead := svc.NewTag(t, acc.ID, "Lead")
		foreign := svc.NewTag(t, other.ID, "Foreign")

		res := upsert(t, svc, acc.Key, map[string]any{
			"email":    "tags@example.com",
			"tagNames": []string{"  vip ", "Nope"},
			"tagIds":   []string{lead, "tag_doesnotexist", foreign},
		}).Expect(t, http.StatusOK)
		tags := res.Object(t, "tags")
		requested := tags["requested"].(map[string]any)
		if !slices.Equal(servicetest.Strings(t, requested["tagNames"]), []string{"  vip ", "Nope"}) ||
			!slices.Equal(servicetest.Strings(t, requested["tagIds"]), []string{lead, "tag_doesnotexist", foreign}) {
			t.Fatalf("requested = %v", requested)
		}
		applied := tags["applied"].(map[string]any)
		if !slices.Equal(servicetest.Strings(t, applied["tagIds"]), []string{lead, vip}) || !slices.Equal(servicetest.Strings(t, applied["tagNames"]), []string{"Lead", "VIP"}) {
			t.Fatalf("applied = %v", applied)
		}
		if _, has := tags["warning"]; has {
			t.Fatalf("warning present although tags matched: %v", tags)
		}
		contactTags := servicetest.Strings(t, res.Object(t, "contact")["tagIds"])
		if !slices.Equal(contactTags, []string{lead, vip}) {
			t.Fatalf("contact tagIds = %v", contactTags)
		}

		// Add-only: a later upsert with other tags keeps the earlier ones, and lists an
		// already-present requested tag as applied.
		res = upsert(t, svc, acc.Key, map[string]any{"email": "tags@example.com", "tagNames": []string{"VIP"}}).Expect(t, http.StatusOK)
		if got := servicetest.Strings(t, res.Object(t, "tags")["applied"].(map[string]any)["tagIds"]); !slices.Equal(got, []string{vip}) {
			t.Fatalf("applied (already present) = %v", got)
		}
		if got := servicetest.Strings(t, res.Object(t, "contact")["tagIds"]); !slices.Equal(got, []string{lead, vip}) {
			t.Fatalf("tags after a second upsert = %v", got)
		}

		// None matched: unmatchedTagNames and a warning, and the contact is still upserted.
		res = upsert(t, svc, acc.Key, map[string]any{"email": "nomatch@example.com", "tagNames": []string{"Ghost"}, "tagIds": []string{foreign}}).Expect(t, http.StatusOK)
		tags = res.Object(t, "tags")
		if !slices.Equal(servicetest.Strings(t, tags["unmatchedTagNames"]), []string{"Ghost"}) || tags["warning"] == nil {
			t.Fatalf("tags report with no match = %v", tags)
		}
		if res.Body["created"] != true || len(servicetest.Strings(t, res.Object(t, "contact")["tagIds"])) != 0 {
			t.Fatalf("contact with no matching tags = %s", res.Raw)
		}

		// No tags requested: empty report, no warning.
		tags = upsert(t, svc, acc.Key, map[string]any{"email": "plain@example.com"}).Expect(t, http.StatusOK).Object(t, "tags")
		if _, has := tags["warning"]; has || len(servicetest.Strings(t, tags["applied"].(map[string]any)["tagIds"])) != 0 {
			t.Fatalf("tags report without tags = %v", tags)
		}
	})
}

func TestUpsertContactCustomFields(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		other := svc.NewAccount(t)
		company := svc.NewCustomField(t, acc.ID, "Company")
		plan := svc.NewCustomField(t, acc.ID, "Plan")
		foreign := svc.NewCustomField(t, other.ID, "Foreign")

		c := upsert(t, svc, acc.Key, map[string]any{"email": "cf@example.com", "customFields": map[string]any{company: "Acme", plan: 3}}).
			Expect(t, http.StatusOK).Object(t, "contact")
		fields := c["customFields"].(map[string]any)
		if fields[company] != "Acme" || fields[plan] != "3" {
			t.Fatalf("customFields = %v", fields)
		}
		c = upsert(t, svc, acc.Key, map[string]any{"email": "cf@example.com", "customFields": map[string]any{plan: ""}}).
			Expect(t, http.StatusOK).Object(t, "contact")
		fields = c["customFields"].(map[string]any)
		if fields[company] != "Acme" || fields[plan] != nil {
			t.Fatalf("customFields after clearing plan = %v", fields)
		}

		msg := upsert(t, svc, acc.Key, map[string]any{"email": "cf2@example.com", "customFields": map[string]any{foreign: "x", "cf_unknown": "y", company: "ok"}}).
			ExpectError(t, http.StatusBadRequest)
		if !strings.Contains(msg, foreign) || !strings.Contains(msg, "cf_unknown") {
			t.Fatalf("error %q does not name the unknown fields", msg)
		}
		svc.API.Get(t, "/api/v1/contacts?email=cf2@example.com", acc.Key).Expect(t, http.StatusOK)
		if list := svc.API.Get(t, "/api/v1/contacts?email=cf2@example.com", acc.Key).List(t, "contacts"); len(list) != 0 {
			t.Fatalf("a refused upsert created a contact: %v", list)
		}
	})
}

func TestUpsertContactRefusesBadInput(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		existing := upsert(t, svc, acc.Key, map[string]any{"email": "keep@example.com", "firstName": "Keep"}).Expect(t, http.StatusOK)
		tooManyTags := make([]string, 101)
		for i := range tooManyTags {
			tooManyTags[i] = fmt.Sprintf("t%d", i)
		}
		tooManyFields := map[string]any{}
		for i := 0; i < 101; i++ {
			tooManyFields[fmt.Sprintf("cf_%d", i)] = "x"
		}
		cases := []struct {
			name string
			body any
			want string // a word the message must contain
		}{
			{"missing email", map[string]any{"firstName": "x"}, "email"},
			{"invalid email", map[string]any{"email": "not-an-email"}, "email"},
			{"display name", map[string]any{"email": "Ada <ada@example.com>"}, "email"},
			{"email too long", map[string]any{"email": strings.Repeat("a", 250) + "@x.io"}, "email"},
			{"email not a string", map[string]any{"email": 42}, "email"},
			{"firstName too long", map[string]any{"email": "keep@example.com", "firstName": strings.Repeat("é", 256)}, "firstName"},
			{"lastName too long", map[string]any{"email": "keep@example.com", "lastName": strings.Repeat("x", 256)}, "lastName"},
			{"phone too long", map[string]any{"email": "keep@example.com", "phone": strings.Repeat("1", 51)}, "phone"},
			{"firstName wrong type", map[string]any{"email": "keep@example.com", "firstName": 5}, "firstName"},
			{"tagIds not an array", map[string]any{"email": "keep@example.com", "tagIds": "tag_1"}, "tagIds"},
			{"tagNames with a number", map[string]any{"email": "keep@example.com", "tagNames": []any{"a", 1}}, "tagNames"},
			{"too many tags", map[string]any{"email": "keep@example.com", "tagNames": tooManyTags[:60], "tagIds": tooManyTags[60:]}, "100"},
			{"too many custom fields", map[string]any{"email": "keep@example.com", "customFields": tooManyFields}, "100"},
			{"custom field value too long", map[string]any{"email": "keep@example.com", "customFields": map[string]any{"cf_x": strings.Repeat("x", 10001)}}, "customFields"},
			{"custom field value an object", map[string]any{"email": "keep@example.com", "customFields": map[string]any{"cf_x": map[string]any{}}}, "customFields"},
			{"customFields an array", map[string]any{"email": "keep@example.com", "customFields": []string{"x"}}, "customFields"},
			{"malformed JSON", `{"email": "keep@example.com",`, "JSON"},
			{"trailing garbage", `{"email": "keep@example.com"} {}`, "JSON"},
			{"array body", `[{"email": "keep@example.com"}]`, "object"},
			{"empty body", ``, "body"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				msg := upsert(t, svc, acc.Key, tc.body).ExpectError(t, http.StatusBadRequest)
				if !strings.Contains(msg, tc.want) {
					t.Fatalf("message %q does not mention %q", msg, tc.want)
				}
			})
		}
		// Nothing was written: the one contact is unchanged and alone.
		list := svc.API.Get(t, "/api/v1/contacts", acc.Key).Expect(t, http.StatusOK).List(t, "contacts")
		if len(list) != 1 || list[0]["firstName"] != "Keep" || list[0]["updatedAt"] != existing.Object(t, "contact")["updatedAt"] {
			t.Fatalf("contacts after refused requests = %v", list)
		}
	})
}

func TestBodyLimit(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		// Just under 256 KB, padded with whitespace, is accepted.
		body := `{"email": "big@example.com"}`
		padded := body + strings.Repeat(" ", 256*1024-len(body))
		upsert(t, svc, acc.Key, padded).Expect(t, http.StatusOK)
		over := body + strings.Repeat(" ", 256*1024-len(body)+1)
		upsert(t, svc, acc.Key, over).ExpectError(t, http.StatusRequestEntityTooLarge)
		// Without a Content-Length (chunked), the limit holds while reading.
		res := svc.API.Do(t, servicetest.Request{Method: http.MethodPost, Path: "/api/v1/contacts", Token: acc.Key,
			Body: struct{ io.Reader }{strings.NewReader(`{"email": "chunked@example.com", "firstName": "` + strings.Repeat("x", 300*1024) + `"}`)}})
		res.ExpectError(t, http.StatusRequestEntityTooLarge)
		if list := svc.API.Get(t, "/api/v1/contacts?email=chunked@example.com", acc.Key).List(t, "contacts"); len(list) != 0 {
			t.Fatal("an oversized request wrote a contact")
		}
	})
}

func TestListContactsPaging(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		var emails []string
		for i := 0; i < 5; i++ {
			e := fmt.Sprintf("page%d@example.com", i)
			emails = append(emails, e)
			upsert(t, svc, acc.Key, map[string]any{"email": e}).Expect(t, http.StatusOK)
		}
		page1 := svc.API.Get(t, "/api/v1/contacts?limit=2", acc.Key).Expect(t, http.StatusOK)
		got := emailsOf(page1.List(t, "contacts"))
		if !slices.Equal(got, []string{emails[4], emails[3]}) {
			t.Fatalf("page 1 = %v (newest first expected)", got)
		}
		cursor, _ := page1.Body["nextCursor"].(string)
		if cursor == "" {
			t.Fatal("page 1 has no nextCursor")
		}
		// Writes go on: the cursor still continues where page 1 ended.
		upsert(t, svc, acc.Key, map[string]any{"email": "newer@example.com"}).Expect(t, http.StatusOK)
		upsert(t, svc, acc.Key, map[string]any{"email": emails[2], "firstName": "Changed"}).Expect(t, http.StatusOK)
		page2 := svc.API.Get(t, "/api/v1/contacts?limit=2&cursor="+cursor, acc.Key).Expect(t, http.StatusOK)
		if got := emailsOf(page2.List(t, "contacts")); !slices.Equal(got, []string{emails[2], emails[1]}) {
			t.Fatalf("page 2 = %v", got)
		}
		page3 := svc.API.Get(t, "/api/v1/contacts?limit=2&cursor="+page2.Body["nextCursor"].(string), acc.Key).Expect(t, http.StatusOK)
		if got := emailsOf(page3.List(t, "contacts")); !slices.Equal(got, []string{emails[0]}) {
			t.Fatalf("page 3 = %v", got)
		}
		if _, has := page3.Body["nextCursor"]; has {
			t.Fatal("last page has a nextCursor")
		}
		all := svc.API.Get(t, "/api/v1/contacts", acc.Key).Expect(t, http.StatusOK)
		if len(all.List(t, "contacts")) != 6 {
			t.Fatalf("default page = %d contacts", len(all.List(t, "contacts")))
		}
		// Above the maximum is clamped, however large; not a positive integer is refused.
		for _, big := range []string{"500", "99999999999999999999"} {
			if got := svc.API.Get(t, "/api/v1/contacts?limit="+big, acc.Key).Expect(t, http.StatusOK).List(t, "contacts"); len(got) != 6 {
				t.Fatalf("limit=%s gave %d contacts", big, len(got))
			}
		}
		for _, bad := range []string{"0", "-1", "abc", "1.5", "", "-99999999999999999999"} {
			svc.API.Get(t, "/api/v1/contacts?limit="+bad, acc.Key).ExpectError(t, http.StatusBadRequest)
		}
		svc.API.Get(t, "/api/v1/contacts?cursor=not-a-cursor", acc.Key).ExpectError(t, http.StatusBadRequest)
	})
}

func emailsOf(contacts []map[string]any) []string {
	out := make([]string, len(contacts))
	for i, c := range contacts {
		out[i] = c["email"].(string)
	}
	return out
}

func TestContactTenancy(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		a := svc.NewAccount(t)
		b := svc.NewAccount(t)
		tagA := svc.NewTag(t, a.ID, "Mine")
		id := upsert(t, svc, a.Key, map[string]any{"email": "shared@example.com"}).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)

		svc.API.Get(t, "/api/v1/contacts/"+id, b.Key).ExpectError(t, http.StatusForbidden)
		svc.API.Post(t, "/api/v1/contacts/"+id+"/tags", b.Key, map[string]any{"tagIds": []string{tagA}}).ExpectError(t, http.StatusForbidden)
		svc.API.Get(t, "/api/v1/contacts/ct_aaaaaaaaaaaaaaaaaaaaaaaaaa", a.Key).ExpectError(t, http.StatusNotFound)
		svc.API.Get(t, "/api/v1/contacts/whatever", a.Key).ExpectError(t, http.StatusNotFound)

		// The same email in account B is another contact, and A's list does not show it.
		bID := upsert(t, svc, b.Key, map[string]any{"email": "shared@example.com"}).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
		if bID == id {
			t.Fatal("two accounts share a contact id")
		}
		if list := svc.API.Get(t, "/api/v1/contacts", a.Key).List(t, "contacts"); len(list) != 1 || list[0]["id"] != id {
			t.Fatalf("account A lists %v", list)
		}
		if got := svc.API.Get(t, "/api/v1/contacts/"+id, a.Key).Object(t, "contact"); len(servicetest.Strings(t, got["tagIds"])) != 0 {
			t.Fatalf("account B changed A's contact: %v", got)
		}
	})
}

// Uniqueness of one contact per account and email holds under concurrency without any read
// model: 64 concurrent upserts of one email, in varied case, each with its own tag.
func TestConcurrentUpsertsOfOneEmail(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		const n = 64
		tagIDs := make([]string, n)
		for i := range tagIDs {
			tagIDs[i] = svc.NewTag(t, acc.ID, fmt.Sprintf("race-%02d", i))
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		created := 0
		ids := map[string]bool{}
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				email := "Race.Condition@Example.com"
				if i%2 == 0 {
					email = strings.ToLower(email)
				} else if i%3 == 0 {
					email = strings.ToUpper(email)
				}
				res := upsert(t, svc, acc.Key, map[string]any{"email": email, "tagIds": []string{tagIDs[i]}})
				if res.Status != http.StatusOK {
					t.Errorf("upsert %d: %d %s", i, res.Status, res.Raw)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if res.Body["created"] == true {
					created++
				}
				ids[res.Object(t, "contact")["id"].(string)] = true
			}(i)
		}
		wg.Wait()
		if created != 1 || len(ids) != 1 {
			t.Fatalf("created = %d, distinct ids = %d; want one contact", created, len(ids))
		}
		list := svc.API.Get(t, "/api/v1/contacts?email=race.condition@example.com", acc.Key).Expect(t, http.StatusOK).List(t, "contacts")
		if len(list) != 1 {
			t.Fatalf("%d contacts for one email", len(list))
		}
		got := servicetest.Strings(t, list[0]["tagIds"])
		slices.Sort(got)
		want := slices.Clone(tagIDs)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("contact has %d of %d tags", len(got), n)
		}
	})
}

// Read your writes: every successful write is visible to the very next read.
func TestReadYourWrites(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		tag := svc.NewTag(t, acc.ID, "Seen")
		for i := 0; i < 30; i++ {
			email := fmt.Sprintf("ryw%d@example.com", i)
			id := upsert(t, svc, acc.Key, map[string]any{"email": email, "firstName": fmt.Sprint(i)}).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
			got := svc.API.Get(t, "/api/v1/contacts/"+id, acc.Key).Expect(t, http.StatusOK).Object(t, "contact")
			if got["firstName"] != fmt.Sprint(i) {
				t.Fatalf("read after write %d saw %v", i, got)
			}
			svc.API.Post(t, "/api/v1/contacts/"+id+"/tags", acc.Key, map[string]any{"tagIds": []string{tag}}).Expect(t, http.StatusOK)
			list := svc.API.Get(t, "/api/v1/contacts?email="+email, acc.Key).Expect(t, http.StatusOK).List(t, "contacts")
			if len(list) != 1 || !slices.Equal(servicetest.Strings(t, list[0]["tagIds"]), []string{tag}) {
				t.Fatalf("list after tagging %d saw %v", i, list)
			}
		}
	})
}
