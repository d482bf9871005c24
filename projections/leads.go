package projections

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/paging"
)

// Leads is the read model of CRM leads.
type Leads struct {
	db      *sql.DB
	dialect sqldb.Dialect // of the database the projection writes to: the same as db's
}

// NewLeads reads the leads read model from db.
func NewLeads(db *sql.DB) *Leads { return &Leads{db: db, dialect: sqldb.DialectOf(db)} }

// Name identifies the projection's checkpoint.
func (*Leads) Name() string { return "leads" }

// Tables are the tables of the read model, which a rebuild replaces.
func (*Leads) Tables() []string { return []string{"leads"} }

// Handles tells whether the projection applies events of a type.
func (*Leads) Handles(eventType string) bool { return leadEvents[eventType] }

var leadEvents = handles(domain.LeadCreated{}, domain.LeadMoved{}, domain.LeadUpdated{})

// Lead is a lead as the APIs show it.
type Lead struct {
	ID        string
	AccountID string
	CRMID     string
	StageID   string
	ContactID string
	Title     string
	Amount    int64
	CreatedAt time.Time
	UpdatedAt time.Time
	seq       int64
}

// Apply folds the batch's events into each lead they touch in memory and writes every touched
// lead once: a tag burst that creates and moves leads costs one statement per 100 leads.
func (p *Leads) Apply(ctx context.Context, tx *sql.Tx, batch []domain.Recorded) error {
	touched := map[string]*Lead{}
	var order []string
	err := leadEvents.each(batch, func(r domain.Recorded, e domain.Event) error {
		if created, ok := e.(domain.LeadCreated); ok {
			touched[created.LeadID] = &Lead{
				ID: created.LeadID, AccountID: created.AccountID, CRMID: created.CRMID, StageID: created.StageID,
				ContactID: created.ContactID, Title: created.Title, CreatedAt: r.OccurredAt, UpdatedAt: r.OccurredAt, seq: r.Position,
			}
			order = append(order, created.LeadID)
			return nil
		}
		var id string
		switch e := e.(type) {
		case domain.LeadMoved:
			id = e.LeadID
		case domain.LeadUpdated:
			id = e.LeadID
		}
		l, ok := touched[id]
		if !ok {
			found, err := scanLead(tx.QueryRowContext(ctx, selectLeads+` WHERE id = $1`, id))
			if err != nil {
				return fmt.Errorf("projections: leads: %s at %d: %w", r.Type, r.Position, err)
			}
			l = &found
			touched[id] = l
			order = append(order, id)
		}
		l.UpdatedAt = r.OccurredAt
		switch e := e.(type) {
		case domain.LeadMoved:
			l.StageID = e.ToStageID
		case domain.LeadUpdated:
			if e.Title != nil {
				l.Title = *e.Title
			}
			if e.Amount != nil {
				l.Amount = *e.Amount
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	rows := make([][]any, len(order))
	for i, id := range order {
		l := touched[id]
		rows[i] = []any{l.ID, l.AccountID, l.CRMID, l.StageID, l.ContactID, l.Title, l.Amount, millis(l.CreatedAt), millis(l.UpdatedAt), l.seq}
	}
	return insertRows(ctx, tx, p.dialect, "leads",
		[]string{"id", "account_id", "crm_id", "stage_id", "contact_id", "title", "amount", "created_at", "updated_at", "seq"}, rows,
		`ON CONFLICT (id) DO UPDATE SET stage_id = excluded.stage_id, title = excluded.title, amount = excluded.amount, updated_at = excluded.updated_at`)
}

const selectLeads = `SELECT id, account_id, crm_id, stage_id, contact_id, title, amount, created_at, updated_at, seq FROM leads`

func scanLead(row interface{ Scan(...any) error }) (Lead, error) {
	var l Lead
	var created, updated int64
	if err := row.Scan(&l.ID, &l.AccountID, &l.CRMID, &l.StageID, &l.ContactID, &l.Title, &l.Amount, &created, &updated, &l.seq); err != nil {
		return Lead{}, notFound(err)
	}
	l.CreatedAt, l.UpdatedAt = fromMillis(created), fromMillis(updated)
	return l, nil
}

// Lead returns one lead of any account; the caller checks the account.
func (p *Leads) Lead(ctx context.Context, id string) (Lead, error) {
	l, err := scanLead(p.db.QueryRowContext(ctx, selectLeads+` WHERE id = $1`, id))
	if err != nil {
		return Lead{}, fmt.Errorf("projections: lead %s: %w", id, err)
	}
	return l, nil
}

// LeadFilter narrows a lead list.
type LeadFilter struct {
	CRMID     string // "": every CRM
	ContactID string // "": every contact
}

// List returns one page of an account's leads, in creation order.
func (p *Leads) List(ctx context.Context, accountID string, filter LeadFilter, page paging.Page) ([]Lead, string, error) {
	after, err := seqAfter(page)
	if err != nil {
		return nil, "", err
	}
	var sb strings.Builder
	sb.WriteString(selectLeads + ` WHERE account_id = $1 AND seq > $2`)
	args := []any{accountID, after}
	if filter.CRMID != "" {
		args = append(args, filter.CRMID)
		fmt.Fprintf(&sb, ` AND crm_id = $%d`, len(args))
	}
	if filter.ContactID != "" {
		args = append(args, filter.ContactID)
		fmt.Fprintf(&sb, ` AND contact_id = $%d`, len(args))
	}
	fmt.Fprintf(&sb, ` ORDER BY seq LIMIT %d`, page.Limit+1)
	out, err := queryAll(ctx, p.db, scanLead, sb.String(), args...)
	if err != nil {
		return nil, "", fmt.Errorf("projections: list leads: %w", err)
	}
	out, next := paging.Cut(out, page.Limit, func(l Lead) any { return l.seq })
	return out, next, nil
}
