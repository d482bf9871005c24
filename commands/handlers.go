package commands

import (
	"time"

	"go.uber.org/zap"
)

// Handlers are every command of the service, decorated with logging and metrics. The commands
// below are fields, built once by NewHandlers (infra/service wraps some of them). A new command
// needs no edit here: its file adds a method of Handlers that builds its handler from the shared
// repository and dependencies (the pattern of commands/pause_subscription.go in CONTRIBUTING.md),
// so the command, its handler and its place among the commands are one file.
type Handlers struct {
	// repo, deps and now are what a command's method builds its handler from: one Repository
	// for every handler of the process (its stream locks and kept states are shared).
	repo *Repository
	deps Dependencies
	now  func() time.Time

	CreateAccount     CreateAccountHandler
	IssueAPIKey       IssueAPIKeyHandler
	RevokeAPIKey      RevokeAPIKeyHandler
	DefineCustomField DefineCustomFieldHandler
	CreateTag         CreateTagHandler
	UpsertContact     UpsertContactHandler
	ChangeContactTags ChangeContactTagsHandler
	EraseContact      EraseContactHandler
	CreateCRM         CreateCRMHandler
	CreateLead        CreateLeadHandler
	UpdateLead        UpdateLeadHandler
	CreateForm        CreateFormHandler
	SubmitForm        SubmitFormHandler
	CreateCalendar    CreateCalendarHandler
	BookEvent         BookEventHandler
	CreateProduct     CreateProductHandler

	Purchase           PurchaseHandler
	Rebill             RebillHandler
	Refund             RefundHandler
	CancelSubscription CancelSubscriptionHandler
	ValidateActivation ValidateActivationHandler
	CompleteActivation CompleteActivationHandler

	// EndSubscriptionIfDue is run by the durable timer of cancellations, not by a request.
	EndSubscriptionIfDue EndSubscriptionIfDueHandler

	CreateWebhookSubscription  CreateWebhookSubscriptionHandler
	DeleteWebhookSubscription  DeleteWebhookSubscriptionHandler
	DisableWebhookSubscription DisableWebhookSubscriptionHandler
	EnableWebhookSubscription  EnableWebhookSubscriptionHandler
	RotateWebhookSecret        RotateWebhookSecretHandler
}

// Dependencies are what the handlers need from outside.
type Dependencies struct {
	Store    EventStore
	Tags     TagCatalogue
	Targets  TargetChecker
	Events   OutboundEvents
	Products ProductCatalogue
	// Subscriptions lists the billing subscriptions of a contact, from the log (EraseContact).
	Subscriptions ContactSubscriptions
	// Sealer seals the activation token a purchase records for its webhook, and the signing
	// secrets of webhook subscriptions.
	Sealer   Sealer
	Log      *zap.Logger
	Observer Observer
	// Now is the clock that dates submissions and payments, decides what is in the past, and
	// judges billing periods and activation expiry; nil is time.Now.
	Now func() time.Time
	// StateCacheBytes bounds the memory of the aggregate states the handlers keep between
	// commands (see stateCache); 0 is DefaultStateCacheBytes.
	StateCacheBytes int
}

// NewHandlers wires every handler to its dependencies, with one Repository for them all: the
// handlers of one process share its stream locks and its kept aggregate states.
func NewHandlers(d Dependencies) Handlers {
	now := d.Now
	if now == nil {
		now = time.Now
	}
	repo := NewRepository(d.Store, d.StateCacheBytes)
	return Handlers{
		repo: repo, deps: d, now: now,

		CreateAccount:     NewCreateAccountHandler(repo, d.Log, d.Observer),
		IssueAPIKey:       NewIssueAPIKeyHandler(repo, d.Log, d.Observer),
		RevokeAPIKey:      NewRevokeAPIKeyHandler(repo, d.Log, d.Observer),
		DefineCustomField: NewDefineCustomFieldHandler(repo, d.Log, d.Observer),
		CreateTag:         NewCreateTagHandler(repo, d.Log, d.Observer),
		UpsertContact:     NewUpsertContactHandler(repo, d.Tags, d.Log, d.Observer),
		ChangeContactTags: NewChangeContactTagsHandler(repo, d.Tags, d.Log, d.Observer),
		EraseContact:      NewEraseContactHandler(repo, d.Subscriptions, now, d.Log, d.Observer),
		CreateCRM:         NewCreateCRMHandler(repo, d.Log, d.Observer),
		CreateLead:        NewCreateLeadHandler(repo, d.Tags, d.Log, d.Observer),
		UpdateLead:        NewUpdateLeadHandler(repo, d.Log, d.Observer),
		CreateForm:        NewCreateFormHandler(repo, d.Tags, d.Log, d.Observer),
		SubmitForm:        NewSubmitFormHandler(repo, d.Tags, now, d.Log, d.Observer),
		CreateCalendar:    NewCreateCalendarHandler(repo, d.Log, d.Observer),
		BookEvent:         NewBookEventHandler(repo, now, d.Log, d.Observer),
		CreateProduct:     NewCreateProductHandler(repo, d.Log, d.Observer),

		Purchase:           NewPurchaseHandler(repo, d.Sealer, now, d.Log, d.Observer),
		Rebill:             NewRebillHandler(repo, now, d.Log, d.Observer),
		Refund:             NewRefundHandler(repo, now, d.Log, d.Observer),
		CancelSubscription: NewCancelSubscriptionHandler(repo, now, d.Log, d.Observer),
		ValidateActivation: NewValidateActivationHandler(repo, now, d.Log, d.Observer),
		CompleteActivation: NewCompleteActivationHandler(repo, now, d.Log, d.Observer),

		EndSubscriptionIfDue: NewEndSubscriptionIfDueHandler(repo, now, d.Log, d.Observer),

		CreateWebhookSubscription:  NewCreateWebhookSubscriptionHandler(repo, d.Targets, d.Events, d.Products, d.Sealer, d.Log, d.Observer),
		DeleteWebhookSubscription:  NewDeleteWebhookSubscriptionHandler(repo, d.Log, d.Observer),
		DisableWebhookSubscription: NewDisableWebhookSubscriptionHandler(repo, d.Log, d.Observer),
		EnableWebhookSubscription:  NewEnableWebhookSubscriptionHandler(repo, d.Log, d.Observer),
		RotateWebhookSecret:        NewRotateWebhookSecretHandler(repo, d.Sealer, d.Log, d.Observer),
	}
}
