package projections

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/projections/paging"
)

// Leads is the read model of CRM leads.
type Leads struct {
	readModel[*leadBatch]
	db *sql.DB
}

// NewLeads reads the leads read model from db.
func NewLeads(db *sql.DB) *Leads {
	return &Leads{db: db, readModel: folded(db, "leads", []string{"leads"}, newLeadBatch,
		on((*leadBatch).created),
		on((*leadBatch).moved),
		on((*leadBatch).updated),
		on((*leadBatch).erased),
	)}
}

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

// leadBatch folds a batch's events into each lead they touch, in memory, and flush writes every
// touched lead once: a tag burst that creates and moves leads costs one statement per 100 leads.
type leadBatch struct {
	writer
	leads touchedRows[Lead]
	gone  []domain.ContactErased // their leads' titles are blanked, after the batch's leads are written
}

func newLeadBatch(w writer) *leadBatch { return &leadBatch{writer: w} }

func (b *leadBatch) created(r domain.Recorded, e domain.LeadCreated) error {
	b.leads.add(e.LeadID, &Lead{
		ID: e.LeadID, AccountID: e.AccountID, CRMID: e.CRMID, StageID: e.StageID,
		ContactID: e.ContactID, Title: e.Title, CreatedAt: r.OccurredAt, UpdatedAt: r.OccurredAt, seq: r.Position,
	})
	return nil
}

func (b *leadBatch) moved(r domain.Recorded, e domain.LeadMoved) error {
	l, err := b.changed(e.LeadID, r)
	if err != nil {
		return err
	}
	l.StageID = e.ToStageID
	return nil
}

func (b *leadBatch) updated(r domain.Recorded, e domain.LeadUpdated) error {
	l, err := b.changed(e.LeadID, r)
	if err != nil {
		return err
	}
	if e.Title != nil {
		l.Title = *e.Title
	}
	if e.Amount != nil {
		l.Amount = *e.Amount
	}
	return nil
}

// erased blanks the titles of an erased contact's leads: a title is the contact's personal value
// (domain.LeadCreated), often its email. The lead keeps its id, CRM, stage, amount and times. A
// rebuild reads those titles as null (their key destroyed), "" already; blanking them again
// changes nothing.
func (b *leadBatch) erased(_ domain.Recorded, e domain.ContactErased) error {
	b.gone = append(b.gone, e)
	return nil
}

// changed returns the lead an event changes, read from the transaction the first time the batch
// touches it, with its updated time moved to the event's.
func (b *leadBatch) changed(id string, r domain.Recorded) (*Lead, error) {
	l, err := b.leads.get(id, func() (Lead, error) {
		return scanLead(b.tx.QueryRow(b.ctx, selectLeads+` WHERE id = $1`, id))
	})
	if err != nil {
		return nil, err
	}
	l.UpdatedAt = r.OccurredAt
	return l, nil
}

// flush writes the touched leads, a multi-row statement per 100, then blanks the titles of the
// erased contacts' leads.
func (b *leadBatch) flush() error {
	leads := b.leads.inOrder()
	rows := make([][]any, len(leads))
	for i, l := range leads {
		rows[i] = []any{l.ID, l.AccountID, l.CRMID, l.StageID, l.ContactID, l.Title, l.Amount, millis(l.CreatedAt), millis(l.UpdatedAt), l.seq}
	}
	if err := b.insertRows("leads",
		[]string{"id", "account_id", "crm_id", "stage_id", "contact_id", "title", "amount", "created_at", "updated_at", "seq"}, rows,
		`ON CONFLICT (id) DO UPDATE SET stage_id = excluded.stage_id, title = excluded.title, amount = excluded.amount, updated_at = excluded.updated_at`); err != nil {
		return err
	}
	for _, e := range b.gone {
		if err := b.exec(`UPDATE leads SET title = '' WHERE account_id = $1 AND contact_id = $2 AND title <> ''`, e.AccountID, e.ContactID); err != nil {
			return err
		}
	}
	return nil
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

// Get returns one lead of an account: a domain NotFound error when there is none, a domain
// Forbidden one when it belongs to another account (ofAccount).
func (p *Leads) Get(ctx context.Context, accountID, id string) (Lead, error) {
	row, err := p.byID(ctx, id)
	return ofAccount(row, err, row.AccountID, accountID, "lead")
}

// byID returns one lead of any account (ErrNotFound when there is none).
func (p *Leads) byID(ctx context.Context, id string) (Lead, error) {
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
	fmt.Fprintf(&sb, ` ORDER BY seq LIMIT %d`, sqldb.TextLimit(page.Limit+1))
	out, err := queryAll(ctx, p.db, scanLead, sb.String(), args...)
	if err != nil {
		return nil, "", fmt.Errorf("projections: list leads: %w", err)
	}
	out, next := paging.Cut(out, page.Limit, func(l Lead) any { return l.seq })
	return out, next, nil
}
