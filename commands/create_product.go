package commands

import (
	"context"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// CreateProduct defines a checkout: its pricing tiers, its bumps and what a purchase forwards
// (operator API).
type CreateProduct struct {
	Meta Meta
	Spec domain.ProductSpec
}

// CreateProductResult names the new product.
type CreateProductResult struct {
	ProductID string
	Position  int64
}

// CreateProductHandler handles CreateProduct.
type CreateProductHandler = Handler[CreateProduct, CreateProductResult]

// NewCreateProductHandler returns the handler of CreateProduct, logged and measured.
func NewCreateProductHandler(repo *Repository, log *zap.Logger, obs Observer) CreateProductHandler {
	return decorate[CreateProduct, CreateProductResult](createProductHandler{repo: repo}, log, obs)
}

type createProductHandler struct {
	repo *Repository
}

// Handle creates the product.
func (h createProductHandler) Handle(ctx context.Context, cmd CreateProduct) (CreateProductResult, error) {
	id := domain.NewID(productPrefix)
	pos, err := execute(ctx, h.repo, cmd.Meta, id, func(ctx context.Context, s *session) error {
		account, err := loadAccount(ctx, s, cmd.Meta.AccountID)
		if err != nil {
			return err
		}
		product := domain.ProductStream(id)
		if err := s.track(product); err != nil {
			return err
		}
		return product.Create(account, cmd.Spec, newIDs(pricingTierPrefix), newIDs(bumpPrefix))
	})
	if err != nil {
		return CreateProductResult{}, err
	}
	return CreateProductResult{ProductID: id, Position: pos}, nil
}
