package operator

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire/admin"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/projections/paging"
)

// createProduct serves POST /admin/v1/accounts/{accountId}/products {name, internalName?,
// forwarding?, activationBaseUrl?, pricingTiers, bumps?}.
func (s *Server) createProduct(w http.ResponseWriter, r *http.Request) {
	var req admin.CreateProductRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	res, err := s.deps.Commands.CreateProduct.Handle(r.Context(), commands.CreateProduct{Meta: operatorMeta(r), Spec: productSpec(req)})
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

// productRoutes registers the routes of checkout products (Router, server.go).
func (s *Server) productRoutes(admin routes) {
	admin(http.MethodPost, "/accounts/{accountId}/products", s.createProduct)
	admin(http.MethodGet, "/accounts/{accountId}/products", s.listProducts)
	admin(http.MethodGet, "/accounts/{accountId}/products/{productId}", s.getProduct)
}
