package projections

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/paging"
	"github.com/funnelhq/funnel/wireformat"
)

// Forms is the read model of forms and their fields.
type Forms struct {
	db *sql.DB
}

// NewForms reads the forms read model from db.
func NewForms(db *sql.DB) *Forms { return &Forms{db: db} }

// Name identifies the projection's checkpoint.
func (*Forms) Name() string { return "forms" }

// Tables are the tables of the read model, which a rebuild replaces.
func (*Forms) Tables() []string { return []string{"forms"} }

// Handles tells whether the projection applies events of a type.
func (*Forms) Handles(eventType string) bool { return formEvents[eventType] }

var formEvents = handles(domain.FormCreated{})

// Apply applies form events. Forms are created by an operator, one at a time.
func (*Forms) Apply(ctx context.Context, tx *sql.Tx, batch []domain.Recorded) error {
	return formEvents.each(batch, func(r domain.Recorded, e domain.Event) error {
		created := e.(domain.FormCreated)
		fields, _ := json.Marshal(wireformat.List(created.Fields))
		tagIDs, _ := json.Marshal(wireformat.List(created.TagIDs))
		_, err := tx.ExecContext(ctx, `INSERT INTO forms (id, account_id, name, fields, tag_ids, created_at, seq) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			created.FormID, created.AccountID, created.Name, string(fields), string(tagIDs), millis(r.OccurredAt), r.Position)
		if err != nil {
			return fmt.Errorf("projections: forms: %s at %d: %w", r.Type, r.Position, err)
		}
		return nil
	})
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

// Form returns one form of any account; the caller checks the account.
func (p *Forms) Form(ctx context.Context, id string) (Form, error) {
	f, err := scanForm(p.db.QueryRowContext(ctx, selectForms+` WHERE id = $1`, id))
	if err != nil {
		return Form{}, fmt.Errorf("projections: form %s: %w", id, err)
	}
	return f, nil
}

// List returns one page of an account's forms, in creation order.
func (p *Forms) List(ctx context.Context, accountID string, page paging.Page) ([]Form, string, error) {
	after, err := seqAfter(page)
	if err != nil {
		return nil, "", err
	}
	out, err := queryAll(ctx, p.db, scanForm, selectForms+fmt.Sprintf(` WHERE account_id = $1 AND seq > $2 ORDER BY seq LIMIT %d`, page.Limit+1), accountID, after)
	if err != nil {
		return nil, "", fmt.Errorf("projections: list forms: %w", err)
	}
	out, next := paging.Cut(out, page.Limit, func(f Form) any { return f.seq })
	return out, next, nil
}

// nonNilSlice turns a nil slice into an empty one, so that JSON columns hold [] rather than null.
func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
