package projections

import (
	"context"
	"fmt"

	"github.com/funnelhq/funnel/projections/paging"
)

// NewestInCRM returns one page of the leads of one CRM of an account, newest first, and the
// cursor of the next page (GET /api/v1/crms/:crmId/leads). The leads_by_crm index answers it
// read backwards; a cursor stays valid while leads are added, as they come before it.
func (p *Leads) NewestInCRM(ctx context.Context, accountID, crmID string, page paging.Page) ([]Lead, string, error) {
	out, next, err := listNewestFirst(ctx, p.db, scanLead, func(l Lead) int64 { return l.seq }, page, selectLeads,
		listCondition{where: `account_id = $1 AND crm_id = $2`, args: []any{accountID, crmID}})
	if err != nil {
		return nil, "", fmt.Errorf("projections: list the leads of crm %s: %w", crmID, err)
	}
	return out, next, nil
}
