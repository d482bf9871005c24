package operator

import (
	"net/http"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/projections/paging"
)

// listAccounts serves GET /admin/v1/accounts: every account, oldest first, a page at a time (the
// operator token sees them all; the console starts here).
func (s *Server) listAccounts(w http.ResponseWriter, r *http.Request) {
	httpapi.WritePage(w, r, "accounts", func(page paging.Page) ([]projections.Account, string, error) {
		return s.deps.Read.Accounts.List(r.Context(), page)
	}, accountView)
}
