package operator

import (
	"context"
	"fmt"

	"github.com/funnelhq/funnel/api/wire/admin"
	"github.com/funnelhq/funnel/domain"
)

// currentState shows the export's leads as the service holds them now, as the lead endpoints
// show them, rather than as LeadCreated recorded them: a lead's title and stage change later
// (LeadUpdated, LeadMoved), on the lead's stream, which the export does not read. It reads the
// leads read model; a lead it does not show yet keeps what its event recorded. (A payment's
// status follows its refunds in the log the export reads: exportRefund.)
func (s *Server) currentState(ctx context.Context, accountID string, x *admin.ContactExport) error {
	for i := range x.Leads {
		lead, err := s.deps.Read.Leads.Get(ctx, accountID, x.Leads[i].Id)
		if domain.KindOf(err) == domain.KindNotFound {
			continue
		}
		if err != nil {
			return fmt.Errorf("operator: export lead %s: %w", x.Leads[i].Id, err)
		}
		x.Leads[i].Title, x.Leads[i].StageId = lead.Title, lead.StageID
	}
	return nil
}
