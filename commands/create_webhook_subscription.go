package commands

import (
	"context"
	"sort"
	"strings"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// CreateWebhookSubscription subscribes a URL to outbound events: a custom connection or an
// automation tool's connection (operator API), or a REST Hook subscription (integration API).
type CreateWebhookSubscription struct {
	Meta Meta
	Spec domain.SubscriptionSpec
}

// CreateWebhookSubscriptionResult carries the signing secret: the only time it is shown.
type CreateWebhookSubscriptionResult struct {
	SubscriptionID string
	Secret         string
	Position       int64
}

// CreateWebhookSubscriptionHandler handles CreateWebhookSubscription.
type CreateWebhookSubscriptionHandler = Handler[CreateWebhookSubscription, CreateWebhookSubscriptionResult]

// NewCreateWebhookSubscriptionHandler returns the handler of CreateWebhookSubscription, logged and measured.
func NewCreateWebhookSubscriptionHandler(store EventStore, targets TargetChecker, events OutboundEvents, log *zap.Logger, obs Observer) CreateWebhookSubscriptionHandler {
	return decorate[CreateWebhookSubscription, CreateWebhookSubscriptionResult](createWebhookSubscriptionHandler{store: store, targets: targets, events: events}, log, obs)
}

type createWebhookSubscriptionHandler struct {
	store   EventStore
	targets TargetChecker
	events  OutboundEvents
}

// Handle creates the subscription.
func (h createWebhookSubscriptionHandler) Handle(ctx context.Context, cmd CreateWebhookSubscription) (CreateWebhookSubscriptionResult, error) {
	url, err := h.targets.CheckURL(ctx, cmd.Spec.URL)
	if err != nil {
		return CreateWebhookSubscriptionResult{}, err
	}
	spec := cmd.Spec
	spec.URL = url
	if spec.Secret == "" {
		spec.Secret = domain.NewWebhookSecret()
	}
	id := domain.NewID("wh")
	pos, err := execute(ctx, h.store, cmd.Meta, id, func(ctx context.Context, s *session) error {
		if _, err := loadAccount(ctx, s, cmd.Meta.AccountID); err != nil {
			return err
		}
		if err := checkFilterIDs(ctx, h.store, cmd.Meta.AccountID, spec.Filters); err != nil {
			return err
		}
		sub := domain.WebhookSubscriptionStream(id)
		if err := s.load(ctx, sub); err != nil {
			return err
		}
		return sub.Subscribe(cmd.Meta.AccountID, spec, h.events)
	})
	if err != nil {
		return CreateWebhookSubscriptionResult{}, err
	}
	return CreateWebhookSubscriptionResult{SubscriptionID: id, Secret: spec.Secret, Position: pos}, nil
}

// checkFilterIDs refuses form and calendar ids that are not the account's own (checkout ids are
// checked for shape only until checkouts exist). Whether a form or a calendar exists, and whose it
// is, never changes, so they are read outside the session: a calendar's stream also takes every
// booking, and the subscription must not conflict with those.
func checkFilterIDs(ctx context.Context, store EventStore, accountID string, f domain.WebhookFilters) error {
	var unknownForms, unknownCalendars []string
	for _, id := range f.FormIDs {
		form := domain.FormStream(strings.TrimSpace(id))
		if err := read(ctx, store, form); err != nil {
			return err
		}
		if !form.Exists() || form.AccountID() != accountID {
			unknownForms = append(unknownForms, id)
		}
	}
	for _, id := range f.EventTypeIDs {
		calendar := domain.EventTypeStream(strings.TrimSpace(id))
		if err := read(ctx, store, calendar); err != nil {
			return err
		}
		if !calendar.Exists() || calendar.AccountID() != accountID {
			unknownCalendars = append(unknownCalendars, id)
		}
	}
	if len(unknownForms) > 0 {
		sort.Strings(unknownForms)
		return domain.Invalid("formIds: unknown form ids: %s", strings.Join(unknownForms, ", "))
	}
	if len(unknownCalendars) > 0 {
		sort.Strings(unknownCalendars)
		return domain.Invalid("eventTypeIds: unknown event type ids: %s", strings.Join(unknownCalendars, ", "))
	}
	return nil
}
