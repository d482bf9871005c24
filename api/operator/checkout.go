package operator

import (
	"encoding/json"
	"github.com/funnelhq/funnel/api/views"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/api/wire/admin"
	"github.com/funnelhq/funnel/commands"
)

// The payment endpoints (operator-api.md "Payments") stand in for a card processor's callbacks.
// Each answers, once the read models show what its command recorded, with the customer,
// transaction and subscription as the integration API's GET /api/v1/customers/{id} shows them
// (views.go), so that a processor and an integrator see one shape.

// purchase serves POST /admin/v1/accounts/{accountId}/checkout/purchases → 201 {customer,
// transaction, subscription?, activation?}; 200 with the same when the account recorded the
// txnId already, and nothing recorded (decisions.md "Processor transaction ids"), without the
// customer when the payment's buyer was erased since.
func (s *Server) purchase(w http.ResponseWriter, r *http.Request) {
	var req admin.PurchaseRequest
	if !httpapi.Decode(w, r, &req) {
		return
	}
	if req.PricingTierId == "" {
		httpapi.WriteFieldError(w, "pricingTierId", "pricingTierId is required")
		return
	}
	res, err := s.deps.Commands.Purchase.Handle(r.Context(), commands.Purchase{
		Meta: operatorMeta(r), ProductID: req.ProductId, PricingTierID: req.PricingTierId, BumpIDs: wire.Value(req.BumpIds),
		Email: req.Email, Name: wire.Value(req.Name), Processor: wire.Value(req.Processor), TxnID: wire.Value(req.TxnId),
	})
	if !s.recorded(w, r, err, res.Position) {
		return
	}
	transaction, ok := s.transaction(w, r, res.Sale.Transaction.ID)
	if !ok {
		return
	}
	subscription, ok := s.subscriptionIfAny(w, r, res.SubscriptionID)
	if !ok {
		return
	}
	answer := admin.PurchaseRecorded{Success: true, Transaction: transaction, Subscription: subscription}
	// A processor's retry of a payment whose buyer was erased since is answered that payment
	// (decisions.md "Processor transaction ids"), as a rebill's is: its customer was erased too.
	if !res.BuyerErased {
		customer, err := s.deps.Read.Customers.Get(r.Context(), accountOf(r).ID, res.CustomerID)
		if err != nil {
			httpapi.Fail(w, r, err)
			return
		}
		view := views.Customer(customer)
		answer.Customer = &view
	}
	if a := res.Activation; a != nil {
		// The token is shown here and in checkout.purchased only: the service keeps it sealed.
		activation := activationView(*a)
		answer.Activation = &activation
	}
	httpapi.Answer(w, paymentStatus(res.AlreadyRecorded), answer)
}

// paymentStatus is the status of a purchase's or a rebill's answer: 201 when it recorded the
// payment, 200 when its txnId was recorded before and the answer is that payment's.
func paymentStatus(alreadyRecorded bool) int {
	if alreadyRecorded {
		return http.StatusOK
	}
	return http.StatusCreated
}

// transaction reads the transaction a payment command recorded or refunded, as the read models
// show it now; on failure it answers and reports false.
func (s *Server) transaction(w http.ResponseWriter, r *http.Request, id string) (admin.Transaction, bool) {
	t, err := s.deps.Read.Transactions.Get(r.Context(), accountOf(r).ID, id)
	if err != nil {
		httpapi.Fail(w, r, err)
		return admin.Transaction{}, false
	}
	return views.Transaction(t), true
}

// subscriptionIfAny reads the subscription a payment command opened, renewed or cancelled, as
// the read models show it now: nil when id is "" (a one-time payment has none). On failure it
// answers and reports false.
func (s *Server) subscriptionIfAny(w http.ResponseWriter, r *http.Request, id string) (*admin.Subscription, bool) {
	if id == "" {
		return nil, true
	}
	sub, err := s.deps.Read.BillingSubscriptions.Get(r.Context(), accountOf(r).ID, id)
	if err != nil {
		httpapi.Fail(w, r, err)
		return nil, false
	}
	view := views.Subscription(sub)
	return &view, true
}

// rebill serves POST /admin/v1/accounts/{accountId}/checkout/subscriptions/{subscriptionId}/rebill
// {txnId?} (an empty body is {}) → 201 {transaction, subscription}: a rebill creates a transaction, and the
// subscription shows the period it paid (or that a split plan is now paid in full). A txnId the
// account recorded already answers 200 with that payment, and records nothing.
func (s *Server) rebill(w http.ResponseWriter, r *http.Request) {
	var req admin.RebillRequest
	if !httpapi.DecodeOptional(w, r, &req) {
		return
	}
	res, err := s.deps.Commands.Rebill.Handle(r.Context(), commands.Rebill{
		Meta: operatorMeta(r), SubscriptionID: mux.Vars(r)["subscriptionId"], TxnID: wire.Value(req.TxnId),
	})
	if !s.recorded(w, r, err, res.Position) {
		return
	}
	transaction, ok := s.transaction(w, r, res.Sale.Transaction.ID)
	if !ok {
		return
	}
	subscription, ok := s.subscriptionIfAny(w, r, res.Sale.Transaction.SubscriptionID)
	if !ok {
		return
	}
	if !res.AlreadyRecorded && subscription != nil {
		httpapi.Answer(w, http.StatusCreated, admin.RebillRecorded{Success: true, Transaction: transaction, Subscription: *subscription})
		return
	}
	// The txnId names a payment recorded before, which a one-time purchase may have made: no
	// subscription then.
	httpapi.Answer(w, paymentStatus(res.AlreadyRecorded), admin.PaymentRecordedBefore{Success: true, Transaction: transaction, Subscription: subscription})
}

// refund serves POST /admin/v1/accounts/{accountId}/checkout/transactions/{transactionId}/refund
// {amountCents?} (default: all that remains; an empty body is {}) → {transaction, refund}.
func (s *Server) refund(w http.ResponseWriter, r *http.Request) {
	var req admin.RefundRequest // amountCents the JSON as it came (overlay.yaml)
	if !httpapi.DecodeOptional(w, r, &req) {
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
	transaction, ok := s.transaction(w, r, res.Sale.Transaction.ID)
	if ok {
		httpapi.Answer(w, http.StatusOK, admin.RefundRecorded{Success: true, Transaction: transaction, Refund: refundView(res.Refund)})
	}
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
	var req admin.CancelSubscriptionRequest // atPeriodEnd a pointer: left out is refused (overlay.yaml)
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
	subscription, ok := s.subscriptionIfAny(w, r, id)
	if ok {
		httpapi.Answer(w, http.StatusOK, admin.SubscriptionResponse{Success: true, Subscription: *subscription})
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

// checkoutRoutes registers the routes of the payment endpoints (Router, server.go).
func (s *Server) checkoutRoutes(admin routes) {
	admin(http.MethodPost, "/accounts/{accountId}/checkout/purchases", s.purchase)
	admin(http.MethodPost, "/accounts/{accountId}/checkout/subscriptions/{subscriptionId}/rebill", s.rebill)
	admin(http.MethodPost, "/accounts/{accountId}/checkout/subscriptions/{subscriptionId}/cancel", s.cancelSubscription)
	admin(http.MethodPost, "/accounts/{accountId}/checkout/transactions/{transactionId}/refund", s.refund)
}
