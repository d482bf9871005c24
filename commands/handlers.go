package commands

import (
	"time"

	"go.uber.org/zap"
)

// Handlers are every command of the service, decorated with logging and metrics.
type Handlers struct {
	CreateAccount     CreateAccountHandler
	IssueAPIKey       IssueAPIKeyHandler
	RevokeAPIKey      RevokeAPIKeyHandler
	DefineCustomField DefineCustomFieldHandler
	CreateTag         CreateTagHandler
	UpsertContact     UpsertContactHandler
	ChangeContactTags ChangeContactTagsHandler
	CreateCRM         CreateCRMHandler
	CreateLead        CreateLeadHandler
	UpdateLead        UpdateLeadHandler
	CreateForm        CreateFormHandler
	SubmitForm        SubmitFormHandler
	CreateEventType   CreateEventTypeHandler
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
	RotateWebhookSecret        RotateWebhookSecretHandler
}

// Dependencies are what the handlers need from outside.
type Dependencies struct {
	Store    EventStore
	Tags     TagCatalogue
	Targets  TargetChecker
	Events   OutboundEvents
	Products ProductCatalogue
	// Sealer seals the activation token a purchase records for its webhook.
	Sealer   Sealer
	Log      *zap.Logger
	Observer Observer
	// Now is the clock that dates submissions and payments, decides what is in the past, and
	// judges billing periods and activation expiry; nil is time.Now.
	Now func() time.Time
}

// NewHandlers wires every handler to its dependencies.
func NewHandlers(d Dependencies) Handlers {
	now := d.Now
	if now == nil {
		now = time.Now
	}
	return Handlers{
		CreateAccount:     NewCreateAccountHandler(d.Store, d.Log, d.Observer),
		IssueAPIKey:       NewIssueAPIKeyHandler(d.Store, d.Log, d.Observer),
		RevokeAPIKey:      NewRevokeAPIKeyHandler(d.Store, d.Log, d.Observer),
		DefineCustomField: NewDefineCustomFieldHandler(d.Store, d.Log, d.Observer),
		CreateTag:         NewCreateTagHandler(d.Store, d.Log, d.Observer),
		UpsertContact:     NewUpsertContactHandler(d.Store, d.Tags, d.Log, d.Observer),
		ChangeContactTags: NewChangeContactTagsHandler(d.Store, d.Tags, d.Log, d.Observer),
		CreateCRM:         NewCreateCRMHandler(d.Store, d.Log, d.Observer),
		CreateLead:        NewCreateLeadHandler(d.Store, d.Tags, d.Log, d.Observer),
		UpdateLead:        NewUpdateLeadHandler(d.Store, d.Log, d.Observer),
		CreateForm:        NewCreateFormHandler(d.Store, d.Tags, d.Log, d.Observer),
		SubmitForm:        NewSubmitFormHandler(d.Store, d.Tags, now, d.Log, d.Observer),
		CreateEventType:   NewCreateEventTypeHandler(d.Store, d.Log, d.Observer),
		BookEvent:         NewBookEventHandler(d.Store, now, d.Log, d.Observer),
		CreateProduct:     NewCreateProductHandler(d.Store, d.Log, d.Observer),

		Purchase:           NewPurchaseHandler(d.Store, d.Sealer, now, d.Log, d.Observer),
		Rebill:             NewRebillHandler(d.Store, now, d.Log, d.Observer),
		Refund:             NewRefundHandler(d.Store, now, d.Log, d.Observer),
		CancelSubscription: NewCancelSubscriptionHandler(d.Store, now, d.Log, d.Observer),
		ValidateActivation: NewValidateActivationHandler(d.Store, now, d.Log, d.Observer),
		CompleteActivation: NewCompleteActivationHandler(d.Store, now, d.Log, d.Observer),

		EndSubscriptionIfDue: NewEndSubscriptionIfDueHandler(d.Store, now, d.Log, d.Observer),

		CreateWebhookSubscription:  NewCreateWebhookSubscriptionHandler(d.Store, d.Targets, d.Events, d.Products, d.Log, d.Observer),
		DeleteWebhookSubscription:  NewDeleteWebhookSubscriptionHandler(d.Store, d.Log, d.Observer),
		DisableWebhookSubscription: NewDisableWebhookSubscriptionHandler(d.Store, d.Log, d.Observer),
		RotateWebhookSecret:        NewRotateWebhookSecretHandler(d.Store, d.Log, d.Observer),
	}
}
