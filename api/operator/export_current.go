package operator

import (
	"context"
	"fmt"

	"github.com/funnelhq/funnel/api/wire/admin"
	"github.com/funnelhq/funnel/domain"
)

// currentState shows the export's leads and transactions as the service holds them now, as the
// lead and customer endpoints show them, rather than as the events that created them recorded
// them: a lead's title and stage change later (LeadUpdated, LeadMoved), a payment's status with
// its refunds. It reads the read models those endpoints read (leads, transactions). One the read
// model does not show yet (a payment its relay has not applied) keeps what its event recorded.
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
	for i := range x.Transactions {
		txn, err := s.deps.Read.Transactions.Get(ctx, accountID, x.Transactions[i].Id)
		if domain.KindOf(err) == domain.KindNotFound {
			continue
		}
		if err != nil {
			return fmt.Errorf("operator: export transaction %s: %w", x.Transactions[i].Id, err)
		}
		x.Transactions[i].Status = txn.Status
	}
	return nil
}
