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
	txn := domain.TransactionStream(transactionID)
	if _, err := s.peek(ctx, txn); err != nil {
		return nil, err
	}
	if txn.Exists() {
		return txn, nil
	}
	if !domain.IsTransactionID(pay.TxnID) {
		return nil, nil
	}
	own := domain.TransactionStream(pay.TxnID)
	if _, err := s.peek(ctx, own); err != nil {
		return nil, err
	}
	if own.Exists() && own.AccountID() == accountID && own.Sale().Transaction.TxnID == pay.TxnID {
		return own, nil
	}
	return nil, nil
}
