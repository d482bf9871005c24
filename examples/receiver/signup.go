package main

import (
	"context"
	"fmt"
	"time"

	"github.com/funnelhq/funnel/client"
)

// Activation outcomes the receiver records, besides the service's own statuses.
const (
	// activationConflict: the activation was completed for another user than the app's user of
	// that email (someone completed it first, by its signup link): the app does not take it over.
	activationConflict = "conflict"
)

// signupResult is what became of a SaaS signup activation.
type signupResult struct {
	activationID   string
	userID         string
	status         string  // completed, expired or conflict
	externalUserID *string // the user the service recorded
	completedAt    time.Time
}

// signUp is rule 8, for a checkout.purchased carrying an activation: read the activation (GET,
// which also tells whether it is still pending), create the app's user of the buyer's email, then
// complete the activation with that user's id as its externalUserId. Every step is idempotent: the
// user is found again by email, and completing an activation again for the same user succeeds,
// so a delivery retried after a failure half-way does it all again safely. A failure to reach the
// API is returned, and the delivery is retried; an activation that expired, or that someone
// completed for another user, is recorded as such and the purchase is applied all the same (the
// buyer paid).
func (r *rules) signUp(ctx context.Context, email, token string) (*signupResult, error) {
	act, err := r.funnel.activation(ctx, token)
	if err != nil {
		return nil, err
	}
	u, err := r.store.ensureUser(ctx, email, r.now())
	if err != nil {
		return nil, err
	}
	if act.Status == client.ActivationStatusPending {
		completed, err := r.funnel.complete(ctx, token, u.ID)
		switch codeOf(err) {
		case "":
			if err != nil {
				return nil, err
			}
			act = completed
		case client.ErrorCodeActivationConflict, client.ErrorCodeActivationExpired:
			// Completed for another user, or expired, since the GET: read what the service kept.
			r.log.Warn("the activation was not completed for this user", "activation", act.Id, "user", u.ID, "error", err)
			if act, err = r.funnel.activation(ctx, token); err != nil {
				return nil, err
			}
		default:
			return nil, err
		}
	}
	res := &signupResult{activationID: act.Id, userID: u.ID, status: string(act.Status), externalUserID: act.ExternalUserId}
	if act.CompletedAt != nil {
		res.completedAt = *act.CompletedAt
	}
	if act.Status == client.ActivationStatusCompleted && (act.ExternalUserId == nil || *act.ExternalUserId != u.ID) {
		res.status = activationConflict
	}
	if act.Status == client.ActivationStatusPending {
		return nil, fmt.Errorf("signup: activation %s is still pending after its completion", act.Id)
	}
	return res, nil
}
