package operator

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/wireformat"
)

// The payment endpoints (operator-api.md "Payments") stand in for a card processor's callbacks.
// Each answers with what its command recorded, once the read models show it: the customer,
// transaction and subscription members are the webhooks' members of the same names, plus ids.

// purchaseRequest is the body of POST /admin/v1/accounts/{accountId}/checkout/purchases.
type purchaseRequest struct {
	ProductID     string   `json:"productId"`
	PricingTierID string   `json:"pricingTierId"`
	BumpIDs       []string `json:"bumpIds"`
	Email         string   `json:"email"`
	Name          string   `json:"name"`
	Processor     string   `json:"processor"`
	TxnID         string   `json:"txnId"`
}

// purchase serves POST /admin/v1/accounts/{accountId}/checkout/purchases → 201 {customer,
// transaction, subscription?, activation?}.
func (s *Server) purchase(w http.ResponseWriter, r *http.Request) {
	var req purchaseRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	if req.PricingTierID == "" {
		httpapi.WriteError(w, http.StatusBadRequest, "pricingTierId is required")
		return
	}
	res, err := s.deps.Commands.Purchase.Handle(r.Context(), commands.Purchase{
		Meta: operatorMeta(r), ProductID: req.ProductID, PricingTierID: req.PricingTierID, BumpIDs: req.BumpIDs,
		Email: req.Email, Name: req.Name, Processor: req.Processor, TxnID: req.TxnID,
	})
	if !s.recorded(w, r, err, res.Position) {
		return
	}
	c := res.Sale.Customer
	body := httpapi.Object{
		"customer":    httpapi.Object{"id": res.CustomerID, "email": c.Email, "name": c.Name, "contactId": c.ContactID},
		"transaction": transactionView(res.Sale, 0),
	}
	if res.SubscriptionID != "" {
		body["subscription"] = subscriptionView(res.SubscriptionID, domain.SubscriptionStatusActive, res.Sale.Transaction.Processor, false, res.CurrentPeriodEnd)
	}
	if a := res.Activation; a != nil {
		body["activation"] = httpapi.Object{"token": a.Token, "url": a.URL, "expiresAt": wireformat.Time(a.ExpiresAt)}
	}
	httpapi.WriteJSON(w, http.StatusCreated, body)
}

// rebill serves POST /admin/v1/accounts/{accountId}/checkout/subscriptions/{subscriptionId}/rebill
// {txnId?} → {transaction}.
func (s *Server) rebill(w http.ResponseWriter, r *http.Request) {
	var req struct {
		TxnID string `json:"txnId"`
	}
	if !httpapi.Decode(w, r, &req) {
		return
	}
	res, err := s.deps.Commands.Rebill.Handle(r.Context(), commands.Rebill{
		Meta: operatorMeta(r), SubscriptionID: mux.Vars(r)["subscriptionId"], TxnID: req.TxnID,
	})
	if !s.recorded(w, r, err, res.Position) {
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, httpapi.Object{"transaction": transactionView(res.Sale, 0)})
}

// refund serves POST /admin/v1/accounts/{accountId}/checkout/transactions/{transactionId}/refund
// {amountCents?} (default: all that remains) → {transaction, refund}.
func (s *Server) refund(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AmountCents json.RawMessage `json:"amountCents"`
	}
	if !httpapi.Decode(w, r, &req) {
		return
	}
	amount, ok := refundAmount(w, req.AmountCents)
	if !ok {
		return
	}
	res, err := s.deps.Commands.Refund.Handle(r.Context(), commands.Refund{
		Meta: operatorMeta(r), TransactionID: mux.Vars(r)["transactionId"], AmountCents: amount,
	})
	if !s.recorded(w, r, err, res.Position) {
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, httpapi.Object{
		"transaction": transactionView(res.Sale, res.Refunded),
		"refund": httpapi.Object{"amountCents": res.Refund.AmountCents, "fullyRefunded": res.Refund.FullyRefunded,
			"refundedAt": wireformat.Time(res.Refund.RefundedAt)},
	})
}

// refundAmount reads amountCents: left out, it is nil (all that remains); null is refused
// rather than read as "everything", since a client that sends null most likely lost a value.
func refundAmount(w http.ResponseWriter, raw json.RawMessage) (*int64, bool) {
	if len(raw) == 0 {
		return nil, true
	}
	var amount *int64
	if err := json.Unmarshal(raw, &amount); err != nil || amount == nil {
		httpapi.WriteError(w, http.StatusBadRequest, "amountCents must be a positive integer in minor units, or left out to refund all that remains")
		return nil, false
	}
	return amount, true
}

// cancelSubscription serves POST /admin/v1/accounts/{accountId}/checkout/subscriptions/{subscriptionId}/cancel
// {atPeriodEnd} → {subscription}.
func (s *Server) cancelSubscription(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AtPeriodEnd *bool `json:"atPeriodEnd"`
	}
	if !httpapi.Decode(w, r, &req) {
		return
	}
	if req.AtPeriodEnd == nil {
		httpapi.WriteError(w, http.StatusBadRequest, "atPeriodEnd is required: true or false")
		return
	}
	id := mux.Vars(r)["subscriptionId"]
	res, err := s.deps.Commands.CancelSubscription.Handle(r.Context(), commands.CancelSubscription{
		Meta: operatorMeta(r), SubscriptionID: id, AtPeriodEnd: *req.AtPeriodEnd,
	})
	if !s.recorded(w, r, err, res.Position) {
		return
	}
	httpapi.WriteJSON(w, http.StatusOK, httpapi.Object{
		"subscription": subscriptionView(id, res.Status, res.Processor, res.CancelAtPeriodEnd, res.CurrentPeriodEnd),
	})
}

// transactionView is a payment as checkout webhooks show it (transaction), with the product
// and pricing it paid for and what was refunded of it so far.
func transactionView(sale domain.Sale, refundedCents int64) httpapi.Object {
	t := sale.Transaction
	bumpIDs := []string{}
	for _, b := range sale.Pricing.Bumps {
		bumpIDs = append(bumpIDs, b.ID)
	}
	return httpapi.Object{
		"id": t.ID, "txnId": t.TxnID, "amount": t.Amount, "currency": t.Currency, "status": t.Status,
		"processor": t.Processor, "subscriptionId": t.SubscriptionID,
		"productId": sale.Product.ID, "pricingTierId": sale.Pricing.PricingTierID, "bumpIds": bumpIDs,
		"refundedCents": refundedCents,
	}
}

// subscriptionView is a checkout subscription: its status, whether it ends with its current
// period, and when that period ends.
func subscriptionView(id, status, processor string, cancelAtPeriodEnd bool, currentPeriodEnd time.Time) httpapi.Object {
	return httpapi.Object{"id": id, "status": status, "processor": processor,
		"cancelAtPeriodEnd": cancelAtPeriodEnd, "currentPeriodEnd": wireformat.Time(currentPeriodEnd)}
}

// recorded answers a refused payment command, or waits until the read models show what one
// recorded at position (as every write does); it reports whether the handler goes on to answer.
// A product, transaction or subscription of another account is refused by the command as
// Forbidden (403), one that exists nowhere as NotFound (404), as everywhere else.
func (s *Server) recorded(w http.ResponseWriter, r *http.Request, err error, position int64) bool {
	if err != nil {
		httpapi.Fail(w, r, err)
		return false
	}
	return httpapi.AwaitReadModels(w, r, s.deps.ReadModels, position)
}
