package projections

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections/paging"
)

// Forms is the read model of forms and their fields.
type Forms struct {
	readModel[writer]
	db *sql.DB
}

// NewForms reads the forms read model from db. Forms are created by an operator, one at a time:
// there is no burst worth batching.
func NewForms(db *sql.DB) *Forms {
	return &Forms{db: db, readModel: eachEvent(db, "forms", []string{"forms"}, on(insertForm))}
}

func insertForm(w writer, r domain.Recorded, e domain.FormCreated) error {
	fields, err := json.Marshal(wire.List(e.Fields))
	if err != nil {
		return fmt.Errorf("form fields: %w", err)
	}
	tagIDs, err := json.Marshal(wire.List(e.TagIDs))
	if err != nil {
		return fmt.Errorf("form tag ids: %w", err)
	}
	return w.exec(`INSERT INTO forms (id, account_id, name, fields, tag_ids, created_at, seq) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		e.FormID, e.AccountID, e.Name, string(fields), string(tagIDs), millis(r.OccurredAt), r.Position)
}

// Form is a form as the APIs show it.
type Form struct {
	ID        string
	AccountID string
	Name      string
	Fields    []domain.Field
	TagIDs    []string
	CreatedAt time.Time
	seq       int64
}

const selectForms = `SELECT id, account_id, name, fields, tag_ids, created_at, seq FROM forms`

func scanForm(row interface{ Scan(...any) error }) (Form, error) {
	var f Form
	var fields, tagIDs string
	var created int64
	if err := row.Scan(&f.ID, &f.AccountID, &f.Name, &fields, &tagIDs, &created, &f.seq); err != nil {
		return Form{}, notFound(err)
	}
	if err := json.Unmarshal([]byte(fields), &f.Fields); err != nil {
		return Form{}, fmt.Errorf("projections: form fields: %w", err)
	}
	if err := json.Unmarshal([]byte(tagIDs), &f.TagIDs); err != nil {
		return Form{}, fmt.Errorf("projections: form tag ids: %w", err)
	}
	f.CreatedAt = fromMillis(created)
	return f, nil
}

// Get returns one form of an account: a domain NotFound error when there is none, a domain
// Forbidden one when it belongs to another account (ofAccount).
func (p *Forms) Get(ctx context.Context, accountID, id string) (Form, error) {
	row, err := p.byID(ctx, id)
	return ofAccount(row, err, row.AccountID, accountID, "form")
}

// byID returns one form of any account (ErrNotFound when there is none).
func (p *Forms) byID(ctx context.Context, id string) (Form, error) {
	f, err := scanForm(p.db.QueryRowContext(ctx, selectForms+` WHERE id = $1`, id))
	if err != nil {
		return Form{}, fmt.Errorf("projections: form %s: %w", id, err)
	}
	return f, nil
}

// List returns one page of an account's forms, in creation order.
func (p *Forms) List(ctx context.Context, accountID string, page paging.Page) ([]Form, string, error) {
	out, next, err := listInCreationOrder(ctx, p.db, scanForm, func(f Form) int64 { return f.seq }, page, selectForms, `account_id = $1`, accountID)
	if err != nil {
		return nil, "", fmt.Errorf("projections: list forms: %w", err)
	}
	return out, next, nil
}
