package projections

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/paging"
)

// Contacts is the read model of contacts with their tags and custom fields.
type Contacts struct {
	db      *sql.DB
	dialect sqldb.Dialect // of the database the projection writes to: the same as db's
}

// NewContacts reads the contacts read model from db.
func NewContacts(db *sql.DB) *Contacts { return &Contacts{db: db, dialect: sqldb.DialectOf(db)} }

// Name identifies the projection's checkpoint.
func (*Contacts) Name() string { return "contacts" }

// Tables are the tables of the read model, which a rebuild replaces.
func (*Contacts) Tables() []string { return []string{"contacts"} }

// Contact is a contact as the integration API shows it.
type Contact struct {
	ID           string
	AccountID    string
	Email        string
	FirstName    string
	LastName     string
	Phone        string
	TagIDs       []string
	CustomFields map[string]string
	CreatedAt    time.Time
	UpdatedAt    time.Time
	seq          int64
}

// Handles tells whether the projection applies events of a type.
func (*Contacts) Handles(eventType string) bool { return contactEvents[eventType] }

var contactEvents = handles(domain.ContactCreated{}, domain.ContactUpdated{}, domain.TagApplied{}, domain.TagRemoved{})

// Apply folds the batch's events into each contact they touch in memory and writes every touched
// contact once: a burst of tag events for one contact costs one row write.
func (p *Contacts) Apply(ctx context.Context, tx *sql.Tx, batch []domain.Recorded) error {
	touched := map[string]*Contact{}
	var order []string
	get := func(id string) (*Contact, error) {
		if c, ok := touched[id]; ok {
			return c, nil
		}
		c, err := scanContact(tx.QueryRowContext(ctx, selectContacts+` WHERE id = $1`, id))
		if err != nil {
			return nil, err
		}
		touched[id] = &c
		order = append(order, id)
		return &c, nil
	}
	err := contactEvents.each(batch, func(r domain.Recorded, e domain.Event) error {
		if created, ok := e.(domain.ContactCreated); ok {
			touched[created.ContactID] = &Contact{
				ID: created.ContactID, AccountID: created.AccountID, Email: created.Email,
				FirstName: created.FirstName, LastName: created.LastName, Phone: created.Phone,
				TagIDs: []string{}, CustomFields: created.CustomFields,
				CreatedAt: r.OccurredAt, UpdatedAt: r.OccurredAt, seq: r.Position,
			}
			order = append(order, created.ContactID)
			return nil
		}
		c, err := get(e.(domain.ContactEvent).ContactRef())
		if err != nil {
			return fmt.Errorf("projections: contacts: %s at %d: %w", r.Type, r.Position, err)
		}
		c.UpdatedAt = r.OccurredAt
		switch e := e.(type) {
		case domain.ContactUpdated:
			setIf(&c.FirstName, e.FirstName)
			setIf(&c.LastName, e.LastName)
			setIf(&c.Phone, e.Phone)
			for id, v := range e.CustomFields {
				if v == "" {
					delete(c.CustomFields, id)
				} else {
					c.CustomFields[id] = v
				}
			}
		case domain.TagApplied:
			if !slices.Contains(c.TagIDs, e.TagID) {
				c.TagIDs = append(c.TagIDs, e.TagID)
			}
		case domain.TagRemoved:
			c.TagIDs = slices.DeleteFunc(c.TagIDs, func(id string) bool { return id == e.TagID })
		}
		return nil
	})
	if err != nil {
		return err
	}
	rows := make([]*Contact, len(order))
	for i, id := range order {
		rows[i] = touched[id]
	}
	return upsertContacts(ctx, tx, p.dialect, rows)
}

// upsertContacts writes the touched contacts, a multi-row statement per 100.
func upsertContacts(ctx context.Context, tx *sql.Tx, dialect sqldb.Dialect, contacts []*Contact) error {
	rows := make([][]any, len(contacts))
	for i, c := range contacts {
		if c.CustomFields == nil {
			c.CustomFields = map[string]string{}
		}
		tags, _ := json.Marshal(c.TagIDs)
		fields, _ := json.Marshal(c.CustomFields)
		rows[i] = []any{c.ID, c.AccountID, c.Email, domain.EmailKey(c.Email), c.FirstName, c.LastName, c.Phone,
			string(tags), string(fields), millis(c.CreatedAt), millis(c.UpdatedAt), c.seq}
	}
	return insertRows(ctx, tx, dialect, "contacts",
		[]string{"id", "account_id", "email", "email_key", "first_name", "last_name", "phone", "tag_ids", "custom_fields", "created_at", "updated_at", "seq"},
		rows, `ON CONFLICT (id) DO UPDATE SET first_name = excluded.first_name, last_name = excluded.last_name, phone = excluded.phone,
			tag_ids = excluded.tag_ids, custom_fields = excluded.custom_fields, updated_at = excluded.updated_at`)
}

const selectContacts = `SELECT id, account_id, email, first_name, last_name, phone, tag_ids, custom_fields, created_at, updated_at, seq FROM contacts`

func scanContact(row interface{ Scan(...any) error }) (Contact, error) {
	var c Contact
	var tags, fields string
	var created, updated int64
	if err := row.Scan(&c.ID, &c.AccountID, &c.Email, &c.FirstName, &c.LastName, &c.Phone, &tags, &fields, &created, &updated, &c.seq); err != nil {
		return Contact{}, notFound(err)
	}
	if err := json.Unmarshal([]byte(tags), &c.TagIDs); err != nil {
		return Contact{}, fmt.Errorf("projections: contact tags: %w", err)
	}
	if err := json.Unmarshal([]byte(fields), &c.CustomFields); err != nil {
		return Contact{}, fmt.Errorf("projections: contact custom fields: %w", err)
	}
	c.CreatedAt, c.UpdatedAt = fromMillis(created), fromMillis(updated)
	return c, nil
}

// Contact returns one contact of any account; the caller checks the account.
func (p *Contacts) Contact(ctx context.Context, id string) (Contact, error) {
	c, err := scanContact(p.db.QueryRowContext(ctx, selectContacts+` WHERE id = $1`, id))
	if err != nil {
		return Contact{}, fmt.Errorf("projections: contact %s: %w", id, err)
	}
	return c, nil
}

// ContactFilter narrows a contact list.
type ContactFilter struct {
	Email string // exact, case-insensitive
}

// List returns one page of an account's contacts, newest first.
func (p *Contacts) List(ctx context.Context, accountID string, filter ContactFilter, page paging.Page) ([]Contact, string, error) {
	var sb strings.Builder
	sb.WriteString(selectContacts + ` WHERE account_id = $1`)
	args := []any{accountID}
	if filter.Email != "" {
		args = append(args, domain.EmailKey(filter.Email))
		fmt.Fprintf(&sb, ` AND email_key = $%d`, len(args))
	}
	if page.Cursor != "" {
		var before int64
		if err := paging.DecodeCursor(page.Cursor, &before); err != nil {
			return nil, "", err
		}
		args = append(args, before)
		fmt.Fprintf(&sb, ` AND seq < $%d`, len(args))
	}
	fmt.Fprintf(&sb, ` ORDER BY seq DESC LIMIT %d`, page.Limit+1)
	out, err := queryAll(ctx, p.db, scanContact, sb.String(), args...)
	if err != nil {
		return nil, "", fmt.Errorf("projections: list contacts: %w", err)
	}
	out, next := paging.Cut(out, page.Limit, func(c Contact) any { return c.seq })
	return out, next, nil
}

func setIf(dst *string, v *string) {
	if v != nil {
		*dst = *v
	}
}
