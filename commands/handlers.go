package commands

import (
	"time"

	"go.uber.org/zap"
)

// Handlers are every command of the service, decorated with logging and metrics.
type Handlers struct {
	CreateAccount     Handler[CreateAccount, CreateAccountResult]
	IssueAPIKey       Handler[IssueAPIKey, IssueAPIKeyResult]
	RevokeAPIKey      Handler[RevokeAPIKey, int64]
	DefineCustomField Handler[DefineCustomField, DefineCustomFieldResult]
	CreateTag         Handler[CreateTag, CreateTagResult]
	UpsertContact     Handler[UpsertContact, ContactResult]
	ChangeContactTags Handler[ChangeContactTags, ContactResult]
	CreateCRM         Handler[CreateCRM, CreateCRMResult]
	CreateLead        Handler[CreateLead, CreateLeadResult]
	UpdateLead        Handler[UpdateLead, UpdateLeadResult]
	CreateForm        Handler[CreateForm, CreateFormResult]
	SubmitForm        Handler[SubmitForm, SubmitFormResult]
	CreateEventType   Handler[CreateEventType, CreateEventTypeResult]
	BookEvent         Handler[BookEvent, BookEventResult]

	CreateWebhookSubscription  Handler[CreateWebhookSubscription, CreateWebhookSubscriptionResult]
	DeleteWebhookSubscription  Handler[DeleteWebhookSubscription, int64]
	DisableWebhookSubscription Handler[DisableWebhookSubscription, int64]
	RotateWebhookSecret        Handler[RotateWebhookSecret, RotateWebhookSecretResult]
}

// Dependencies are what the handlers need from outside.
type Dependencies struct {
	Store    EventStore
	Tags     TagCatalogue
	Targets  TargetChecker
	Events   OutboundEvents
	Log      *zap.Logger
	Observer Observer
	// Now is the clock that dates submissions and decides what is in the past; nil is time.Now.
	Now func() time.Time
}

// NewHandlers wires every handler to its dependencies.
func NewHandlers(d Dependencies) Handlers {
	log := d.Log.Named("commands")
	now := d.Now
	if now == nil {
		now = time.Now
	}
	return Handlers{
		CreateAccount:     decorate[CreateAccount, CreateAccountResult]("CreateAccount", CreateAccountHandler{store: d.Store}, log, d.Observer),
		IssueAPIKey:       decorate[IssueAPIKey, IssueAPIKeyResult]("IssueAPIKey", IssueAPIKeyHandler{store: d.Store}, log, d.Observer),
		RevokeAPIKey:      decorate[RevokeAPIKey, int64]("RevokeAPIKey", RevokeAPIKeyHandler{store: d.Store}, log, d.Observer),
		DefineCustomField: decorate[DefineCustomField, DefineCustomFieldResult]("DefineCustomField", DefineCustomFieldHandler{store: d.Store}, log, d.Observer),
		CreateTag:         decorate[CreateTag, CreateTagResult]("CreateTag", CreateTagHandler{store: d.Store}, log, d.Observer),
		UpsertContact:     decorate[UpsertContact, ContactResult]("UpsertContact", UpsertContactHandler{store: d.Store, tags: d.Tags}, log, d.Observer),
		ChangeContactTags: decorate[ChangeContactTags, ContactResult]("ChangeContactTags", ChangeContactTagsHandler{store: d.Store, tags: d.Tags}, log, d.Observer),
		CreateCRM:         decorate[CreateCRM, CreateCRMResult]("CreateCRM", CreateCRMHandler{store: d.Store}, log, d.Observer),
		CreateLead:        decorate[CreateLead, CreateLeadResult]("CreateLead", CreateLeadHandler{store: d.Store, tags: d.Tags}, log, d.Observer),
		UpdateLead:        decorate[UpdateLead, UpdateLeadResult]("UpdateLead", UpdateLeadHandler{store: d.Store}, log, d.Observer),
		CreateForm:        decorate[CreateForm, CreateFormResult]("CreateForm", CreateFormHandler{store: d.Store, tags: d.Tags}, log, d.Observer),
		SubmitForm:        decorate[SubmitForm, SubmitFormResult]("SubmitForm", SubmitFormHandler{store: d.Store, tags: d.Tags, now: now}, log, d.Observer),
		CreateEventType:   decorate[CreateEventType, CreateEventTypeResult]("CreateEventType", CreateEventTypeHandler{store: d.Store}, log, d.Observer),
		BookEvent:         decorate[BookEvent, BookEventResult]("BookEvent", BookEventHandler{store: d.Store, now: now}, log, d.Observer),

		CreateWebhookSubscription:  decorate[CreateWebhookSubscription, CreateWebhookSubscriptionResult]("CreateWebhookSubscription", CreateWebhookSubscriptionHandler{store: d.Store, targets: d.Targets, events: d.Events}, log, d.Observer),
		DeleteWebhookSubscription:  decorate[DeleteWebhookSubscription, int64]("DeleteWebhookSubscription", DeleteWebhookSubscriptionHandler{store: d.Store}, log, d.Observer),
		DisableWebhookSubscription: decorate[DisableWebhookSubscription, int64]("DisableWebhookSubscription", DisableWebhookSubscriptionHandler{store: d.Store}, log, d.Observer),
		RotateWebhookSecret:        decorate[RotateWebhookSecret, RotateWebhookSecretResult]("RotateWebhookSecret", RotateWebhookSecretHandler{store: d.Store}, log, d.Observer),
	}
}
