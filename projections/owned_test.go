package projections_test

import (
	"context"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/pipeline"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
	"github.com/funnelhq/funnel/projections"
)

// A look-up of one row takes the account a request acts in and answers for it (decisions.md
// "General"): the row when it is the account's, a domain Forbidden "<what> belongs to another
// account" for another account's id, a domain NotFound "<what> not found" for an id that exists
// nowhere. The APIs answer these 403 and 404 with the message as it is.
func TestLookupsAnswerAnotherAccountsIDForbiddenAndAnUnknownOneNotFound(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, dialect sqldb.Dialect) {
		ctx := context.Background()
		db := sqldbtest.Open(t, dialect)
		q := projections.NewQueries(db.Read)
		at := time.Now().UTC().Truncate(time.Millisecond)
		cases := []struct {
			projection pipeline.Projection
			created    domain.Event
			id         string
			get        func(accountID, id string) error
			notFound   string
			forbidden  string
		}{
			{q.Contacts, domain.ContactCreated{ContactID: "ct_1", AccountID: "acc_1", Email: "ada@example.com", CustomFields: map[string]string{}}, "ct_1",
				func(a, id string) error { _, err := q.Contacts.Get(ctx, a, id); return err },
				"not found", "contact belongs to another account"},
			{q.Contacts, nil, "ct_1",
				func(a, id string) error { _, err := q.Contacts.GetAt(ctx, a, id, 1); return err },
				"not found", "contact belongs to another account"},
			{q.CRMs, domain.CRMCreated{CRMID: "crm_1", AccountID: "acc_1", Name: "Sales", Stages: []domain.Stage{{ID: "st_1", Name: "New"}}}, "crm_1",
				func(a, id string) error { _, err := q.CRMs.Get(ctx, a, id); return err },
				"crm not found", "crm belongs to another account"},
			{q.Tags, domain.TagCreated{TagID: "tg_1", AccountID: "acc_1", Name: "VIP"}, "tg_1",
				func(a, id string) error { _, err := q.Tags.Get(ctx, a, id); return err },
				"tag not found", "tag belongs to another account"},
			{q.Forms, domain.FormCreated{FormID: "fm_1", AccountID: "acc_1", Name: "Signup"}, "fm_1",
				func(a, id string) error { _, err := q.Forms.Get(ctx, a, id); return err },
				"form not found", "form belongs to another account"},
			{q.Calendars, domain.CalendarCreated{CalendarID: "et_1", AccountID: "acc_1", Name: "Call", DurationMinutes: 30}, "et_1",
				func(a, id string) error { _, err := q.Calendars.Get(ctx, a, id); return err },
				"event type not found", "event type belongs to another account"},
			{q.Products, domain.ProductCreated{ProductID: "pr_1", AccountID: "acc_1", Name: "Pro"}, "pr_1",
				func(a, id string) error { _, err := q.Products.Get(ctx, a, id); return err },
				"product not found", "product belongs to another account"},
			{q.Accounts, domain.APIKeyIssued{AccountID: "acc_1", KeyID: "key_1", Name: "Zapier", Scopes: []domain.Scope{}}, "key_1",
				func(a, id string) error { _, err := q.Accounts.APIKey(ctx, a, id); return err },
				"api key not found", "api key belongs to another account"},
		}
		for i, c := range cases {
			if c.created != nil {
				applyBatch(t, db, c.projection, []domain.Recorded{recorded(t, int64(i+1), at, c.created)})
			}
			if err := c.get("acc_1", c.id); err != nil {
				t.Errorf("%T: the owner's look-up of %s = %v", c.projection, c.id, err)
			}
			for _, want := range []struct {
				accountID, id, message string
				kind                   domain.ErrorKind
			}{
				{"acc_2", c.id, c.forbidden, domain.KindForbidden},
				{"acc_1", c.id + "_nowhere", c.notFound, domain.KindNotFound},
				{"acc_2", c.id + "_nowhere", c.notFound, domain.KindNotFound},
			} {
				err := c.get(want.accountID, want.id)
				if domain.KindOf(err) != want.kind || err.Error() != want.message {
					t.Errorf("%T: %s's look-up of %s = %v (kind %d), want %q (kind %d)", c.projection, want.accountID, want.id, err, domain.KindOf(err), want.message, want.kind)
				}
			}
		}
	})
}
