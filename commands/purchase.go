package commands

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/domain"
)

// Purchase records the first successful payment of a checkout (POST /admin/v1/accounts/{a}/checkout/purchases).
// It upserts the buyer's contact through the contact path every command takes, registers the
// customer of the email, records the transaction, opens a subscription for a recurring or split
// tier and issues an activation for a saas_signup product: all appended together or not at all.
// A purchase whose txnId the account recorded already, by a purchase or a rebill, records
// nothing: its result is that payment's (AlreadyRecorded), whatever else the command asks for
// (payment_ids.go).
type Purchase struct {
	Meta          Meta
	ProductID     string
	PricingTierID string
	BumpIDs       []string
	Email         string
	Name          string // optional: the buyer's full name, split into the contact's first and last name
	Processor     string // optional: domain.DefaultProcessor
	TxnID         string // optional: the processor's id of the payment; the transaction id when absent
}

// PurchaseResult names what the purchase recorded. SubscriptionID is "" for a one-time tier;
// ActivationID and ActivationToken are "" unless the product forwards to a SaaS signup. The
// token is shown here and in checkout.purchased only: the activation keeps its hash, the
// purchase keeps it sealed with the server key. Sale, Activation and CurrentPeriodEnd are what
// the operator API answers with, as recorded.
type PurchaseResult struct {
	ContactID       string
	CustomerID      string
	CustomerCreated bool
	TransactionID   string
	SubscriptionID  string
	ActivationID    string
	ActivationToken string
	Sale            domain.Sale             // the payment as checkout.purchased reports it
	Activation      *domain.ActivationGrant // nil unless the product forwards to a SaaS signup
	// CurrentPeriodEnd is when the first period of the subscription ends (zero without one); for
	// a payment recorded already, when the subscription's current period ends.
	CurrentPeriodEnd time.Time
	// AlreadyRecorded tells that the txnId was recorded before: nothing was recorded now, and
	// the result is the earlier payment's (CustomerCreated false).
	AlreadyRecorded bool
	// BuyerErased tells that the earlier payment's buyer was erased since: the payment is still
	// the answer to a processor's retry, but its customer is gone from the read models.
	BuyerErased bool
	Position    int64
}

// PurchaseHandler handles Purchase.
type PurchaseHandler = Handler[Purchase, PurchaseResult]

// NewPurchaseHandler returns the handler of Purchase, logged and measured.
func NewPurchaseHandler(repo *Repository, sealer Sealer, now func() time.Time, log *zap.Logger, obs Observer) PurchaseHandler {
	return decorate[Purchase, PurchaseResult](purchaseHandler{repo: repo, sealer: sealer, now: now, log: log.Named("commands")}, log, obs)
}

type purchaseHandler struct {
	repo   *Repository
	sealer Sealer
	now    func() time.Time
	log    *zap.Logger
}

