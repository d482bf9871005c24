package operator

import (
	"context"
	"fmt"
	"net/http"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/api/wire/admin"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections/paging"
)

// history serves GET /admin/v1/accounts/{accountId}/history?contactId=|email=|subscriptionId=:
// the events of one entity, oldest first (or newest first with order=newest), read from the
// event log itself, a page at a time (limit, and cursor: the position of the last event of the
// previous page).
func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	account := accountOf(r)
	q := r.URL.Query()
	given := 0
	for _, k := range []string{"contactId", "email", "subscriptionId"} {
		if q.Get(k) != "" {
			given++
		}
	}
	if given != 1 {
		httpapi.WriteError(w, http.StatusBadRequest, "give exactly one of contactId, email, subscriptionId")
		return
	}
	newest := false
	switch q.Get("order") {
	case "", "oldest":
	case "newest":
		newest = true
	default:
		httpapi.WriteFieldError(w, "order", "order must be oldest or newest")
		return
	}
	id, what := q.Get("subscriptionId"), "subscription"
	read := s.deps.History.ReadSubscriptionHistory
	if newest {
		read = s.deps.History.ReadSubscriptionHistoryNewestFirst
	}
	switch {
	case q.Get("contactId") != "":
		id, what, read = q.Get("contactId"), "contact", s.contactReader(newest)
	case q.Get("email") != "":
		what, read = "contact", s.contactReader(newest)
		var err error
		if id, err = ContactIDForEmail(r.Context(), account.ID, q.Get("email"), s.deps.History); err != nil {
			httpapi.Fail(w, r, err)
			return
		}
	}
	httpapi.WritePage(w, r, "events", func(page paging.Page) ([]admin.HistoryEvent, string, error) {
		var from int64 // the page starts after this position (before it, newest first)
		if page.Cursor != "" {
			if err := paging.DecodeCursor(page.Cursor, &from); err != nil {
				return nil, "", err
			}
		}
		events, err := read(r.Context(), account.ID, id, from, page.Limit+1)
		if err != nil {
			return nil, "", err
		}
		if len(events) == 0 && page.Cursor == "" {
			return nil, "", s.noHistory(r.Context(), account.ID, what, id)
		}
		events, next := paging.Cut(events, page.Limit, func(e domain.Recorded) any { return e.Position })
		view, err := HistoryView(events)
		return view, next, err
	}, func(e admin.HistoryEvent) admin.HistoryEvent { return e })
}

// contactReader reads a contact's history in the order asked for.
func (s *Server) contactReader(newest bool) HistoryReader {
	if newest {
		return s.deps.History.ReadContactHistoryNewestFirst
	}
	return s.deps.History.ReadContactHistory
}

// noHistory is why an entity has no history in the account: it belongs to another account
// (Forbidden), or exists nowhere (NotFound).
func (s *Server) noHistory(ctx context.Context, accountID, what, id string) error {
	owner, err := s.deps.History.StreamAccount(ctx, id)
	switch {
	case err != nil:
		return err
	case owner != "" && owner != accountID:
		return domain.Forbidden("%s belongs to another account", what)
	}
	return domain.NotFound("no history for that %s in this account", what)
}

// HistoryView is the history shape of operator-api.md, shared by the API and `funnel history`.
// Secrets inside events (webhook signing secrets) are shown redacted.
func HistoryView(events []domain.Recorded) ([]admin.HistoryEvent, error) {
	out := make([]admin.HistoryEvent, len(events))
	for i, e := range events {
		if err := redact(&e); err != nil {
			return nil, fmt.Errorf("operator: redact event %d (%s): %w", e.Position, e.Type, err)
		}
		out[i] = admin.HistoryEvent{
			Position: e.Position, EventId: e.ID, StreamId: e.StreamID, Version: e.Version, Type: e.Type,
			SchemaVersion: e.SchemaVersion, OccurredAt: wire.At(e.OccurredAt), Data: e.Data, Metadata: metadataView(e.Metadata),
		}
	}
	return out, nil
}

// redact replaces the data of an event that holds a secret with its redacted form.
func redact(e *domain.Recorded) error {
	if !domain.HoldsSecret(e.Type) {
		return nil
	}
	decoded, err := e.Decode()
	if err != nil {
		return err
	}
	_, version, data, err := domain.EncodeEvent(decoded.(domain.SecretEvent).Redacted())
	if err != nil {
		return err
	}
	// Decoding upcast it to the current version; an erased person's values stay null.
	e.Data, e.SchemaVersion = keepNulls(e.Data, data), version
	return nil
}

// historyRoutes registers the routes of the history read from the log (Router, server.go).
func (s *Server) historyRoutes(admin routes) {
	admin(http.MethodGet, "/accounts/{accountId}/history", s.history)
}
