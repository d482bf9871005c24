package commands

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// CreateWebhookSubscription subscribes a URL to outbound events: a custom connection or an
// automation tool's connection (operator API), or a REST Hook subscription (integration API).
type CreateWebhookSubscription struct {
	Meta Meta
	Spec domain.WebhookSubscriptionSpec
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
// The signing secret is sealed with sealer before the log keeps it.
func NewCreateWebhookSubscriptionHandler(repo *Repository, targets TargetChecker, events OutboundEvents, products ProductCatalogue, sealer Sealer, log *zap.Logger, obs Observer) CreateWebhookSubscriptionHandler {
	return decorate[CreateWebhookSubscription, CreateWebhookSubscriptionResult](createWebhookSubscriptionHandler{repo: repo, targets: targets, events: events, products: products, sealer: sealer}, log, obs)
}

type createWebhookSubscriptionHandler struct {
	sealer   Sealer
	repo     *Repository
	targets  TargetChecker
	events   OutboundEvents
	products ProductCatalogue
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
	sealed, err := h.sealer.Seal([]byte(spec.Secret), domain.WebhookSecretSealing(id))
	if err != nil {
		return CreateWebhookSubscriptionResult{}, fmt.Errorf("commands: seal the signing secret: %w", err)
	}
	spec.SealedSecret = sealed
	pos, err := execute(ctx, h.repo, cmd.Meta, id, func(ctx context.Context, s *session) error {
		if _, err := loadAccount(ctx, s, cmd.Meta.AccountID); err != nil {
			return err
		}
		if err := checkFilterIDs(ctx, h.repo, h.products, cmd.Meta.AccountID, spec.Filters); err != nil {
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

// checkFilterIDs refuses form, calendar and product ids that are not the account's own, and
// pricing tier and bump ids that belong to none of its products ("__none__" is not an id). Whether
// a form, a calendar or a product exists, and whose it is, never changes, so they are read outside
// the session: a calendar's stream also takes every booking, and the subscription must not
// conflict with those.
func checkFilterIDs(ctx context.Context, repo *Repository, products ProductCatalogue, accountID string, f domain.WebhookFilters) error {
	var unknownForms, unknownCalendars, unknownProducts []string
	for _, id := range f.FormIDs {
		form := domain.FormStream(strings.TrimSpace(id))
		if err := read(ctx, repo, form); err != nil {
			return err
		}
		if !form.Exists() || form.AccountID() != accountID {
			unknownForms = append(unknownForms, id)
		}
	}
	for _, id := range f.CalendarIDs {
		calendar := domain.CalendarStream(strings.TrimSpace(id))
		if err := read(ctx, repo, calendar); err != nil {
			return err
		}
		if !calendar.Exists() || calendar.AccountID() != accountID {
			unknownCalendars = append(unknownCalendars, id)
		}
	}
	for _, id := range f.ProductIDs {
		id = strings.TrimSpace(id)
		if id == "" || id == domain.FilterNone {
			continue // not ids at all: the domain refuses them with a message that says why
		}
		// The prefix keeps a stream of another kind from being read as a product.
		if !isID(id, productPrefix) {
			unknownProducts = append(unknownProducts, id)
			continue
		}
		product := domain.ProductStream(id)
		if err := read(ctx, repo, product); err != nil {
			return err
		}
		if !product.Exists() || product.AccountID() != accountID {
			unknownProducts = append(unknownProducts, id)
		}
	}
	if len(unknownForms) > 0 {
		sort.Strings(unknownForms)
		return domain.InvalidField("formIds", "formIds: unknown form ids: %s", strings.Join(unknownForms, ", "))
	}
	if len(unknownCalendars) > 0 {
		sort.Strings(unknownCalendars)
		return domain.InvalidField("eventTypeIds", "eventTypeIds: unknown event type ids: %s", strings.Join(unknownCalendars, ", "))
	}
	if len(unknownProducts) > 0 {
		sort.Strings(unknownProducts)
		return domain.InvalidField("productIds", "productIds: unknown product ids: %s", strings.Join(unknownProducts, ", "))
	}
	return checkPricingFilterIDs(ctx, products, accountID, f)
}

// checkPricingFilterIDs refuses pricingTierIds and bumpIds that belong to none of the account's
// products. It reads the catalogue only when a filter names ids.
func checkPricingFilterIDs(ctx context.Context, products ProductCatalogue, accountID string, f domain.WebhookFilters) error {
	named := func(ids []string) bool { return len(ids) > 0 && !(len(ids) == 1 && ids[0] == domain.FilterNone) }
	if !named(f.PricingTierIDs) && !named(f.BumpIDs) {
		return nil
	}
	tierIDs, bumpIDs, err := products.PricingOptions(ctx, accountID)
	if err != nil {
		return err
	}
	if unknown := unknownIDs(f.PricingTierIDs, tierIDs); len(unknown) > 0 {
		return domain.InvalidField("pricingTierIds", "pricingTierIds: not pricing tiers of this account's products: %s", strings.Join(unknown, ", "))
	}
	if unknown := unknownIDs(f.BumpIDs, bumpIDs); len(unknown) > 0 {
		return domain.InvalidField("bumpIds", "bumpIds: not bumps of this account's products: %s", strings.Join(unknown, ", "))
	}
	return nil
}

// unknownIDs returns, sorted, the ids asked for that are not known ("__none__" and blanks aside:
// the domain refuses blanks).
func unknownIDs(asked, known []string) []string {
	var unknown []string
	for _, id := range asked {
		id = strings.TrimSpace(id)
		if id != "" && id != domain.FilterNone && !slices.Contains(known, id) {
			unknown = append(unknown, id)
		}
	}
	sort.Strings(unknown)
	return unknown
}
