package integration

import (
	"net/http"
	"strings"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections/paging"
	"github.com/funnelhq/funnel/webhooks"
)

// listEvents serves GET /api/v1/events?after=&types=&limit= (decisions.md "Event feed"): every
// outbound event of the account as webhooks deliver it, oldest first, for polling and for
// catching up after missed webhooks. nextCursor is always present; polling with it returns only
// what came after. An activation token shows only to a key that may read checkout data.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, given := q["limit"]
	if !given {
		limit = []string{""}
	}
	// after is the feed's cursor; cursor, the name every list uses, is accepted too. An error
	// names the one the cursor came in (decisions.md "Error codes": param).
	cursorParam, after := "after", q.Get("after")
	if after == "" && q.Get("cursor") != "" {
		cursorParam, after = "cursor", q.Get("cursor")
	}
	page, err := paging.Parse(limit[0], given, after)
	if err != nil {
		httpapi.WriteFieldError(w, "limit", err.Error())
		return
	}
	types, ok := typesParam(w, q["types"])
	if !ok {
		return
	}
	p := principalOf(r.Context())
	events, next, err := s.deps.Webhooks.Feed.Page(r.Context(), webhooks.FeedQuery{
		AccountID: p.accountID(), Cursor: page.Cursor, Types: types, Limit: page.Limit,
		RevealSecrets: p.key.HasScope(domain.ScopeCheckoutRead),
	})
	if err != nil {
		httpapi.FailList(w, r, err, cursorParam)
		return
	}
	answer := wire.EventFeed{Success: true, Events: make([]wire.WebhookEvent, len(events)), NextCursor: next}
	for i, e := range events {
		if answer.Events[i], err = e.Wire(); err != nil {
			httpapi.Fail(w, r, err)
			return
		}
	}
	httpapi.Answer(w, http.StatusOK, answer)
}

// typesParam reads a types filter: comma-separated, possibly repeated (types=a,b or
// types=a&types=b). Present but naming nothing is a 400, not "every type".
func typesParam(w http.ResponseWriter, values []string) ([]string, bool) {
	var types []string
	for _, v := range values {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				types = append(types, t)
			}
		}
	}
	if values != nil && len(types) == 0 {
		httpapi.WriteCodedError(w, domain.CodeInvalidRequest, "types", "types must name at least one event type")
		return nil, false
	}
	return types, true
}

// eventRoutes registers the routes of the event feed (Router, server.go).
func (s *Server) eventRoutes(v1 routes) {
	v1.add(http.MethodGet, "/events", domain.ScopeEventsRead, s.listEvents)
}
