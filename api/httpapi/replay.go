package httpapi

import (
	"net/http"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/webhooks"
)

// replayBody is the body of a replay of a time window, the same on both APIs (decisions.md
// "Subscriptions, deliveries, replay, test"): the integration API's
// POST /api/v1/webhooks/subscriptions/{id}/replay and the operator's
// POST /admin/v1/accounts/{accountId}/webhooks/{webhookId}/replay.
type replayBody struct {
	Since *string  `json:"since"`
	Until *string  `json:"until"`
	Types []string `json:"types"`
}

// DecodeReplay reads the body of a replay into a webhooks.ReplayRequest for accountID's
// subscription subscriptionID. On bad input (no since, a time that is not ISO 8601, an empty
// types list) it answers 400 naming the field and returns false; the window itself (in the
// future, older than the feed keeps, until before since) is judged by webhooks.SelfService.Replay,
// so that both APIs refuse the same windows with the same messages.
func DecodeReplay(w http.ResponseWriter, r *http.Request, accountID, subscriptionID string) (webhooks.ReplayRequest, bool) {
	var body replayBody
	if !Decode(w, r, &body) {
		return webhooks.ReplayRequest{}, false
	}
	if body.Since == nil {
		WriteCodedError(w, domain.CodeInvalidRequest, "since", "since is required")
		return webhooks.ReplayRequest{}, false
	}
	req := webhooks.ReplayRequest{AccountID: accountID, SubscriptionID: subscriptionID, Types: body.Types}
	var ok bool
	if req.Since, ok = timeParam(w, "since", *body.Since); !ok {
		return webhooks.ReplayRequest{}, false
	}
	if body.Until != nil {
		if req.Until, ok = timeParam(w, "until", *body.Until); !ok {
			return webhooks.ReplayRequest{}, false
		}
	}
	if body.Types != nil && len(body.Types) == 0 {
		WriteCodedError(w, domain.CodeInvalidRequest, "types", "types must name at least one event type, or be left out")
		return webhooks.ReplayRequest{}, false
	}
	return req, true
}

// timeParam reads an ISO 8601 time of a request body, answering 400 naming it when it is not one.
func timeParam(w http.ResponseWriter, name, value string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, value)
	if err != nil {
		WriteCodedError(w, domain.CodeInvalidRequest, name, name+" must be an ISO 8601 time, such as 2026-01-31T09:00:00Z")
		return time.Time{}, false
	}
	return t, true
}
