package integration

import (
	"github.com/funnelhq/funnel/domain"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/projections/paging"
)

// listProducts serves GET /api/v1/products: the account's checkouts with their pricing tiers and
// bumps, in creation order.
func (s *Server) listProducts(w http.ResponseWriter, r *http.Request) {
	httpapi.WritePage(w, r, "products", func(page paging.Page) ([]projections.Product, string, error) {
		return s.deps.Read.Products.List(r.Context(), principalOf(r.Context()).accountID(), page)
	}, productView)
}

// getProduct serves GET /api/v1/products/{productId}: a checkout with its pricing options and bumps.
func (s *Server) getProduct(w http.ResponseWriter, r *http.Request) {
	product, err := s.deps.Read.Products.Get(r.Context(), principalOf(r.Context()).accountID(), mux.Vars(r)["productId"])
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.Answer(w, http.StatusOK, wire.ProductResponse{Success: true, Product: productView(product)})
}

// productRoutes registers the routes of checkout products (Router, server.go).
func (s *Server) productRoutes(v1 routes) {
	v1.add(http.MethodGet, "/products", domain.ScopeCheckoutRead, s.listProducts)
	v1.add(http.MethodGet, "/products/{productId}", domain.ScopeCheckoutRead, s.getProduct)
}
