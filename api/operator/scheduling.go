package operator

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/api/wire/admin"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/projections/paging"
)

// createEventType serves POST /admin/v1/accounts/{accountId}/event-types
// {name, durationMinutes, meetingUrl?, questions}.
func (s *Server) createEventType(w http.ResponseWriter, r *http.Request) {
	var req admin.CreateEventTypeRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	res, err := s.deps.Commands.CreateCalendar.Handle(r.Context(), commands.CreateCalendar{
		Meta: operatorMeta(r), Name: req.Name, DurationMinutes: req.DurationMinutes, MeetingURL: wire.Value(req.MeetingUrl),
		Questions: fieldSpecs(wire.Value(req.Questions)),
	})
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	if !httpapi.AwaitReadModels(w, r, s.deps.Runtime.ReadModels, res.Position) {
		return
	}
	eventType, err := s.deps.Read.Calendars.Get(r.Context(), accountOf(r).ID, res.CalendarID)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.Answer(w, http.StatusCreated, admin.EventTypeResponse{Success: true, EventType: eventTypeView(eventType)})
}

// listEventTypes serves GET /admin/v1/accounts/{accountId}/event-types, in creation order.
func (s *Server) listEventTypes(w http.ResponseWriter, r *http.Request) {
	account := accountOf(r)
	httpapi.WritePage(w, r, "eventTypes", func(page paging.Page) ([]projections.Calendar, string, error) {
		return s.deps.Read.Calendars.List(r.Context(), account.ID, page)
	}, eventTypeView)
}

// listBookings serves GET /admin/v1/accounts/{accountId}/event-types/{eventTypeId}/bookings:
// the calendar's bookings with their answers, newest first.
func (s *Server) listBookings(w http.ResponseWriter, r *http.Request) {
	account := accountOf(r)
	eventType, err := s.deps.Read.Calendars.Get(r.Context(), accountOf(r).ID, mux.Vars(r)["eventTypeId"])
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.WritePage(w, r, "bookings", func(page paging.Page) ([]projections.Booking, string, error) {
		return s.deps.Read.Bookings.List(r.Context(), account.ID, eventType.ID, page)
	}, bookingView)
}

// schedulingRoutes registers the routes of calendars and their bookings (Router, server.go).
func (s *Server) schedulingRoutes(admin routes) {
	admin(http.MethodPost, "/accounts/{accountId}/event-types", s.createEventType)
	admin(http.MethodGet, "/accounts/{accountId}/event-types", s.listEventTypes)
	admin(http.MethodGet, "/accounts/{accountId}/event-types/{eventTypeId}/bookings", s.listBookings)
}