// Handle records the purchase.
func (h purchaseHandler) Handle(ctx context.Context, cmd Purchase) (PurchaseResult, error) {
	accountID := cmd.Meta.AccountID
	email, err := domain.NormalizeEmail(cmd.Email)
	if err != nil {
		return PurchaseResult{}, err
	}
	profile, err := domain.BuyerProfile(cmd.Name)
	if err != nil {
		return PurchaseResult{}, err
	}
	product, err := readProduct(ctx, h.repo, accountID, cmd.ProductID)
	if err != nil {
		return PurchaseResult{}, err
	}
	order, err := domain.NewOrder(product, cmd.PricingTierID, cmd.BumpIDs)
	if err != nil {
		return PurchaseResult{}, err
	}
	pay, err := domain.NewPayment(cmd.Processor, cmd.TxnID, h.now())
	if err != nil {
		return PurchaseResult{}, err
	}
	res := PurchaseResult{TransactionID: paymentTransactionID(accountID, pay)}
	var erasures int
	if res.ContactID, erasures, err = h.repo.contactIDAndErasures(ctx, accountID, email); err != nil {
		return PurchaseResult{}, err
	}
	if res.CustomerID, err = h.repo.customerIDFor(ctx, accountID, email, erasures); err != nil {
		return PurchaseResult{}, err
	}
	if order.Tier.Recurring() {
		res.SubscriptionID = domain.NewID(subscriptionPrefix)
	}
	var sealedToken string
	if product.Forwarding() == domain.ForwardingSaaSSignup {
		if res.ActivationToken, err = domain.NewActivationToken(); err != nil {
			return PurchaseResult{}, err
		}
		res.ActivationID = domain.ActivationIDFor(res.ActivationToken)
		if sealedToken, err = h.sealer.Seal([]byte(res.ActivationToken), domain.ActivationTokenSealing(res.ActivationID)); err != nil {
			return PurchaseResult{}, fmt.Errorf("commands: seal the activation token: %w", err)
		}
	}

	var earlier PurchaseResult
	res.Position, err = execute(ctx, h.repo, cmd.Meta, res.ContactID, func(ctx context.Context, s *session) error {
		recorded, err := recordedPayment(ctx, s, accountID, res.TransactionID, pay)
		if err != nil {
			return err
		}
		if res.AlreadyRecorded = recorded != nil; res.AlreadyRecorded {
			earlier, err = h.recordedResult(ctx, s, recorded)
			return err
		}
		account, err := loadAccount(ctx, s, accountID)
		if err != nil {
			return err
		}
		contact, _, err := upsertContactIn(ctx, s, res.ContactID, accountID, email, profile, nil)
		if err != nil {
			return err
		}
		customer, err := loadOnce(ctx, s, res.CustomerID, domain.CustomerStream)
		if err != nil {
			return err
		}
		if res.CustomerCreated, err = customer.Register(accountID, email, cmd.Name, contact.StreamID()); err != nil {
			return err
		}
		// Tracked in the order the log should show them: the payment, then what it opened.
		txn := domain.TransactionStream(res.TransactionID)
		var sub *domain.BillingSubscription
		var activation *domain.Activation
		if err := s.track(txn); err != nil {
			return err
		}
		if res.SubscriptionID != "" {
			sub = domain.BillingSubscriptionStream(res.SubscriptionID)
			if err := s.track(sub); err != nil {
				return err
			}
		}
		if res.ActivationID != "" {
			activation = domain.ActivationStream(res.ActivationID)
			if err := s.track(activation); err != nil {
				return err
			}
		}
		var grant *domain.ActivationGrant
		var sealed *domain.SealedActivationGrant
		if activation != nil {
			g, err := activation.Issue(res.ActivationToken, product, customer, res.TransactionID, res.SubscriptionID, pay.At)
			if err != nil {
				return err
			}
			kept := activation.Sealed(sealedToken)
			grant, sealed = &g, &kept
		}
		txn.Purchase(order, customer, domain.NewSaleContact(contact.Snapshot(account.CustomFieldNames())), pay, res.SubscriptionID, sealed)
		res.Sale, res.Activation = txn.Sale(), grant
		if sub != nil {
			sub.Start(order, txn)
			res.CurrentPeriodEnd = sub.CurrentPeriodEnd()
		}
		return nil
	})
	if err != nil {
		return PurchaseResult{}, err
	}
	if res.AlreadyRecorded {
		earlier.Position = res.Position
		return earlier, nil
	}
	return res, nil
}

// recordedResult is the result of the payment that recorded the txnId: its buyer, transaction,
// subscription and activation (the token opened, as the first answer showed it), and whether
// the buyer was erased since.
func (h purchaseHandler) recordedResult(ctx context.Context, s *session, txn *domain.Transaction) (PurchaseResult, error) {
	sale := txn.Sale()
	res := PurchaseResult{
		ContactID: sale.Contact.ContactID, CustomerID: txn.CustomerID(), TransactionID: txn.StreamID(),
		SubscriptionID: sale.Transaction.SubscriptionID, Sale: sale, AlreadyRecorded: true,
	}
	if res.SubscriptionID != "" {
		sub := domain.BillingSubscriptionStream(res.SubscriptionID)
		if _, err := s.peek(ctx, sub); err != nil {
			return PurchaseResult{}, err
		}
		res.CurrentPeriodEnd = sub.CurrentPeriodEnd()
	}
	// Decided on the log, as erasure itself is, rather than on a customer the read models may
	// not show yet.
	buyer := domain.ContactStream(res.ContactID)
	if _, err := s.peek(ctx, buyer); err != nil {
		return PurchaseResult{}, err
	}
	res.BuyerErased = buyer.Erased()
	if a := txn.Activation(); a != nil {
		token := a.PlainToken // a purchase recorded before tokens were sealed
		if a.SealedToken != "" {
			opened, err := h.sealer.Open(a.SealedToken, domain.ActivationTokenSealing(a.ActivationID))
			if err != nil {
				// Sealed with a server key dropped since (the log keeps it so for ever): the
				// payment is still answered, its token redacted as the event feed shows it.
				h.log.Warn("the activation token of a purchase answered again could not be opened; answered redacted",
					zap.String("transaction", txn.StreamID()), zap.Error(err))
				opened = []byte(domain.RedactedSecret)
			}
			token = string(opened)
		}
		link, err := a.URL(token)
		if err != nil {
			return PurchaseResult{}, fmt.Errorf("commands: the activation of %s: %w", txn.StreamID(), err)
		}
		res.ActivationID, res.ActivationToken = a.ActivationID, token
		res.Activation = &domain.ActivationGrant{Token: token, URL: link, ExpiresAt: a.ExpiresAt}
	}
	return res, nil
}
