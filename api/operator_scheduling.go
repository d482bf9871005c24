package api

import (
	"net/http"

	"github.com/gorilla/mux"

	"funnel/commands"
)

// createEventType serves POST /admin/v1/accounts/{accountId}/event-types
// {name, durationMinutes, meetingUrl?, questions}.
func (s *Server) createEventType(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name            string      `json:"name"`
		DurationMinutes int         `json:"durationMinutes"`
		MeetingURL      string      `json:"meetingUrl"`
		Questions       []fieldSpec `json:"questions"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	res, err := s.deps.Commands.CreateEventType.Handle(r.Context(), commands.CreateEventType{
		Meta: operatorMeta(r), Name: req.Name, DurationMinutes: req.DurationMinutes, MeetingURL: req.MeetingURL, Questions: fieldSpecs(req.Questions),
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !s.awaitReadModels(w, r, res.Position) {
		return
	}
	eventType, err := s.deps.EventTypes.EventType(r.Context(), res.EventTypeID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, object{"eventType": eventTypeView(eventType)})
}

// listOperatorEventTypes serves GET /admin/v1/accounts/{accountId}/event-types, in creation order.
func (s *Server) listOperatorEventTypes(w http.ResponseWriter, r *http.Request) {
	account, ok := s.existingAccount(w, r)
	if !ok {
		return
	}
	page, ok := pageOf(w, r)
	if !ok {
		return
	}
	types, next, err := s.deps.EventTypes.List(r.Context(), account.ID, page)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	views := make([]object, len(types))
	for i, t := range types {
		views[i] = eventTypeView(t)
	}
	writeJSON(w, http.StatusOK, withCursor(object{"eventTypes": views}, next))
}

// listOperatorBookings serves GET /admin/v1/accounts/{accountId}/event-types/{eventTypeId}/bookings:
// the calendar's bookings with their answers, newest first.
func (s *Server) listOperatorBookings(w http.ResponseWriter, r *http.Request) {
	account, ok := s.existingAccount(w, r)
	if !ok {
		return
	}
	page, ok := pageOf(w, r)
	if !ok {
		return
	}
	eventType, err := s.deps.EventTypes.EventType(r.Context(), mux.Vars(r)["eventTypeId"])
	if err != nil || eventType.AccountID != account.ID {
		s.failOperatorLookup(w, r, "event type", err)
		return
	}
	bookings, next, err := s.deps.Bookings.List(r.Context(), account.ID, eventType.ID, page)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	views := make([]object, len(bookings))
	for i, b := range bookings {
		views[i] = bookingView(b)
		views[i]["timezone"] = orNull(b.Timezone)
		views[i]["answers"] = b.Answers
	}
	writeJSON(w, http.StatusOK, withCursor(object{"bookings": views}, next))
}
