package main

import (
	"context"
	"fmt"

	"github.com/funnelhq/funnel/api/integration"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/service"
)

// seedDemo fills an empty store with a demo account and prints a working API key and a curl line.
func seedDemo(ctx context.Context, a *service.App, cfg service.Config, apiAddr string) error {
	select {
	case <-a.Ready():
	case <-ctx.Done():
		return ctx.Err()
	}
	head, err := a.Store().Head(ctx)
	if err != nil {
		return err
	}
	if head > 0 {
		fmt.Println("demo: the store is not empty, so no demo data was added")
		return nil
	}
	cmds := a.Commands()
	acc, err := cmds.CreateAccount.Handle(ctx, commands.CreateAccount{RequestID: "demo", Name: "Demo Account"})
	if err != nil {
		return err
	}
	meta := commands.Meta{AccountID: acc.AccountID, Actor: domain.OperatorActor, RequestID: "demo"}
	if _, err := cmds.DefineCustomField.Handle(ctx, commands.DefineCustomField{Meta: meta, Name: "Company"}); err != nil {
		return err
	}
	crm, err := cmds.CreateCRM.Handle(ctx, commands.CreateCRM{Meta: meta, Name: "Sales", StageNames: []string{"New", "Qualified", "Won"}})
	if err != nil {
		return err
	}
	// The crm.move automations need the CRM's stage ids, which the event log holds.
	stages, err := demoStages(ctx, a, crm.CRMID)
	if err != nil {
		return err
	}
	tags := []commands.CreateTag{
		{Meta: meta, Name: "Lead", Order: 1, Automations: []domain.Automation{
			{Type: domain.AutomationEmailSend, Subject: "Welcome!", Body: "Thanks for signing up."},
			{Type: domain.AutomationCRMMove, CRMID: crm.CRMID, StageID: stages[0]},
		}},
		{Meta: meta, Name: "Customer", Order: 2, Automations: []domain.Automation{
			{Type: domain.AutomationCampaignEnroll, CampaignID: "onboarding"},
			{Type: domain.AutomationCRMMove, CRMID: crm.CRMID, StageID: stages[2]},
		}},
		{Meta: meta, Name: "Newsletter", Order: 3},
	}
	var newsletter commands.CreateTagResult
	for _, t := range tags {
		if newsletter, err = cmds.CreateTag.Handle(ctx, t); err != nil {
			return err
		}
	}
	// The form's tags are checked against the tags read model.
	if err := a.ReadModels().WaitReadModels(ctx, newsletter.Position); err != nil {
		return err
	}
	if _, err := cmds.CreateForm.Handle(ctx, commands.CreateForm{Meta: meta, Name: "Newsletter signup", TagIDs: []string{newsletter.TagID}, Fields: []domain.FieldSpec{
		{Label: "Email", Type: "email", ContactField: domain.ContactFieldEmail, Required: true},
		{Label: "Name", Type: "text", ContactField: domain.ContactFieldFullName},
	}}); err != nil {
		return err
	}
	if _, err := cmds.CreateCalendar.Handle(ctx, commands.CreateCalendar{Meta: meta, Name: "Intro call", DurationMinutes: 30, MeetingURL: "https://meet.example.com/intro", Questions: []domain.FieldSpec{
		{Label: "Email", Type: "email", ContactField: domain.ContactFieldEmail, Required: true},
		{Label: "Name", Type: "text", ContactField: domain.ContactFieldFullName},
		{Label: "What would you like to talk about?", Type: "textarea"},
	}}); err != nil {
		return err
	}
	// A SaaS plan sold once or monthly, with a bump: each first purchase issues a signup activation.
	if _, err := cmds.CreateProduct.Handle(ctx, commands.CreateProduct{Meta: meta, Spec: domain.ProductSpec{
		Name: "Pro Plan", InternalName: "pro", Forwarding: domain.ForwardingSaaSSignup, ActivationBaseURL: "https://app.example.com/signup",
		Tiers: []domain.PricingTierSpec{
			{Name: "Lifetime", Amount: 49900, Currency: "USD", Interval: domain.IntervalOneTime},
			{Name: "Monthly", Amount: 4900, Currency: "USD", Interval: domain.IntervalMonth},
		},
		Bumps: []domain.BumpSpec{{Name: "Onboarding call", Amount: 19900}},
	}}); err != nil {
		return err
	}
	key, err := cmds.IssueAPIKey.Handle(ctx, commands.IssueAPIKey{Meta: meta, Name: "demo key"})
	if err != nil {
		return err
	}
	if err := a.ReadModels().WaitReadModels(ctx, key.Position); err != nil {
		return err
	}
	fmt.Printf(`
demo account: %s
demo API key: %s
try:
  curl -s http://%s/api/v1/contacts -H 'Host: %s' \
    -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' \
    -d '{"email": "ada@example.com", "firstName": "Ada", "tagNames": ["Lead", "Newsletter"]}'
`, acc.AccountID, key.Secret, apiAddr, integration.HostName(cfg.APIHost), key.Secret)
	return nil
}

// demoStages reads the stage ids of a CRM from the event log.
func demoStages(ctx context.Context, a *service.App, crmID string) ([]string, error) {
	events, err := a.Store().ReadStream(ctx, crmID)
	if err != nil {
		return nil, err
	}
	for _, r := range events {
		e, err := r.Decode()
		if err != nil {
			return nil, err
		}
		if created, ok := e.(domain.CRMCreated); ok {
			ids := make([]string, len(created.Stages))
			for i, st := range created.Stages {
				ids[i] = st.ID
			}
			return ids, nil
		}
	}
	return nil, fmt.Errorf("demo: CRM %s has no CRMCreated event", crmID)
}
