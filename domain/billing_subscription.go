package domain

import "time"

// Subscription status values. A subscription is active until it is cancelled; a split plan whose
// last installment is paid is completed: it ends by itself, and the buyer keeps what was paid
// for, so no cancellation is reported.
const (
	SubscriptionStatusActive    = "active"
	SubscriptionStatusCancelled = "cancelled"
	SubscriptionStatusCompleted = "completed"
)

// BillingSubscription is the billing of a recurring tier (month, year) or a split tier: each rebill
// pays one more period, until it is cancelled or, for a split plan, its last installment is paid.
type BillingSubscription struct {
	id                string
	exists            bool
	accountID         string
	customerID        string
	interval          string
	installments      int // split plans only: payments in all
	payments          int // payments made, the purchase included
	renewalAmount     int64
	startedAt         time.Time
	currentPeriodEnd  time.Time
	status            string
	cancelAtPeriodEnd bool
	sale              Sale // the latest payment, as the subscription's events report it
	changes
}

// BillingSubscriptionStream returns an empty subscription to load stream id into.
func BillingSubscriptionStream(id string) *BillingSubscription { return &BillingSubscription{id: id} }

// StreamID is the subscription id.
func (s *BillingSubscription) StreamID() string { return s.id }

// Exists tells whether the subscription was opened.
func (s *BillingSubscription) Exists() bool { return s.exists }

// AccountID is the account billed through the subscription.
func (s *BillingSubscription) AccountID() string { return s.accountID }

// Status is active, cancelled or completed.
func (s *BillingSubscription) Status() string { return s.status }

// CancelAtPeriodEnd tells whether an active subscription ends when its current period does.
func (s *BillingSubscription) CancelAtPeriodEnd() bool { return s.cancelAtPeriodEnd }

// CurrentPeriodEnd is when the period paid for last ends.
func (s *BillingSubscription) CurrentPeriodEnd() time.Time { return s.currentPeriodEnd }

// Payments counts the payments made, the purchase included.
func (s *BillingSubscription) Payments() int { return s.payments }

// Processor is the processor that bills the subscription.
func (s *BillingSubscription) Processor() string { return s.sale.Transaction.Processor }

// Start opens the subscription of a purchase at a recurring tier; purchase is the transaction of
// its first payment, which pays the first period.
func (s *BillingSubscription) Start(order Order, purchase *Transaction) {
	s.record(SubscriptionStarted{
		SubscriptionID: s.id, AccountID: purchase.AccountID(), CustomerID: purchase.customerID,
		Interval: order.Tier.Interval, Installments: order.Tier.Installments, RenewalAmount: order.Tier.Amount,
		StartedAt: purchase.paidAt, CurrentPeriodEnd: PeriodEnd(purchase.paidAt, order.Tier.Interval, 1), Sale: purchase.Sale(),
	})
}

// Rebill records the next payment of the subscription on txn, a new transaction, and pays one
// more period: the tier's amount (bumps are paid once, with the purchase), on the processor that
// billed the purchase. A split plan's last installment completes it.
func (s *BillingSubscription) Rebill(txn *Transaction, pay Payment) error {
	switch {
	case s.status == SubscriptionStatusCancelled:
		return Conflict("subscription is cancelled")
	case s.status == SubscriptionStatusCompleted:
		return Conflict("split plan is paid in full")
	case s.cancelAtPeriodEnd:
		return Conflict("subscription is cancelled at period end and does not renew")
	}
	pay.Processor = s.Processor()
	sale := s.sale
	sale.IsRebill = true
	sale.Transaction = txn.saleTransaction(pay, s.renewalAmount, s.sale.Transaction.Currency, s.id)
	payments := s.payments + 1
	txn.rebill(s.accountID, s.customerID, sale, payments, pay.At)
	s.record(SubscriptionRenewed{SubscriptionID: s.id, TransactionID: txn.StreamID(), Payments: payments,
		CurrentPeriodEnd: PeriodEnd(s.startedAt, s.interval, payments), Sale: sale})
	if s.interval == IntervalSplit && payments >= s.installments {
		s.record(SubscriptionCompleted{SubscriptionID: s.id, CompletedAt: pay.At})
	}
	return nil
}

// LatestPaymentID is the transaction of the subscription's latest payment, which its
// cancellation events report.
func (s *BillingSubscription) LatestPaymentID() string { return s.sale.Transaction.ID }

// SeeLatestPayment takes the status of the latest payment from its transaction as it stands now:
// a refund is recorded on the transaction's stream alone, and the cancellation events report the
// payment (integration-api.md, checkout events: `transaction`) as checkout.refunded and the
// customer show it, not as it was when paid. Call it before Cancel or EndIfDue with the
// transaction the session read; another transaction is ignored.
func (s *BillingSubscription) SeeLatestPayment(latest *Transaction) {
	if latest != nil && latest.Exists() && latest.StreamID() == s.sale.Transaction.ID {
		s.sale.Transaction.Status = latest.Status()
	}
}

