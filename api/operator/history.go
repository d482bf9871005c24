package operator

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/wireformat"
)

// history serves GET /admin/v1/accounts/{accountId}/history?contactId=|email=|subscriptionId=:
// every event of one entity, oldest first, read from the event log itself.
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
	var events []domain.Recorded
	var err error
	id, what := q.Get("subscriptionId"), "subscription"
	switch {
	case q.Get("contactId") != "":
		id, what = q.Get("contactId"), "contact"
		events, err = s.deps.History.ReadContactHistory(r.Context(), account.ID, id)
	case q.Get("email") != "":
		id, what = domain.ContactIDFor(account.ID, q.Get("email")), "contact"
		events, err = s.deps.History.ReadContactHistory(r.Context(), account.ID, id)
	default:
		events, err = s.deps.History.ReadSubscriptionHistory(r.Context(), account.ID, id)
	}
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	if len(events) == 0 {
		if s.ownedHistory(w, r, what, id) {
			httpapi.WriteError(w, http.StatusNotFound, "no history for that entity in this account")
		}
		return
	}
	view, err := HistoryView(events)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, httpapi.Object{"events": view})
}

// ownedHistory answers, for an entity with no history in the account, 403 when it is another
// account's and 404 when it exists nowhere; it returns true when it answered nothing.
func (s *Server) ownedHistory(w http.ResponseWriter, r *http.Request, what, id string) bool {
	owner, err := s.deps.History.StreamAccount(r.Context(), id)
	if err == nil && owner == "" {
		err = projections.ErrNotFound
	}
	return owned(w, r, what, owner, err)
}

// HistoryView is the history shape of operator-api.md, shared by the API and `funnel history`.
// Secrets inside events (webhook signing secrets) are shown redacted.
func HistoryView(events []domain.Recorded) ([]httpapi.Object, error) {
	out := make([]httpapi.Object, len(events))
	for i, e := range events {
		if err := redact(&e); err != nil {
			return nil, fmt.Errorf("operator: redact event %d (%s): %w", e.Position, e.Type, err)
		}
		out[i] = httpapi.Object{
			"position":      e.Position,
			"eventId":       e.ID,
			"streamId":      e.StreamID,
			"version":       e.Version,
			"type":          e.Type,
			"schemaVersion": e.SchemaVersion,
			"occurredAt":    wireformat.Time(e.OccurredAt),
			"data":          json.RawMessage(e.Data),
			"metadata":      e.Metadata,
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
	e.Data, e.SchemaVersion = data, version // decoding upcast it to the current version
	return nil
}
