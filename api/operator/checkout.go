package operator

import (
	"encoding/json"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/commands"
)

// The payment endpoints (operator-api.md "Payments") stand in for a card processor's callbacks.
// Each answers, once the read models show what its command recorded, with the customer,
// transaction and subscription as the integration API's GET /api/v1/customers/{id} shows them
// (httpapi's views), so that a processor and an integrator see one shape.

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
// transaction, subscription?, activation?}; 200 with the same when the account recorded the
// txnId already, and nothing recorded (decisions.md "Processor transaction ids").
func (s *Server) purchase(w http.ResponseWriter, r *http.Request) {
	var req purchaseRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	if req.PricingTierID == "" {
		httpapi.WriteFieldError(w, "pricingTierId", "pricingTierId is required")
		return
	}
	res, err := s.deps.Commands.Purchase.Handle(r.Context(), commands.Purchase{
		Meta: operatorMeta(r), ProductID: req.ProductID, PricingTierID: req.PricingTierID, BumpIDs: req.BumpIDs,
		Email: req.Email, Name: req.Name, Processor: req.Processor, TxnID: req.TxnID,
	})
	if !s.recorded(w, r, err, res.Position) {
		return
	}
	body, ok := s.payment(w, r, res.Sale.Transaction.ID, res.SubscriptionID)
	if !ok {
		return
	}
	customer, err := s.deps.Read.Customers.Get(r.Context(), accountOf(r).ID, res.CustomerID)
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	body["customer"] = httpapi.CustomerView(customer)
	if a := res.Activation; a != nil {
		// The token is shown here and in checkout.purchased only: the service keeps it sealed.
		body["activation"] = httpapi.Object{"token": a.Token, "url": a.URL, "expiresAt": wire.Time(a.ExpiresAt)}
	}
	httpapi.WriteJSON(w, paymentStatus(res.AlreadyRecorded), body)
}

// paymentStatus is the status of a purchase's or a rebill's answer: 201 when it recorded the
// payment, 200 when its txnId was recorded before and the answer is that payment's.
func paymentStatus(alreadyRecorded bool) int {
	if alreadyRecorded {
		return http.StatusOK
	}
	return http.StatusCreated
}

// payment reads the transaction and, when there is one, the subscription a payment command
// recorded, as the read models show them now; on failure it answers and reports false.
func (s *Server) payment(w http.ResponseWriter, r *http.Request, transactionID, subscriptionID string) (httpapi.Object, bool) {
	body := httpapi.Object{}
	if transactionID != "" {
		t, err := s.deps.Read.Transactions.Get(r.Context(), accountOf(r).ID, transactionID)
		if err != nil {
			httpapi.Fail(w, r, err)
			return nil, false
		}
		body["transaction"] = httpapi.TransactionView(t)
	}
	if subscriptionID != "" {
		sub, err := s.deps.Read.BillingSubscriptions.Get(r.Context(), accountOf(r).ID, subscriptionID)
		if err != nil {
			httpapi.Fail(w, r, err)
			return nil, false
		}
		body["subscription"] = httpapi.BillingSubscriptionView(sub)
	}
	return body, true
}

// rebill serves POST /admin/v1/accounts/{accountId}/checkout/subscriptions/{subscriptionId}/rebill
// {txnId?} → 201 {transaction, subscription}: a rebill creates a transaction, and the
// subscription shows the period it paid (or that a split plan is now paid in full). A txnId the
// account recorded already answers 200 with that payment, and records nothing.
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
	body, ok := s.payment(w, r, res.Sale.Transaction.ID, res.Sale.Transaction.SubscriptionID)
	if ok {
		httpapi.WriteJSON(w, paymentStatus(res.AlreadyRecorded), body)
	}
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
	body, ok := s.payment(w, r, res.Sale.Transaction.ID, "")
	if !ok {
		return
	}
	body["refund"] = httpapi.Object{"amountCents": res.Refund.AmountCents, "fullyRefunded": res.Refund.FullyRefunded,
		"refundedAt": wire.Time(res.Refund.RefundedAt)}
	httpapi.WriteJSON(w, http.StatusOK, body)
}

// refundAmount reads amountCents: left out, it is nil (all that remains); null is refused
// rather than read as "everything", since a client that sends null most likely lost a value.
func refundAmount(w http.ResponseWriter, raw json.RawMessage) (*int64, bool) {
	if len(raw) == 0 {
		return nil, true
	}
	var amount *int64
	if err := json.Unmarshal(raw, &amount); err != nil || amount == nil {
		httpapi.WriteFieldError(w, "amountCents", "amountCents must be a positive integer in minor units, or left out to refund all that remains")
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
		httpapi.WriteFieldError(w, "atPeriodEnd", "atPeriodEnd is required: true or false")
		return
	}
	id := mux.Vars(r)["subscriptionId"]
	res, err := s.deps.Commands.CancelSubscription.Handle(r.Context(), commands.CancelSubscription{
		Meta: operatorMeta(r), SubscriptionID: id, AtPeriodEnd: *req.AtPeriodEnd,
	})
	if !s.recorded(w, r, err, res.Position) {
		return
	}
	body, ok := s.payment(w, r, "", id)
	if ok {
		httpapi.WriteJSON(w, http.StatusOK, body)
	}
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
	return httpapi.AwaitReadModels(w, r, s.deps.Runtime.ReadModels, position)
}
