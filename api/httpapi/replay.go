package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/webhooks"
)

// Replayer replays a time window of a webhook subscription: webhooks.SelfService.
type Replayer interface {
	Replay(ctx context.Context, req webhooks.ReplayRequest) (webhooks.Replay, error)
}

// ReplayWindow serves the replay of a time window of accountID's subscription subscriptionID,
// one endpoint on both APIs (decisions.md "Subscriptions, deliveries, replay, test"): the
// integration API's POST /api/v1/webhooks/subscriptions/{id}/replay and the operator's
// POST /admin/v1/accounts/{accountId}/webhooks/{webhookId}/replay, with one body
// (wire.ReplayRequest, which the operator's generated types share) and one answer: 202 once
// every delivery of the window is recorded (in batches, each committed on its own). On bad input (no since, a time that is not ISO
// 8601, an empty types list) it answers 400 naming the field; the window itself (in the
// future, older than the feed keeps, until before since) is judged by the Replayer.
func ReplayWindow(w http.ResponseWriter, r *http.Request, replayer Replayer, accountID, subscriptionID string) {
	var body wire.ReplayRequest
	if !Decode(w, r, &body) {
		return
	}
	if body.Since == nil {
		WriteCodedError(w, domain.CodeInvalidRequest, "since", "since is required")
		return
	}
	// A retry of the request with the same Idempotency-Key carries the same claim: it answers the
	// replay this request asked for, even one cut short by a crash (webhooks.SelfService.Replay).
	req := webhooks.ReplayRequest{AccountID: accountID, SubscriptionID: subscriptionID, IdempotencyID: commands.IdempotencyID(r.Context())}
	var ok bool
	if req.Since, ok = timeParam(w, "since", *body.Since); !ok {
		return
	}
	if body.Until != nil {
		if req.Until, ok = timeParam(w, "until", *body.Until); !ok {
			return
		}
	}
	if body.Types != nil {
		if len(*body.Types) == 0 {
			WriteCodedError(w, domain.CodeInvalidRequest, "types", "types must name at least one event type, or be left out")
			return
		}
		req.Types = make([]string, len(*body.Types))
		for i, t := range *body.Types {
			req.Types[i] = string(t)
		}
	}
	replay, err := replayer.Replay(r.Context(), req)
	if err != nil {
		Fail(w, r, err)
		return
	}
	answer := wire.ReplayAccepted{Success: true}
	answer.Replay.Id, answer.Replay.Count = replay.ID, replay.Count
	Answer(w, http.StatusAccepted, answer)
}

// timeParam reads an ISO 8601 time of a request body, answering 400 naming it when it is not one.
func timeParam(w http.ResponseWriter, name, value string) (time.Time, bool) {
	t, err := domain.ParseTimestamp(value)
	if err != nil {
		WriteCodedError(w, domain.CodeInvalidRequest, name, name+" must be an ISO 8601 time, such as 2026-01-31T09:00:00Z")
		return time.Time{}, false
	}
	return t, true
}
