package commands

import (
	"context"
	"time"

	"github.com/funnelhq/funnel/domain"
)

// readProduct reads a product of the account before a session: a product never changes once
// created, so its version needs no check at commit. 404 when there is none, 403 when it belongs
// to another account.
func readProduct(ctx context.Context, repo *Repository, accountID, productID string) (*domain.Product, error) {
	if productID == "" {
		return nil, domain.InvalidField("productId", "productId is required")
	}
	product := domain.ProductStream(productID)
	if err := read(ctx, repo, product); err != nil {
		return nil, err
	}
	switch {
	case !product.Exists():
		return nil, domain.NotFound("product not found")
	case product.AccountID() != accountID:
		return nil, domain.Forbidden("product belongs to another account")
	}
	return product, nil
}

// loadTransaction loads a transaction of the account into the session.
func loadTransaction(ctx context.Context, s *session, accountID, transactionID string) (*domain.Transaction, error) {
	if !isID(transactionID, transactionPrefix) {
		return nil, domain.NotFound("transaction not found")
	}
	txn, err := loadOnce(ctx, s, transactionID, domain.TransactionStream)
	if err != nil {
		return nil, err
	}
	switch {
	case !txn.Exists():
		return nil, domain.NotFound("transaction not found")
	case txn.AccountID() != accountID:
		return nil, domain.Forbidden("transaction belongs to another account")
	}
	return txn, nil
}

// loadCheckoutSubscription loads a checkout subscription of the account into the session.
func loadCheckoutSubscription(ctx context.Context, s *session, accountID, subscriptionID string) (*domain.BillingSubscription, error) {
	if !isID(subscriptionID, subscriptionPrefix) {
		return nil, domain.NotFound("subscription not found")
	}
	sub, err := loadOnce(ctx, s, subscriptionID, domain.BillingSubscriptionStream)
	if err != nil {
		return nil, err
	}
	switch {
	case !sub.Exists():
		return nil, domain.NotFound("subscription not found")
	case sub.AccountID() != accountID:
		return nil, domain.Forbidden("subscription belongs to another account")
	}
	return sub, nil
}

// loadActivation loads the activation of a token into the session and records its expiry when
// due: expiry is judged whenever a token is used. An unknown token is 404, another account's 403.
func loadActivation(ctx context.Context, s *session, accountID, token string, now func() time.Time) (*domain.Activation, error) {
	if !domain.IsActivationToken(token) {
		return nil, domain.NotFound("activation not found")
	}
	activation, err := loadOnce(ctx, s, domain.ActivationIDFor(token), domain.ActivationStream)
	if err != nil {
		return nil, err
	}
	switch {
	case !activation.Matches(token):
		return nil, domain.NotFound("activation not found")
	case activation.AccountID() != accountID:
		return nil, domain.Forbidden("activation belongs to another account")
	}
	activation.ExpireIfDue(now())
	return activation, nil
}
