package operator

import (
	"context"
	"net/http"
	"slices"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/projections/paging"
)

// Projections tells how far each read model is and rebuilds one from the log, as `funnel
// projections list` and `rebuild` do. An interface, so that this package imports no adapter.
type Projections interface {
	// Statuses returns the log's head and every projection, in the order the pipeline runs them.
	Statuses(ctx context.Context) (int64, []ProjectionStatus, error)
	// Rebuild rebuilds one read model and swaps it in, answering the position it reached: a
	// domain NotFound error for an unknown name, Conflict for one that cannot be rebuilt or is
	// being rebuilt.
	Rebuild(ctx context.Context, name string) (int64, error)
}

// ProjectionStatus is how far one projection is.
type ProjectionStatus struct {
	Name        string
	Position    int64 // how far the read model reflects the log
	Behind      int64 // the events it still has to apply
	Rebuildable bool  // false for the webhook outbox: a rebuild would send every delivery again
}

// listProjections serves GET /admin/v1/projections: every projection with its position and how
// many events it has yet to apply, in the order the pipeline runs them, paged like every list
// (the cursor names the last projection of the previous page).
func (s *Server) listProjections(w http.ResponseWriter, r *http.Request) {
	httpapi.WritePage(w, r, "projections", func(page paging.Page) ([]ProjectionStatus, string, error) {
		_, statuses, err := s.deps.Projections.Statuses(r.Context())
		if err != nil {
			return nil, "", err
		}
		if page.Cursor != "" {
			var after string
			if err := paging.DecodeCursor(page.Cursor, &after); err != nil {
				return nil, "", err
			}
			i := slices.IndexFunc(statuses, func(p ProjectionStatus) bool { return p.Name == after })
			if i < 0 {
				return nil, "", paging.ErrBadCursor
			}
			statuses = statuses[i+1:]
		}
		statuses, next := paging.Cut(statuses, page.Limit, func(p ProjectionStatus) any { return p.Name })
		return statuses, next, nil
	}, projectionView)
}

// rebuildProjection serves POST /admin/v1/projections/{name}/rebuild: it rebuilds the read model
// from the log while the old one keeps serving, swaps it in, and answers once that is done with
// the position reached and the projection's status. A client that goes away does not stop the
// rebuild half way: it runs to its end.
func (s *Server) rebuildProjection(w http.ResponseWriter, r *http.Request) {
	name := mux.Vars(r)["name"]
	position, err := s.deps.Projections.Rebuild(context.WithoutCancel(r.Context()), name)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	_, statuses, err := s.deps.Projections.Statuses(r.Context())
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.Answer(w, http.StatusOK, projectionRebuiltView(position, name, statuses))
}

// projectionRoutes registers the routes of the read models' status and rebuild (Router, server.go).
func (s *Server) projectionRoutes(admin routes) {
	admin(http.MethodGet, "/projections", s.listProjections)
	admin(http.MethodPost, "/projections/{name}/rebuild", s.rebuildProjection)
}
