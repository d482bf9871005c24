package projections

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections/paging"
)

// FormSubmissions is the read model of form submissions.
type FormSubmissions struct {
	readModel[*submissionBatch]
	db *sql.DB
}

// NewFormSubmissions reads the submissions read model from db.
func NewFormSubmissions(db *sql.DB) *FormSubmissions {
	return &FormSubmissions{db: db, readModel: folded(db, "form-submissions", []string{"form_submissions"}, newSubmissionBatch,
		on((*submissionBatch).submitted),
		on((*submissionBatch).erased),
	)}
}

// submissionBatch collects a batch's submissions, and flush inserts them with one statement per
// 100: a busy form is the one write here that comes in bursts.
type submissionBatch struct {
	writer
	rows [][]any
	gone []string // contacts erased: their submissions are deleted, after the batch's inserts
}

// erased deletes the submissions of an erased contact.
func (b *submissionBatch) erased(_ domain.Recorded, e domain.ContactErased) error {
	b.gone = append(b.gone, e.ContactID)
	return nil
}

func newSubmissionBatch(w writer) *submissionBatch { return &submissionBatch{writer: w} }

func (b *submissionBatch) submitted(r domain.Recorded, e domain.FormSubmitted) error {
	answers := map[string]any{}
	for _, f := range e.Fields {
		if f.Value != nil {
			answers[f.ID] = f.Value
		}
	}
	encoded, err := json.Marshal(answers)
	if err != nil {
		return fmt.Errorf("submission answers: %w", err)
	}
	b.rows = append(b.rows, []any{e.SubmissionID, e.AccountID, e.FormID, nullString(e.ContactID), millis(e.SubmittedAt), string(encoded), r.Position})
	return nil
}

func (b *submissionBatch) flush() error {
	if len(b.rows) > 0 {
		if err := b.insertRows("form_submissions", []string{"id", "account_id", "form_id", "contact_id", "submitted_at", "answers", "seq"}, b.rows, ""); err != nil {
			return err
		}
	}
	for _, id := range b.gone {
		if err := b.exec(`DELETE FROM form_submissions WHERE contact_id = $1`, id); err != nil {
			return err
		}
	}
	return nil
}

// Submission is a form submission as the APIs show it.
type Submission struct {
	ID          string
	AccountID   string
	FormID      string
	ContactID   string // "" when no answer gave an email
	SubmittedAt time.Time
	Answers     map[string]any
	seq         int64
}

const selectSubmissions = `SELECT id, account_id, form_id, contact_id, submitted_at, answers, seq FROM form_submissions`

func scanSubmission(row interface{ Scan(...any) error }) (Submission, error) {
	var s Submission
	var contact sql.NullString
	var submitted int64
	var answers string
	if err := row.Scan(&s.ID, &s.AccountID, &s.FormID, &contact, &submitted, &answers, &s.seq); err != nil {
		return Submission{}, notFound(err)
	}
	if err := json.Unmarshal([]byte(answers), &s.Answers); err != nil {
		return Submission{}, fmt.Errorf("projections: submission answers: %w", err)
	}
	s.ContactID, s.SubmittedAt = contact.String, fromMillis(submitted)
	return s, nil
}

// Get returns one submission of an account: a domain NotFound error when there is none, a domain
// Forbidden one when it belongs to another account (ofAccount).
func (p *FormSubmissions) Get(ctx context.Context, accountID, id string) (Submission, error) {
	row, err := p.byID(ctx, id)
	return ofAccount(row, err, row.AccountID, accountID, "submission")
}

// byID returns one submission of any account (ErrNotFound when there is none).
func (p *FormSubmissions) byID(ctx context.Context, id string) (Submission, error) {
	s, err := scanSubmission(p.db.QueryRowContext(ctx, selectSubmissions+` WHERE id = $1`, id))
	if err != nil {
		return Submission{}, fmt.Errorf("projections: submission %s: %w", id, err)
	}
	return s, nil
}

// List returns one page of a form's submissions, in the order they were made.
func (p *FormSubmissions) List(ctx context.Context, accountID, formID string, page paging.Page) ([]Submission, string, error) {
	out, next, err := listInCreationOrder(ctx, p.db, scanSubmission, func(s Submission) int64 { return s.seq }, page, selectSubmissions,
		`account_id = $1 AND form_id = $2`, accountID, formID)
	if err != nil {
		return nil, "", fmt.Errorf("projections: list submissions: %w", err)
	}
	return out, next, nil
}
