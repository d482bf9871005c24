package projections

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/projections/paging"
)

// Contacts is the read model of contacts with their tags and custom fields.
type Contacts struct {
	readModel[*contactBatch]
	db      *sql.DB
	written *written
}

// NewContacts reads the contacts read model from db.
func NewContacts(db *sql.DB) *Contacts {
	w := newWritten()
	return &Contacts{db: db, written: w, readModel: folded(db, "contacts", []string{"contacts"},
		func(wr writer) *contactBatch { return &contactBatch{writer: wr, written: w} },
		on((*contactBatch).created),
		on((*contactBatch).updated),
		on((*contactBatch).tagApplied),
		on((*contactBatch).tagRemoved),
		on((*contactBatch).erased),
	)}
}

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

// contactBatch folds a batch's events into each contact they touch, in memory, and flush writes
// every touched contact once: a burst of tag events for one contact costs one row write.
type contactBatch struct {
	writer
	contacts touchedRows[Contact]
	written  *written
	last     int64 // the position of the batch's last event
	// gone are the contacts the batch erased: their rows are deleted.
	gone []string
}

// erased deletes the row of an erased contact, and drops what the batch folded of it.
func (b *contactBatch) erased(r domain.Recorded, e domain.ContactErased) error {
	b.last = r.Position
	b.contacts.drop(e.ContactID)
	b.gone = append(b.gone, e.ContactID)
	return nil
}

func (b *contactBatch) created(r domain.Recorded, e domain.ContactCreated) error {
	b.last = r.Position
	// A later event of the same batch may set custom fields: start from a map, never nil.
	fields := make(map[string]string, len(e.CustomFields))
	maps.Copy(fields, e.CustomFields)
	b.contacts.add(e.ContactID, &Contact{
		ID: e.ContactID, AccountID: e.AccountID, Email: e.Email,
		FirstName: e.FirstName, LastName: e.LastName, Phone: e.Phone,
		TagIDs: []string{}, CustomFields: fields,
		CreatedAt: r.OccurredAt, UpdatedAt: r.OccurredAt, seq: r.Position,
	})
	return nil
}

func (b *contactBatch) updated(r domain.Recorded, e domain.ContactUpdated) error {
	c, err := b.changed(e.ContactID, r)
	if err != nil {
		return err
	}
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
	return nil
}

func (b *contactBatch) tagApplied(r domain.Recorded, e domain.TagApplied) error {
	c, err := b.changed(e.ContactID, r)
	if err != nil {
		return err
	}
	if !slices.Contains(c.TagIDs, e.TagID) {
		c.TagIDs = append(c.TagIDs, e.TagID)
	}
	return nil
}

func (b *contactBatch) tagRemoved(r domain.Recorded, e domain.TagRemoved) error {
	c, err := b.changed(e.ContactID, r)
	if err != nil {
		return err
	}
	c.TagIDs = slices.DeleteFunc(c.TagIDs, func(id string) bool { return id == e.TagID })
	return nil
}

// changed returns the contact an event changes, read from the transaction the first time the
// batch touches it, with its updated time moved to the event's.
func (b *contactBatch) changed(id string, r domain.Recorded) (*Contact, error) {
	c, err := b.contacts.get(id, func() (Contact, error) {
		return scanContact(b.tx.QueryRow(b.ctx, selectContacts+` WHERE id = $1`, id))
	})
	if err != nil {
		return nil, err
	}
	c.UpdatedAt = r.OccurredAt
	b.last = r.Position
	return c, nil
}

// flush writes the touched contacts, a multi-row statement per 100.
func (b *contactBatch) flush() error {
	contacts := b.contacts.inOrder()
	rows := make([][]any, len(contacts))
	for i, c := range contacts {
		tags, err := json.Marshal(c.TagIDs)
		if err != nil {
			return fmt.Errorf("contact %s tags: %w", c.ID, err)
		}
		fields, err := json.Marshal(c.CustomFields)
		if err != nil {
			return fmt.Errorf("contact %s custom fields: %w", c.ID, err)
		}
		doc, err := c.Document()
		if err != nil {
			return fmt.Errorf("contact %s document: %w", c.ID, err)
		}
		emailKey := domain.ContactEmailKey(c.AccountID, c.ID, c.Email)
		if c.Email == "" {
			emailKey = erasedEmailKey(c.ID)
		}
		rows[i] = []any{c.ID, c.AccountID, c.Email, emailKey, c.FirstName, c.LastName, c.Phone,
			string(tags), string(fields), millis(c.CreatedAt), millis(c.UpdatedAt), c.seq, string(doc)}
	}
	if len(rows) > 0 {
		if err := b.insertRows("contacts",
			[]string{"id", "account_id", "email", "email_key", "first_name", "last_name", "phone", "tag_ids", "custom_fields", "created_at", "updated_at", "seq", "document"},
			rows, `ON CONFLICT (id) DO UPDATE SET first_name = excluded.first_name, last_name = excluded.last_name, phone = excluded.phone,
			tag_ids = excluded.tag_ids, custom_fields = excluded.custom_fields, updated_at = excluded.updated_at, document = excluded.document`); err != nil {
			return err
		}
	}
	for _, id := range b.gone {
		if err := b.exec(`DELETE FROM contacts WHERE id = $1`, id); err != nil {
			return err
		}
	}
	if tx, ok := b.tx.(sqldb.Committer); ok && b.written != nil && len(b.gone) > 0 {
		gone := b.gone
		tx.AfterCommit(func() { b.written.forget(gone) })
	}
	if tx, ok := b.tx.(sqldb.Committer); ok && b.written != nil {
		tx.AfterCommit(func() { b.written.keep(contacts, b.last) })
	}
	return nil
}

