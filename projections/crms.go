package projections

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/projections/paging"
)

// CRMs is the read model of CRM pipelines and their stages.
type CRMs struct {
	readModel[writer]
	db *sql.DB
}

// NewCRMs reads the CRMs read model from db. CRMs are created by an operator, one at a time:
// there is no burst worth batching.
func NewCRMs(db *sql.DB) *CRMs {
	return &CRMs{db: db, readModel: eachEvent(db, "crms", []string{"crms", "crm_stages"}, on(insertCRM))}
}

func insertCRM(w writer, r domain.Recorded, e domain.CRMCreated) error {
	if err := w.exec(`INSERT INTO crms (id, account_id, name, created_at, seq) VALUES ($1, $2, $3, $4, $5)`,
		e.CRMID, e.AccountID, e.Name, millis(r.OccurredAt), r.Position); err != nil {
		return err
	}
	stages := make([][]any, len(e.Stages))
	for i, s := range e.Stages {
		stages[i] = []any{s.ID, e.CRMID, e.AccountID, s.Name, s.Order}
	}
	return w.insertRows("crm_stages", []string{"id", "crm_id", "account_id", "name", "sort_order"}, stages, "")
}

// CRM is a CRM pipeline as the APIs show it, with its stages in order.
type CRM struct {
	ID        string
	AccountID string
	Name      string
	Stages    []domain.Stage
	CreatedAt time.Time
	seq       int64
}

const selectCRMs = `SELECT id, account_id, name, created_at, seq FROM crms`

// Get returns one CRM of an account: a domain NotFound error when there is none, a domain
// Forbidden one when it belongs to another account (ofAccount).
func (p *CRMs) Get(ctx context.Context, accountID, id string) (CRM, error) {
	row, err := p.byID(ctx, id)
	return ofAccount(row, err, row.AccountID, accountID, "crm")
}

// byID returns one CRM of any account (ErrNotFound when there is none).
func (p *CRMs) byID(ctx context.Context, id string) (CRM, error) {
	crms, err := p.query(ctx, selectCRMs+` WHERE id = $1`, id)
	if err != nil {
		return CRM{}, err
	}
	if len(crms) == 0 {
		return CRM{}, ErrNotFound
	}
	return crms[0], nil
}

// List returns one page of an account's CRMs, in creation order.
func (p *CRMs) List(ctx context.Context, accountID string, page paging.Page) ([]CRM, string, error) {
	after, err := seqAfter(page)
	if err != nil {
		return nil, "", err
	}
	crms, err := p.query(ctx, selectCRMs+fmt.Sprintf(` WHERE account_id = $1 AND seq > $2 ORDER BY seq LIMIT %d`, sqldb.TextLimit(page.Limit+1)), accountID, after)
	if err != nil {
		return nil, "", err
	}
	crms, next := paging.Cut(crms, page.Limit, func(c CRM) any { return c.seq })
	return crms, next, nil
}

// Stages returns one page of a CRM's stages, in pipeline order.
func (p *CRMs) Stages(ctx context.Context, crmID string, page paging.Page) ([]domain.Stage, string, error) {
	var after int32 // sort_order is an INTEGER column
	if page.Cursor != "" {
		if err := paging.DecodeCursor(page.Cursor, &after); err != nil {
			return nil, "", err
		}
	}
	rows, err := p.db.QueryContext(ctx, fmt.Sprintf(`SELECT id, name, sort_order FROM crm_stages WHERE crm_id = $1 AND sort_order > $2 ORDER BY sort_order LIMIT %d`, sqldb.TextLimit(page.Limit+1)), crmID, after)
	if err != nil {
		return nil, "", fmt.Errorf("projections: list stages: %w", err)
	}
	defer rows.Close()
	stages := []domain.Stage{}
	for rows.Next() {
		var s domain.Stage
		if err := rows.Scan(&s.ID, &s.Name, &s.Order); err != nil {
			return nil, "", fmt.Errorf("projections: scan stage: %w", err)
		}
		stages = append(stages, s)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("projections: list stages: %w", err)
	}
	stages, next := paging.Cut(stages, page.Limit, func(s domain.Stage) any { return s.Order })
	return stages, next, nil
}

// query reads CRMs, then the stages of all of them in one more query.
func (p *CRMs) query(ctx context.Context, query string, args ...any) ([]CRM, error) {
	rows, err := p.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("projections: query crms: %w", err)
	}
	defer rows.Close()
	var crms []CRM
	byID := map[string]*CRM{}
	for rows.Next() {
		var c CRM
		var created int64
		if err := rows.Scan(&c.ID, &c.AccountID, &c.Name, &created, &c.seq); err != nil {
			return nil, fmt.Errorf("projections: scan crm: %w", err)
		}
		c.CreatedAt = fromMillis(created)
		c.Stages = []domain.Stage{}
		crms = append(crms, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("projections: query crms: %w", err)
	}
	if len(crms) == 0 {
		return nil, nil
	}
	ids := make([]string, len(crms))
	for i := range crms {
		ids[i] = crms[i].ID
		byID[crms[i].ID] = &crms[i]
	}
	list, idArgs := inList(p.dialect, 1, ids)
	stageRows, err := p.db.QueryContext(ctx, `SELECT crm_id, id, name, sort_order FROM crm_stages WHERE crm_id IN (`+list+`) ORDER BY crm_id, sort_order`, idArgs...)
	if err != nil {
		return nil, fmt.Errorf("projections: query stages: %w", err)
	}
	defer stageRows.Close()
	for stageRows.Next() {
		var crmID string
		var s domain.Stage
		if err := stageRows.Scan(&crmID, &s.ID, &s.Name, &s.Order); err != nil {
			return nil, fmt.Errorf("projections: scan stage: %w", err)
		}
		c := byID[crmID]
		c.Stages = append(c.Stages, s)
	}
	if err := stageRows.Err(); err != nil {
		return nil, fmt.Errorf("projections: query stages: %w", err)
	}
	return crms, nil
}
