package commands

import (
	"context"
	"fmt"

	"github.com/funnelhq/funnel/domain"
)

// applyTags puts tags on a contact and runs their automations. The contact records its own
// automations (email.send, campaign.enroll) as it takes each tag; the crm.move automations reach
// other aggregates, so they run here, for the tags the contact did not have yet only: a tag the
// contact already has runs nothing again, and each newly applied tag runs once per request.
//
// Every path that applies tags (contacts, tags, lead and form-submission commands) goes through
// here, in the session of its command, so the tags, the leads they open or move, and the rest of
// the command are appended together or not at all.
func applyTags(ctx context.Context, s *session, contact *domain.Contact, tags []domain.TagRef) error {
	for _, t := range contact.AddTags(tags) {
		for _, a := range t.Automations {
			if a.Type != domain.AutomationCRMMove {
				continue
			}
			if err := moveToCRM(ctx, s, contact, a.CRMID, a.StageID); err != nil {
				return fmt.Errorf("commands: tag %s: %w", t.ID, err)
			}
		}
	}
	return nil
}

// moveToCRM moves the contact's lead in a CRM to a stage, or opens one there, titled with the
// contact's email, when the contact has none. Opening it records LeadAssigned on the contact, so
// two concurrent decisions to open the contact's lead in one CRM conflict on the contact's
// stream and only one lead is opened.
func moveToCRM(ctx context.Context, s *session, contact *domain.Contact, crmID, stageID string) error {
	crm, err := loadCRM(ctx, s, contact.AccountID(), crmID)
	if domain.KindOf(err) != 0 {
		// CreateTag checked the CRM, and CRMs are never deleted: this is a bug, not bad input.
		return fmt.Errorf("crm.move automation names CRM %s: %s", crmID, err)
	}
	if err != nil {
		return err
	}
	if leadID := contact.LeadIn(crmID); leadID != "" {
		lead, err := loadOnce(ctx, s, leadID, domain.LeadStream)
		if err != nil {
			return err
		}
		return lead.MoveTo(crm, stageID)
	}
	_, err = openLead(s, contact, crm, stageID, contact.Email())
	return err
}

// openLead creates a lead for the contact in a CRM and records it on the contact. It returns the
// new lead's id.
func openLead(s *session, contact *domain.Contact, crm *domain.CRM, stageID, title string) (string, error) {
	lead := domain.LeadStream(domain.NewID(leadPrefix))
	if err := s.track(lead); err != nil {
		return "", err
	}
	if err := lead.Create(contact.AccountID(), crm, stageID, contact.StreamID(), title); err != nil {
		return "", err
	}
	contact.AssignLead(lead.StreamID(), crm.StreamID())
	return lead.StreamID(), nil
}

// loadCRM loads a CRM of the account into the session (once per session): 404 when there is no
// such CRM, 403 when it belongs to another account.
func loadCRM(ctx context.Context, s *session, accountID, crmID string) (*domain.CRM, error) {
	if !isID(crmID, crmPrefix) {
		return nil, domain.NotFound("crm not found")
	}
	crm, err := loadOnce(ctx, s, crmID, domain.CRMStream)
	if err != nil {
		return nil, err
	}
	if !crm.Exists() {
		return nil, domain.NotFound("crm not found")
	}
	if crm.AccountID() != accountID {
		return nil, domain.Forbidden("crm belongs to another account")
	}
	return crm, nil
}
