package projections

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/paging"
)

// FormSubmissions is the read model of form submissions.
type FormSubmissions struct {
	db      *sql.DB
	dialect sqldb.Dialect // of the database the projection writes to: the same as db's
}

// NewFormSubmissions reads the submissions read model from db.
func NewFormSubmissions(db *sql.DB) *FormSubmissions {
	return &FormSubmissions{db: db, dialect: sqldb.DialectOf(db)}
}

// Name identifies the projection's checkpoint.
func (*FormSubmissions) Name() string { return "form-submissions" }

// Tables are the tables of the read model, which a rebuild replaces.
func (*FormSubmissions) Tables() []string { return []string{"form_submissions"} }

// Handles tells whether the projection applies events of a type.
func (*FormSubmissions) Handles(eventType string) bool { return submissionEvents[eventType] }

var submissionEvents = handles(domain.FormSubmitted{})

// Apply inserts the batch's submissions with one statement per 100: a busy form is the one
// write here that comes in bursts.
func (p *FormSubmissions) Apply(ctx context.Context, tx *sql.Tx, batch []domain.Recorded) error {
	var rows [][]any
	err := submissionEvents.each(batch, func(r domain.Recorded, e domain.Event) error {
		s := e.(domain.FormSubmitted)
		answers := map[string]any{}
		for _, f := range s.Fields {
			if f.Value != nil {
				answers[f.ID] = f.Value
			}
		}
		encoded, err := json.Marshal(answers)
		if err != nil {
			return fmt.Errorf("projections: form submissions: %s at %d: %w", r.Type, r.Position, err)
		}
		rows = append(rows, []any{s.SubmissionID, s.AccountID, s.FormID, nullString(s.ContactID), millis(s.SubmittedAt), string(encoded), r.Position})
		return nil
	})
	if err != nil {
		return err
	}
	return insertRows(ctx, tx, p.dialect, "form_submissions", []string{"id", "account_id", "form_id", "contact_id", "submitted_at", "answers", "seq"}, rows, "")
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

// Submission returns one submission of any account; the caller checks the account.
func (p *FormSubmissions) Submission(ctx context.Context, id string) (Submission, error) {
	s, err := scanSubmission(p.db.QueryRowContext(ctx, selectSubmissions+` WHERE id = $1`, id))
	if err != nil {
		return Submission{}, fmt.Errorf("projections: submission %s: %w", id, err)
	}
	return s, nil
}

// List returns one page of a form's submissions, in the order they were made.
func (p *FormSubmissions) List(ctx context.Context, accountID, formID string, page paging.Page) ([]Submission, string, error) {
	after, err := seqAfter(page)
	if err != nil {
		return nil, "", err
	}
	out, err := queryAll(ctx, p.db, scanSubmission, selectSubmissions+fmt.Sprintf(` WHERE account_id = $1 AND form_id = $2 AND seq > $3 ORDER BY seq LIMIT %d`, page.Limit+1),
		accountID, formID, after)
	if err != nil {
		return nil, "", fmt.Errorf("projections: list submissions: %w", err)
	}
	out, next := paging.Cut(out, page.Limit, func(s Submission) any { return s.seq })
	return out, next, nil
}
