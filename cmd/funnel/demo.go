package main

import (
	"context"
	"fmt"

	"funnel/commands"
	"funnel/domain"
	"funnel/infra/app"
)

// seedDemo fills an empty store with a demo account and prints a working API key and a curl line.
func seedDemo(ctx context.Context, a *app.App, cfg app.Config, apiAddr string) error {
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
	tags := []commands.CreateTag{
		{Meta: meta, Name: "Lead", Order: 1, Automations: []domain.Automation{{Type: domain.AutomationEmailSend, Subject: "Welcome!", Body: "Thanks for signing up."}}},
		{Meta: meta, Name: "Customer", Order: 2, Automations: []domain.Automation{{Type: domain.AutomationCampaignEnroll, CampaignID: "onboarding"}}},
		{Meta: meta, Name: "Newsletter", Order: 3},
	}
	for _, t := range tags {
		if _, err := cmds.CreateTag.Handle(ctx, t); err != nil {
			return err
		}
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
`, acc.AccountID, key.Secret, apiAddr, cfg.APIHost, key.Secret)
	return nil
}
