package projections

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections/paging"
)

// Products is the read model of checkout products with their pricing tiers and bumps.
type Products struct {
	readModel[writer]
	db *sql.DB
}

// NewProducts reads the products read model from db. Products are created by an operator, one
// at a time: there is no burst worth batching.
func NewProducts(db *sql.DB) *Products {
	return &Products{db: db, readModel: eachEvent(db, "products", []string{"products"}, on(insertProduct))}
}

func insertProduct(w writer, r domain.Recorded, e domain.ProductCreated) error {
	tiers, err := json.Marshal(wire.List(e.PricingTiers))
	if err != nil {
		return fmt.Errorf("product pricing tiers: %w", err)
	}
	bumps, err := json.Marshal(wire.List(e.Bumps))
	if err != nil {
		return fmt.Errorf("product bumps: %w", err)
	}
	return w.exec(`INSERT INTO products (id, account_id, name, internal_name, forwarding, activation_base_url, pricing_tiers, bumps, created_at, seq)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		e.ProductID, e.AccountID, e.Name, e.InternalName, e.Forwarding, e.ActivationBaseURL, string(tiers), string(bumps), millis(r.OccurredAt), r.Position)
}

// Product is a checkout product as the APIs show it.
type Product struct {
	ID                string
	AccountID         string
	Name              string
	InternalName      string
	Forwarding        string
	ActivationBaseURL string
	PricingTiers      []domain.PricingTier
	Bumps             []domain.Bump
	CreatedAt         time.Time
	seq               int64
}

const selectProducts = `SELECT id, account_id, name, internal_name, forwarding, activation_base_url, pricing_tiers, bumps, created_at, seq FROM products`

func scanProduct(row interface{ Scan(...any) error }) (Product, error) {
	var p Product
	var tiers, bumps string
	var created int64
	if err := row.Scan(&p.ID, &p.AccountID, &p.Name, &p.InternalName, &p.Forwarding, &p.ActivationBaseURL, &tiers, &bumps, &created, &p.seq); err != nil {
		return Product{}, notFound(err)
	}
	if err := json.Unmarshal([]byte(tiers), &p.PricingTiers); err != nil {
		return Product{}, fmt.Errorf("projections: product pricing tiers: %w", err)
	}
	if err := json.Unmarshal([]byte(bumps), &p.Bumps); err != nil {
		return Product{}, fmt.Errorf("projections: product bumps: %w", err)
	}
	p.CreatedAt = fromMillis(created)
	return p, nil
}

// Get returns one product of an account: a domain NotFound error when there is none, a domain
// Forbidden one when it belongs to another account (ofAccount).
func (p *Products) Get(ctx context.Context, accountID, id string) (Product, error) {
	row, err := p.byID(ctx, id)
	return ofAccount(row, err, row.AccountID, accountID, "product")
}

// byID returns one product of any account (ErrNotFound when there is none).
func (p *Products) byID(ctx context.Context, id string) (Product, error) {
	product, err := scanProduct(p.db.QueryRowContext(ctx, selectProducts+` WHERE id = $1`, id))
	if err != nil {
		return Product{}, fmt.Errorf("projections: product %s: %w", id, err)
	}
	return product, nil
}

// List returns one page of an account's products, in creation order.
func (p *Products) List(ctx context.Context, accountID string, page paging.Page) ([]Product, string, error) {
	out, next, err := listInCreationOrder(ctx, p.db, scanProduct, func(product Product) int64 { return product.seq }, page, selectProducts, `account_id = $1`, accountID)
	if err != nil {
		return nil, "", fmt.Errorf("projections: list products: %w", err)
	}
	return out, next, nil
}

// PricingOptions returns the ids of the pricing tiers and the bumps of all an account's products
// (commands.ProductCatalogue), which webhook filters may name.
func (p *Products) PricingOptions(ctx context.Context, accountID string) (tierIDs, bumpIDs []string, err error) {
	all, err := queryAll(ctx, p.db, scanProduct, selectProducts+` WHERE account_id = $1 ORDER BY seq`, accountID)
	if err != nil {
		return nil, nil, fmt.Errorf("projections: pricing options of %s: %w", accountID, err)
	}
	for _, product := range all {
		for _, t := range product.PricingTiers {
			tierIDs = append(tierIDs, t.ID)
		}
		for _, b := range product.Bumps {
			bumpIDs = append(bumpIDs, b.ID)
		}
	}
	return tierIDs, bumpIDs, nil
}
