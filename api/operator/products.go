package operator

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire/admin"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/projections/paging"
)

// productRequest is the body of POST /admin/v1/accounts/{accountId}/products.
type productRequest struct {
	Name              string `json:"name"`
	InternalName      string `json:"internalName"`
	Forwarding        string `json:"forwarding"`
	ActivationBaseURL string `json:"activationBaseUrl"`
	PricingTiers      []struct {
		Name         string `json:"name"`
		Amount       int64  `json:"amount"`
		Currency     string `json:"currency"`
		Interval     string `json:"interval"`
		Installments int    `json:"installments"`
	} `json:"pricingTiers"`
	Bumps []struct {
		Name   string `json:"name"`
		Amount int64  `json:"amount"`
	} `json:"bumps"`
}

func (req productRequest) spec() domain.ProductSpec {
	spec := domain.ProductSpec{Name: req.Name, InternalName: req.InternalName, Forwarding: req.Forwarding, ActivationBaseURL: req.ActivationBaseURL}
	for _, t := range req.PricingTiers {
		spec.Tiers = append(spec.Tiers, domain.PricingTierSpec{Name: t.Name, Amount: t.Amount, Currency: t.Currency, Interval: t.Interval, Installments: t.Installments})
	}
	for _, b := range req.Bumps {
		spec.Bumps = append(spec.Bumps, domain.BumpSpec{Name: b.Name, Amount: b.Amount})
	}
	return spec
}

// createProduct serves POST /admin/v1/accounts/{accountId}/products {name, internalName?,
// forwarding?, activationBaseUrl?, pricingTiers, bumps?}.
func (s *Server) createProduct(w http.ResponseWriter, r *http.Request) {
	var req productRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	res, err := s.deps.Commands.CreateProduct.Handle(r.Context(), commands.CreateProduct{Meta: operatorMeta(r), Spec: req.spec()})
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	if !httpapi.AwaitReadModels(w, r, s.deps.Runtime.ReadModels, res.Position) {
		return
	}
	product, err := s.deps.Read.Products.Get(r.Context(), accountOf(r).ID, res.ProductID)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.Answer(w, http.StatusCreated, admin.ProductResponse{Success: true, Product: productView(product)})
}

// listProducts serves GET /admin/v1/accounts/{accountId}/products, in creation order.
func (s *Server) listProducts(w http.ResponseWriter, r *http.Request) {
	account := accountOf(r)
	httpapi.WritePage(w, r, "products", func(page paging.Page) ([]projections.Product, string, error) {
		return s.deps.Read.Products.List(r.Context(), account.ID, page)
	}, productView)
}

// getProduct serves GET /admin/v1/accounts/{accountId}/products/{productId}.
func (s *Server) getProduct(w http.ResponseWriter, r *http.Request) {
	product, err := s.deps.Read.Products.Get(r.Context(), accountOf(r).ID, mux.Vars(r)["productId"])
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.Answer(w, http.StatusOK, admin.ProductResponse{Success: true, Product: productView(product)})
}
