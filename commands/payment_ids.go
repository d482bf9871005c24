package commands

import (
	"context"

	"github.com/funnelhq/funnel/domain"
)

// A processor's txnId is unique per account (decisions.md "Processor transaction ids"). The
// transaction of a payment that names one is domain.TransactionIDFor(account, txnId): a retried
// notification reaches the stream the first one created, and the version-0 append of that stream
// is the claim of the txnId, as a contact's stream is the claim of its email. Two concurrent
// payments with one txnId, in one process or in many, append at version 0 of one stream: one
// records the payment, the other decides again, finds it, and records nothing. No read model is
// involved. A payment without txnId gets a random transaction id, which is its txnId too.

// paymentTransactionID is the id of the transaction a payment records.
func paymentTransactionID(accountID string, pay domain.Payment) string {
	if pay.TxnID == "" {
		return domain.NewID(transactionPrefix)
	}
	return domain.TransactionIDFor(accountID, pay.TxnID)
}

// recordedPayment returns the account's transaction that recorded the payment's txnId already,
// or nil when none did; transactionID is what paymentTransactionID gave the payment. What the
// request asks for besides its txnId is not compared: the payment is the one recorded. A txnId
// that is the id of a transaction of the account recorded without one names that payment too,
// since that id became its txnId.
func recordedPayment(ctx context.Context, s *session, accountID, transactionID string, pay domain.Payment) (*domain.Transaction, error) {
	if pay.TxnID == "" {
		return nil, nil // a fresh random id: nothing recorded it
	}
	// Most payments are new: the first attempt takes the stream for new without reading it, and
	// a retried one finds out at the append, and reads it at the next attempt.
	s.mayBeNew(transactionID)
	return lookUpPayment(ctx, s.peek, accountID, transactionID, pay)
}

// recordedDespite returns the account's transaction that recorded the payment's txnId, when the
// decision to record the payment was refused (refusal, a domain error: a subscription cancelled,
// paid off, cancelling, not found), or refusal itself when none did. A retried notification
// learns that it is a retry at the append, and a refused decision appends nothing: without this
// the retry of a payment whose subscription has since ended would get the subscription's 409,
// which a processor reads as a refused payment, instead of the payment (decisions.md "Processor
// transaction ids"). The stream is read again, never guessed: recordedPayment may have taken it
// for new, or read it before a concurrent payment with the same txnId recorded it and ended the
// subscription, which this decision then saw ended. A payment and what it does to its
// subscription are appended together, so a decision that saw the end sees the payment here. The
// read costs nothing to a payment that is recorded: only refusals make it.
func recordedDespite(ctx context.Context, s *session, accountID, transactionID string, pay domain.Payment, refusal error) (*domain.Transaction, error) {
	if pay.TxnID == "" || domain.KindOf(refusal) == 0 {
		return nil, refusal
	}
	recorded, err := lookUpPayment(ctx, s.peekStored, accountID, transactionID, pay)
	if err != nil {
		return nil, err
	}
	if recorded == nil {
		return nil, refusal
	}
	return recorded, nil
}

// lookUpPayment finds the transaction that recorded the payment's txnId, reading streams with
// peek (the session's, which may guess the transaction new, or peekStored, which reads it).
func lookUpPayment(ctx context.Context, peek func(context.Context, domain.Aggregate) (int64, error),
	accountID, transactionID string, pay domain.Payment) (*domain.Transaction, error) {
	txn := domain.TransactionStream(transactionID)
	if _, err := peek(ctx, txn); err != nil {
		return nil, err
	}
	if txn.Exists() {
		return txn, nil
	}
	if !domain.IsTransactionID(pay.TxnID) {
		return nil, nil
	}
	own := domain.TransactionStream(pay.TxnID)
	if _, err := peek(ctx, own); err != nil {
		return nil, err
	}
	if own.Exists() && own.AccountID() == accountID && own.Sale().Transaction.TxnID == pay.TxnID {
		return own, nil
	}
	return nil, nil
}