// Cancel stops the subscription: at the end of the current period (it stays active until then,
// with cancelAtPeriodEnd) or at once. Either way the cancellation is scheduled first, which is
// when checkout.subscription_cancel_scheduled fires. Cancelling at period end twice changes
// nothing; cancelling at once a subscription that was to end at period end ends it now. A
// subscription whose period is already over (no rebill came) ends at once either way: its end
// is never dated before the cancellation that asked for it.
func (s *BillingSubscription) Cancel(atPeriodEnd bool, at time.Time) error {
	switch {
	case s.status == SubscriptionStatusCancelled:
		return Conflict("subscription is already cancelled")
	case s.status == SubscriptionStatusCompleted:
		return Conflict("split plan is paid in full and has nothing left to cancel")
	case s.cancelAtPeriodEnd && atPeriodEnd:
		return nil
	}
	at = at.UTC()
	if !s.cancelAtPeriodEnd {
		s.record(SubscriptionCancelScheduled{AccountID: s.accountID, CustomerID: s.customerID, Sale: s.sale,
			Subscription: ScheduledSubscription{ID: s.id, Status: SubscriptionStatusActive, Processor: s.Processor(),
				CancelAtPeriodEnd: atPeriodEnd, CurrentPeriodEnd: s.currentPeriodEnd, ScheduledAt: at}})
	}
	if !atPeriodEnd || !at.Before(s.currentPeriodEnd) {
		s.end(at)
	}
	return nil
}

// EndIfDue ends a subscription cancelled at period end once that period is over, at the moment
// it ended. It tells whether it did: the durable timer of cancellations calls it when it fires.
func (s *BillingSubscription) EndIfDue(now time.Time) bool {
	if s.status != SubscriptionStatusActive || !s.cancelAtPeriodEnd || now.Before(s.currentPeriodEnd) {
		return false
	}
	s.end(s.currentPeriodEnd)
	return true
}

func (s *BillingSubscription) end(at time.Time) {
	s.record(SubscriptionCancelled{AccountID: s.accountID, CustomerID: s.customerID, Sale: s.sale,
		Subscription: CancelledSubscription{ID: s.id, Status: SubscriptionStatusCancelled, Processor: s.Processor(), CancelledAt: at}})
}

// Replay applies one event of the subscription's stream.
func (s *BillingSubscription) Replay(e Event) { s.when(e) }

func (s *BillingSubscription) record(e Event) {
	s.when(e)
	s.pending = append(s.pending, e)
}

func (s *BillingSubscription) when(e Event) {
	switch e := e.(type) {
	case SubscriptionStarted:
		s.exists, s.accountID, s.customerID, s.status = true, e.AccountID, e.CustomerID, SubscriptionStatusActive
		s.interval, s.installments, s.renewalAmount, s.payments = e.Interval, e.Installments, e.RenewalAmount, 1
		s.startedAt, s.currentPeriodEnd, s.sale = e.StartedAt, e.CurrentPeriodEnd, e.Sale
	case SubscriptionRenewed:
		s.payments, s.currentPeriodEnd, s.sale = e.Payments, e.CurrentPeriodEnd, e.Sale
	case SubscriptionCompleted:
		s.status = SubscriptionStatusCompleted
	case SubscriptionCancelScheduled:
		// The latest payment's status as the event reported it (SeeLatestPayment): replaying
		// the log gives the state the command kept.
		s.cancelAtPeriodEnd, s.sale.Transaction.Status = e.Subscription.CancelAtPeriodEnd, e.Sale.Transaction.Status
	case SubscriptionCancelled:
		s.status, s.sale.Transaction.Status = SubscriptionStatusCancelled, e.Sale.Transaction.Status
	}
}

// ScheduledSubscription is the subscription as checkout.subscription_cancel_scheduled reports it.
type ScheduledSubscription struct {
	ID                string    `json:"id"`
	Status            string    `json:"status"`
	Processor         string    `json:"processor"`
	CancelAtPeriodEnd bool      `json:"cancelAtPeriodEnd"`
	CurrentPeriodEnd  time.Time `json:"currentPeriodEnd"`
	ScheduledAt       time.Time `json:"scheduledAt"`
}

// CancelledSubscription is the subscription as checkout.subscription_cancelled reports it.
type CancelledSubscription struct {
	ID          string    `json:"id"`
	Status      string    `json:"status"`
	Processor   string    `json:"processor"`
	CancelledAt time.Time `json:"cancelledAt"`
}

// SubscriptionStarted opens the subscription of a purchase; its first period is paid.
type SubscriptionStarted struct {
	SubscriptionID   string    `json:"subscriptionId"`
	AccountID        string    `json:"accountId"`
	CustomerID       string    `json:"customerId"`
	Interval         string    `json:"interval"`
	Installments     int       `json:"installments,omitempty"`
	RenewalAmount    int64     `json:"renewalAmount"`
	StartedAt        time.Time `json:"startedAt"`
	CurrentPeriodEnd time.Time `json:"currentPeriodEnd"`
	Sale             Sale      `json:"sale"`
}

// SubscriptionRenewed records that a rebill paid one more period.
type SubscriptionRenewed struct {
	SubscriptionID   string    `json:"subscriptionId"`
	TransactionID    string    `json:"transactionId"`
	Payments         int       `json:"payments"`
	CurrentPeriodEnd time.Time `json:"currentPeriodEnd"`
	Sale             Sale      `json:"sale"`
}

