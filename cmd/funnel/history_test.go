package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// `funnel history` prints a long history whole, oldest first, but reads it from the log a page
// of historyPage events at a time: it never holds it all in memory.
func TestHistoryStreamsALongHistoryInPages(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		store := eventstore.New(db)
		t.Cleanup(store.Close)
		ctx := context.Background()
		meta := domain.Metadata{AccountID: "acc_h", Actor: "test"}
		const total = 2*historyPage + 201
		for appended := 0; appended < total; {
			n := min(300, total-appended)
			tags, disabled := make([]domain.Event, n), make([]domain.Event, n)
			for i := range n {
				tags[i] = domain.TagApplied{ContactID: "ct_h", TagID: fmt.Sprintf("tag_%d", appended+i), TagName: "t"}
				disabled[i] = domain.WebhookSubscriptionDisabled{SubscriptionID: "wh_h", Reason: "test"}
			}
			// Another contact's event between each batch: neither history holds it.
			if _, err := store.Append(ctx, meta, domain.StreamAppend{StreamID: "ct_h", ExpectedVersion: domain.AnyVersion, Events: tags},
				domain.StreamAppend{StreamID: "wh_h", ExpectedVersion: domain.AnyVersion, Events: disabled},
				domain.StreamAppend{StreamID: "ct_other", ExpectedVersion: domain.AnyVersion, Events: []domain.Event{domain.TagApplied{ContactID: "ct_other", TagID: "tag_x", TagName: "x"}}}); err != nil {
				t.Fatal(err)
			}
			appended += n
		}

		for entity, read := range map[string]func(context.Context, string, string, int64, int) ([]domain.Recorded, error){
			"ct_h": store.ReadContactHistory, "wh_h": store.ReadSubscriptionHistory,
		} {
			var out bytes.Buffer
			largest, pages := 0, 0
			err := printHistory(ctx, &out, "acc_h", entity, func(ctx context.Context, accountID, id string, after int64, limit int) ([]domain.Recorded, error) {
				events, err := read(ctx, accountID, id, after, limit)
				largest, pages = max(largest, len(events)), pages+1
				return events, err
			})
			if err != nil {
				t.Fatal(err)
			}
			lines, last := 0, 0.0
			scanner := bufio.NewScanner(&out)
			for scanner.Scan() {
				var e struct {
					Position float64
					StreamID string
				}
				if err := json.Unmarshal(scanner.Bytes(), &e); err != nil || e.Position <= last || e.StreamID != entity {
					t.Fatalf("history of %s, line %d: %s (%v)", entity, lines, scanner.Text(), err)
				}
				lines, last = lines+1, e.Position
			}
			if lines != total || largest != historyPage || pages != 3 {
				t.Fatalf("history of %s: %d lines of %d, read in %d pages of at most %d events", entity, lines, total, pages, largest)
			}
		}
		err := printHistory(ctx, &bytes.Buffer{}, "acc_other", "ct_h", store.ReadContactHistory)
		if err == nil || !strings.Contains(err.Error(), "no history") {
			t.Fatalf("history of another account: %v", err)
		}
	})
}

// `funnel history --email` finds the email's current contact as the operator's history does, never
// an erased one: while the email's only contact is erased it prints no history (as for an unknown
// email), and once the email has a new contact it prints the new one's. The erased contact's
// history is still printed by its id.
func TestHistoryByEmailStepsOverErasedContacts(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		store := eventstore.New(sqldbtest.Open(t, d))
		t.Cleanup(store.Close)
		ctx := context.Background()
		const account, email = "acc_h", "qzcli@example.com"
		meta := domain.Metadata{AccountID: account, Actor: "test"}
		printed := func(contact, email string) (string, error) {
			entity, read, err := historyEntity(ctx, store, account, contact, email, "")
			if err != nil {
				return "", err
			}
			var out bytes.Buffer
			err = printHistory(ctx, &out, account, entity, read)
			return out.String(), err
		}
		created := func(id string) {
			if _, err := store.Append(ctx, meta, domain.StreamAppend{StreamID: id, Events: []domain.Event{domain.ContactCreated{ContactID: id, AccountID: account, Email: email}}}); err != nil {
				t.Fatal(err)
			}
		}
		erased := domain.ContactIDFor(account, email)
		created(erased)
		if _, err := store.Append(ctx, meta, domain.StreamAppend{StreamID: erased, ExpectedVersion: domain.AnyVersion,
			Events: []domain.Event{domain.ContactErased{ContactID: erased, AccountID: account}}}); err != nil {
			t.Fatal(err)
		}
		if out, err := printed("", email); err == nil || !strings.Contains(err.Error(), "no history") {
			t.Errorf("history --email of an email whose contact is erased: %v, printed %s", err, out)
		}
		if out, err := printed(erased, ""); err != nil || !strings.Contains(out, "ContactErased") {
			t.Errorf("history --contact of the erased contact: %v, printed %s", err, out)
		}
		current := domain.ContactIDAfterErasures(account, email, 1)
		created(current)
		out, err := printed("", email)
		if err != nil || !strings.Contains(out, current) || strings.Contains(out, erased) {
			t.Errorf("history --email after the email's new contact %s: %v, printed %s", current, err, out)
		}
	})
}
