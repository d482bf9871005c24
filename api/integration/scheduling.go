package integration

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/projections/paging"
)

// listEventTypes serves GET /api/v1/scheduling/event-types: the account's calendars, in creation order.
func (s *Server) listEventTypes(w http.ResponseWriter, r *http.Request) {
	httpapi.WritePage(w, r, "eventTypes", func(page paging.Page) ([]projections.Calendar, string, error) {
		return s.deps.Read.Calendars.List(r.Context(), principalOf(r.Context()).accountID(), page)
	}, eventTypeView)
}

// getEventType serves GET /api/v1/scheduling/event-types/{eventTypeId}.
func (s *Server) getEventType(w http.ResponseWriter, r *http.Request) {
	eventType, err := s.deps.Read.Calendars.Get(r.Context(), principalOf(r.Context()).accountID(), mux.Vars(r)["eventTypeId"])
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.Answer(w, http.StatusOK, wire.EventTypeResponse{Success: true, EventType: eventTypeView(eventType)})
}

// bookEvent serves POST /api/v1/scheduling/{eventTypeId}/bookings.
func (s *Server) bookEvent(w http.ResponseWriter, r *http.Request) {
	var req wire.CreateBookingRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	if req.StartTime == nil {
		httpapi.WriteFieldError(w, "startTime", "startTime is required")
		return
	}
	start, err := domain.ParseTimestamp(*req.StartTime)
	if err != nil {
		httpapi.WriteFieldError(w, "startTime", "startTime must be an RFC 3339 timestamp, such as 2030-01-31T09:30:00Z")
		return
	}
	res, err := s.deps.Commands.BookEvent.Handle(r.Context(), commands.BookEvent{
		Meta:        principalOf(r.Context()).meta(r),
		EventTypeID: mux.Vars(r)["eventTypeId"],
		Start:       start,
		Timezone:    req.Timezone,
		Answers:     wire.Value(req.Answers),
	})
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	if !httpapi.AwaitReadModels(w, r, s.deps.Runtime.ReadModels, res.Position) {
		return
	}
	booking, err := s.deps.Read.Bookings.Get(r.Context(), principalOf(r.Context()).accountID(), res.BookingID)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	httpapi.Answer(w, http.StatusCreated, wire.BookingCreated{Success: true, Booking: bookingView(booking)})
}

// schedulingRoutes registers the routes of calendars and their bookings (Router, server.go).
func (s *Server) schedulingRoutes(v1 routes) {
	v1.add(http.MethodGet, "/scheduling/event-types", domain.ScopeSchedulingRead, s.listEventTypes)
	v1.add(http.MethodGet, "/scheduling/event-types/{eventTypeId}", domain.ScopeSchedulingRead, s.getEventType)
	v1.add(http.MethodPost, "/scheduling/{eventTypeId}/bookings", domain.ScopeSchedulingWrite, s.bookEvent)
}