// SubscriptionCompleted records that a split plan's last installment was paid.
type SubscriptionCompleted struct {
	SubscriptionID string    `json:"subscriptionId"`
	CompletedAt    time.Time `json:"completedAt"`
}

// SubscriptionCancelScheduled is a cancellation asked for (checkout.subscription_cancel_scheduled):
// the subscription stays active, until its period ends when CancelAtPeriodEnd is set.
type SubscriptionCancelScheduled struct {
	AccountID  string `json:"accountId"`
	CustomerID string `json:"customerId"`
	Sale
	Subscription ScheduledSubscription `json:"subscription"`
}

// SubscriptionCancelled is the end of a subscription, when access should stop
// (checkout.subscription_cancelled).
type SubscriptionCancelled struct {
	AccountID  string `json:"accountId"`
	CustomerID string `json:"customerId"`
	Sale
	Subscription CancelledSubscription `json:"subscription"`
}

func (SubscriptionStarted) EventType() string         { return "SubscriptionStarted" }
func (SubscriptionRenewed) EventType() string         { return "SubscriptionRenewed" }
func (SubscriptionCompleted) EventType() string       { return "SubscriptionCompleted" }
func (SubscriptionCancelScheduled) EventType() string { return "SubscriptionCancelScheduled" }
func (SubscriptionCancelled) EventType() string       { return "SubscriptionCancelled" }

// Every event of the subscription's stream is in its history (domain.SubscriptionEvent).
func (e SubscriptionStarted) SubscriptionRef() string         { return e.SubscriptionID }
func (e SubscriptionRenewed) SubscriptionRef() string         { return e.SubscriptionID }
func (e SubscriptionCompleted) SubscriptionRef() string       { return e.SubscriptionID }
func (e SubscriptionCancelScheduled) SubscriptionRef() string { return e.Subscription.ID }
func (e SubscriptionCancelled) SubscriptionRef() string       { return e.Subscription.ID }

// Cancellations belong to the buyer's contact history too (domain.ContactEvent).
func (e SubscriptionCancelScheduled) ContactRef() string { return e.Contact.ContactID }
func (e SubscriptionCancelled) ContactRef() string       { return e.Contact.ContactID }

func init() {
	register(SubscriptionStarted{}, 1, nil)
	personal(SubscriptionStarted{}, salePaths("sale.")...)
	register(SubscriptionRenewed{}, 1, nil)
	personal(SubscriptionRenewed{}, salePaths("sale.")...)
	register(SubscriptionCompleted{}, 1, nil)
	register(SubscriptionCancelScheduled{}, 1, nil)
	personal(SubscriptionCancelScheduled{}, salePaths("")...)
	register(SubscriptionCancelled{}, 1, nil)
	personal(SubscriptionCancelled{}, salePaths("")...)
}

// subscriptionStateFormat numbers the layout of subscriptionState: change it with the struct.
const subscriptionStateFormat = 1

// subscriptionState is a Subscription's state as Restorable encodes it.
type subscriptionState struct {
	Exists            bool      `json:"exists"`
	AccountID         string    `json:"accountId"`
	CustomerID        string    `json:"customerId"`
	Interval          string    `json:"interval"`
	Installments      int       `json:"installments"`
	Payments          int       `json:"payments"`
	RenewalAmount     int64     `json:"renewalAmount"`
	StartedAt         time.Time `json:"startedAt"`
	CurrentPeriodEnd  time.Time `json:"currentPeriodEnd"`
	Status            string    `json:"status"`
	CancelAtPeriodEnd bool      `json:"cancelAtPeriodEnd"`
	Sale              Sale      `json:"sale"`
}

// EncodeState returns the subscription's state (Restorable).
func (s *BillingSubscription) EncodeState() ([]byte, error) {
	return encodeState(subscriptionStateFormat, subscriptionState{
		Exists: s.exists, AccountID: s.accountID, CustomerID: s.customerID, Interval: s.interval,
		Installments: s.installments, Payments: s.payments, RenewalAmount: s.renewalAmount,
		StartedAt: s.startedAt, CurrentPeriodEnd: s.currentPeriodEnd, Status: s.status,
		CancelAtPeriodEnd: s.cancelAtPeriodEnd, Sale: s.sale,
	})
}

// RestoreState sets the state of an empty subscription (Restorable).
func (s *BillingSubscription) RestoreState(data []byte) error {
	st, err := decodeState[subscriptionState](data, subscriptionStateFormat)
	if err != nil {
		return err
	}
	s.exists, s.accountID, s.customerID, s.interval = st.Exists, st.AccountID, st.CustomerID, st.Interval
	s.installments, s.payments, s.renewalAmount = st.Installments, st.Payments, st.RenewalAmount
	s.startedAt, s.currentPeriodEnd, s.status = st.StartedAt, st.CurrentPeriodEnd, st.Status
	s.cancelAtPeriodEnd, s.sale = st.CancelAtPeriodEnd, st.Sale
	return nil
}
