package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// Two processes on one PostgreSQL database write one contact. Each keeps the contact's state
// between its own commands and reads only the events appended after it, so each must see the
// other's writes in that tail: taking turns, a process that decided on its own last view would
// find a tag where it left it and record nothing; writing at once, no tag applied may be lost.
func TestOneContactWrittenByTwoProcesses(t *testing.T) {
	url := sqldbtest.URL(t, sqldb.Postgres)
	noLimits := func(c *service.Config) { c.RateLimits = false }
	first := servicetest.StartOn(t, url, noLimits)
	second := servicetest.StartOn(t, url, noLimits)
	processes := []*servicetest.Service{first, second}
	acc := first.NewAccount(t)
	var tags []string
	for i := range 9 {
		tags = append(tags, first.NewTag(t, acc.ID, fmt.Sprintf("Tag %d", i)))
	}
	// The second process resolves tags against its own read model, which follows the log.
	waitUntil(t, "the second process knows the tags", func() bool {
		return len(second.API.Get(t, "/api/v1/tags?limit=100", acc.Key).Expect(t, http.StatusOK).List(t, "tags")) == len(tags)
	})
	contactID := first.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "shared@example.com"}).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
	tagPath := "/api/v1/contacts/" + contactID + "/tags"

	// Taking turns: the first process adds tag 0, the second removes it, twenty times. Each
	// answer is the writing process's read model at its write.
	for turn := range 20 {
		action := []string{"add", "remove"}[turn%2]
		res := processes[turn%2].API.Post(t, tagPath, acc.Key, map[string]any{"tagIds": tags[:1], "action": action}).Expect(t, http.StatusOK)
		if has := slices.Contains(servicetest.Strings(t, res.Object(t, "contact")["tagIds"]), tags[0]); has != (action == "add") {
			t.Fatalf("turn %d (%s by process %d): the contact has tag 0: %v", turn, action, turn%2+1, has)
		}
	}

	// The first process keeps the contact as its last write (turn 18) left it, tag 0 on, for its
	// answers; the second has removed the tag since. An upsert on the first process that changes
	// nothing must answer the contact as it is, not as the first process last wrote it.
	res := first.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "shared@example.com"}).Expect(t, http.StatusOK)
	if slices.Contains(servicetest.Strings(t, res.Object(t, "contact")["tagIds"]), tags[0]) {
		t.Fatal("an upsert answered the contact as this process last wrote it, with tag 0 the other process removed since")
	}

	// At once: four clients on each process, each adding a tag of its own and renaming the contact.
	var wg sync.WaitGroup
	for client := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			svc := processes[client%2]
			svc.API.Post(t, tagPath, acc.Key, map[string]any{"tagIds": []string{tags[1+client]}}).Expect(t, http.StatusOK)
			svc.API.Post(t, "/api/v1/contacts", acc.Key, map[string]any{"email": "shared@example.com", "firstName": fmt.Sprintf("Client %d", client)}).Expect(t, http.StatusOK)
		}()
	}
	wg.Wait()

	// The log: tag 0 applied and removed ten times each, every other tag applied once, and the
	// contact they fold into has tags 1 to 8.
	recs, err := first.App.Store().ReadStream(context.Background(), contactID)
	if err != nil {
		t.Fatal(err)
	}
	contact := domain.ContactStream(contactID)
	applied, removed := map[string]int{}, map[string]int{}
	for _, r := range recs {
		e, err := r.Decode()
		if err != nil {
			t.Fatal(err)
		}
		contact.Replay(e)
		switch e := e.(type) {
		case domain.TagApplied:
			applied[e.TagID]++
		case domain.TagRemoved:
			removed[e.TagID]++
		}
	}
	if applied[tags[0]] != 10 || removed[tags[0]] != 10 || contact.HasTag(tags[0]) {
		t.Fatalf("tag 0: applied %d times, removed %d times, on the contact: %v", applied[tags[0]], removed[tags[0]], contact.HasTag(tags[0]))
	}
	for _, tag := range tags[1:] {
		if applied[tag] != 1 || !contact.HasTag(tag) {
			t.Fatalf("tag %s applied %d times, on the contact: %v", tag, applied[tag], contact.HasTag(tag))
		}
	}
	// And both processes answer it with its eight tags once their read models reach the log.
	for i, svc := range processes {
		waitUntil(t, fmt.Sprintf("process %d shows every tag", i+1), func() bool {
			got := servicetest.Strings(t, svc.API.Get(t, "/api/v1/contacts/"+contactID, acc.Key).Expect(t, http.StatusOK).Object(t, "contact")["tagIds"])
			slices.Sort(got)
			want := slices.Clone(tags[1:])
			slices.Sort(want)
			return slices.Equal(got, want)
		})
	}
}

// waitUntil polls a condition that another process's read model makes true once it has followed
// the log (it polls the log every 250 ms), and fails the test if that never happens.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
