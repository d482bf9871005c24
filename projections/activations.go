package projections

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/funnelhq/funnel/domain"
)

// Activations is the read model of SaaS signup activations. It holds neither the token nor its
// hash: an activation's id derives from its token (domain.ActivationIDFor), so the holder of a
// token finds the row, and nobody else can turn a row back into a token.
type Activations struct {
	readModel[writer]
	db *sql.DB
}

// NewActivations reads the activations read model from db.
func NewActivations(db *sql.DB) *Activations {
	return &Activations{db: db, readModel: eachEvent(db, "activations", []string{"activations"},
		on(insertActivation), on(completeActivation), on(expireActivation), on(eraseActivations))}
}

// eraseActivations blanks the buyer's email and user id in the activations of an erased
// contact (contact_id: migration 16 added it, migration 24 filled it in the rows written before).
func eraseActivations(w writer, _ domain.Recorded, e domain.ContactErased) error {
	return w.exec(`UPDATE activations SET email = '', external_user_id = '' WHERE contact_id = $1`, e.ContactID)
}

func insertActivation(w writer, r domain.Recorded, e domain.ActivationIssued) error {
	customerID := e.CustomerID
	if customerID == "" { // recorded when every customer was named by its email's old key
		customerID, _ = domain.LegacyCustomerIDFor(e.AccountID, e.Email)
	}
	return w.exec(`INSERT INTO activations (id, account_id, customer_id, email, product_id, product_name, activation_base_url,
			transaction_id, subscription_id, status, external_user_id, issued_at, expires_at, completed_at, seq, contact_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, '', $11, $12, 0, $13, $14)`,
		e.ActivationID, e.AccountID, customerID, e.Email, e.ProductID, e.ProductName, e.ActivationBaseURL,
		e.TransactionID, e.SubscriptionID, domain.ActivationStatusPending, millis(e.IssuedAt), millis(e.ExpiresAt), r.Position, e.ContactID)
}

func completeActivation(w writer, _ domain.Recorded, e domain.ActivationCompleted) error {
	return w.exec(`UPDATE activations SET status = $1, external_user_id = $2, completed_at = $3 WHERE id = $4`,
		domain.ActivationStatusCompleted, e.ExternalUserID, millis(e.CompletedAt), e.ActivationID)
}

func expireActivation(w writer, _ domain.Recorded, e domain.ActivationExpired) error {
	return w.exec(`UPDATE activations SET status = $1 WHERE id = $2`, domain.ActivationStatusExpired, e.ActivationID)
}

// Activation is a SaaS signup activation as the APIs show it (the token's holder adds its URL).
type Activation struct {
	ID                string
	AccountID         string
	CustomerID        string
	Email             string
	ProductID         string
	ProductName       string
	ActivationBaseURL string
	TransactionID     string
	SubscriptionID    string // "" for a one-time tier
	Status            string // pending, completed or expired (as last recorded: expiry is recorded when a token is used)
	ExternalUserID    string
	IssuedAt          time.Time
	ExpiresAt         time.Time
	CompletedAt       time.Time // zero unless completed
}

const selectActivations = `SELECT id, account_id, customer_id, email, product_id, product_name, activation_base_url,
	transaction_id, subscription_id, status, external_user_id, issued_at, expires_at, completed_at FROM activations`

func scanActivation(row interface{ Scan(...any) error }) (Activation, error) {
	var a Activation
	var issued, expires, completed int64
	if err := row.Scan(&a.ID, &a.AccountID, &a.CustomerID, &a.Email, &a.ProductID, &a.ProductName, &a.ActivationBaseURL,
		&a.TransactionID, &a.SubscriptionID, &a.Status, &a.ExternalUserID, &issued, &expires, &completed); err != nil {
		return Activation{}, notFound(err)
	}
	a.IssuedAt, a.ExpiresAt = fromMillis(issued), fromMillis(expires)
	if completed != 0 {
		a.CompletedAt = fromMillis(completed)
	}
	return a, nil
}

// Get returns one activation of an account: a domain NotFound error when there is none, a domain
// Forbidden one when it belongs to another account (ofAccount).
func (p *Activations) Get(ctx context.Context, accountID, id string) (Activation, error) {
	row, err := p.byID(ctx, id)
	return ofAccount(row, err, row.AccountID, accountID, "activation")
}

// byID returns one activation of any account (ErrNotFound when there is none).
func (p *Activations) byID(ctx context.Context, id string) (Activation, error) {
	a, err := scanActivation(p.db.QueryRowContext(ctx, selectActivations+` WHERE id = $1`, id))
	if err != nil {
		return Activation{}, fmt.Errorf("projections: activation %s: %w", id, err)
	}
	return a, nil
}