// erasedEmailKey is the email key of the row of a contact whose email reads as null: one read
// from the log before its ContactErased is applied (a rebuild, or a projection catching up across
// batches). Until that event deletes the row, the row must not take the key of a later contact of
// the same email, so the key is the contact's id, which is no personal value. It must be text that
// both databases store (PostgreSQL's text holds no NUL, which an earlier key began with), and
// equal no real key nor one a look-up asks for: a real key is a valid address, so it has an @
// (domain.NormalizeEmail), and every key is case-folded (domain.EmailKeys), so a key with capitals
// and no @ is nobody's.
func erasedEmailKey(contactID string) string { return "ERASED " + contactID }

const selectContacts = `SELECT id, account_id, email, first_name, last_name, phone, tag_ids, custom_fields, created_at, updated_at, seq FROM contacts`

func scanContact(row interface{ Scan(...any) error }) (Contact, error) {
	var c Contact
	var tags, fields []byte
	var created, updated int64
	if err := row.Scan(&c.ID, &c.AccountID, &c.Email, &c.FirstName, &c.LastName, &c.Phone, &tags, &fields, &created, &updated, &c.seq); err != nil {
		return Contact{}, notFound(err)
	}
	var err error
	if c.TagIDs, err = decodeStrings(tags); err != nil {
		return Contact{}, fmt.Errorf("projections: contact tags: %w", err)
	}
	if c.CustomFields, err = decodeStringMap(fields); err != nil {
		return Contact{}, fmt.Errorf("projections: contact custom fields: %w", err)
	}
	if c.CustomFields == nil { // a row stored as null: the fold below may add to it
		c.CustomFields = map[string]string{}
	}
	c.CreatedAt, c.UpdatedAt = fromMillis(created), fromMillis(updated)
	return c, nil
}

// GetAt is Get as of position at least (the last position of a write to the contact, say): kept
// from the transaction that wrote it, when the contacts are applied inline and this process wrote
// it there, or else read.
func (p *Contacts) GetAt(ctx context.Context, accountID, id string, position int64) (Contact, error) {
	if c, ok := p.written.at(id, position); ok {
		return contactOf(c, nil, accountID)
	}
	return p.Get(ctx, accountID, id)
}

// Get returns one contact of an account: a domain NotFound error when there is none, a domain
// Forbidden one when it belongs to another account.
func (p *Contacts) Get(ctx context.Context, accountID, id string) (Contact, error) {
	c, err := p.byID(ctx, id)
	return contactOf(c, err, accountID)
}

// contactOf is ofAccount for a contact, whose 404 has always said only "not found".
func contactOf(c Contact, err error, accountID string) (Contact, error) {
	if errors.Is(err, ErrNotFound) {
		return Contact{}, domain.NotFound("not found")
	}
	return ofAccount(c, err, c.AccountID, accountID, "contact")
}

// byID returns one contact of any account (ErrNotFound when there is none).
func (p *Contacts) byID(ctx context.Context, id string) (Contact, error) {
	c, err := scanContact(sqldb.QueryRow(ctx, p.db, selectContacts+` WHERE id = $1`, id))
	if err != nil {
		return Contact{}, fmt.Errorf("projections: contact %s: %w", id, err)
	}
	return c, nil
}

// ContactFilter narrows a contact list.
type ContactFilter struct {
	Email string // exact, case-insensitive
}

// List returns one page of an account's contacts, newest first, as their documents (the JSON
// text of Document), and the cursor of the next page. Documents are strings as the driver reads
// them: a page puts them side by side without another copy.
func (p *Contacts) List(ctx context.Context, accountID string, filter ContactFilter, page paging.Page) ([]string, string, error) {
	out, next, err := listNewestFirst(ctx, p.db, scanDocument, func(d storedDocument) int64 { return d.seq }, page, selectDocuments, ofAccountWithEmail(accountID, filter.Email))
	if err != nil {
		return nil, "", fmt.Errorf("projections: list contacts: %w", err)
	}
	docs := make([]string, len(out))
	for i, d := range out {
		if !d.doc.Valid {
			// A row written before documents were kept (migration 11): shown from its columns.
			c, err := p.byID(ctx, d.id)
			if err != nil {
				return nil, "", fmt.Errorf("projections: list contacts: %w", err)
			}
			doc, err := c.Document()
			if err != nil {
				return nil, "", fmt.Errorf("projections: list contacts: contact %s document: %w", d.id, err)
			}
			d.doc.String = string(doc)
		}
		docs[i] = d.doc.String
	}
	return docs, next, nil
}

const selectDocuments = `SELECT seq, id, document FROM contacts`

// storedDocument is a contact's row as a list reads it: its document, not valid if the row has
// none.
type storedDocument struct {
	seq int64
	id  string
	doc sql.NullString
}

func scanDocument(row interface{ Scan(...any) error }) (storedDocument, error) {
	var d storedDocument
	err := row.Scan(&d.seq, &d.id, &d.doc)
	return d, err
}

func setIf(dst *string, v *string) {
	if v != nil {
		*dst = *v
	}
}
