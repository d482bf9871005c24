package domain

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"time"
)

// ActivationTTL is how long an activation token stays valid (integration-api.md section 8).
const ActivationTTL = 7 * 24 * time.Hour

// Activation status values: pending until completed, or expired once its seven days passed.
const (
	ActivationStatusPending   = "pending"
	ActivationStatusCompleted = "completed"
	ActivationStatusExpired   = "expired"
)

const (
	activationTokenBytes = 32 // 256 bits from crypto/rand
	maxTokenLength       = 128
	maxExternalUserID    = 255
)

// NewActivationToken returns a fresh activation token: 256 random bits, base64url without padding.
func NewActivationToken() (string, error) {
	var b [activationTokenBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("domain: activation token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// ActivationIDFor is the id of the activation of a token. The activation's stream is named by a
// hash of its token, so that a token finds its activation without a read model while the log
// never names the token (see ActivationIssued). The token, 256 random bits, is unique across
// accounts, so the account is not part of the hash.
func ActivationIDFor(token string) string {
	sum := sha256.Sum256([]byte("activation\x00" + token))
	return "act_" + idEncoding.EncodeToString(sum[:16])
}

// IsActivationToken tells whether a token could have been issued, before any stream is read for it.
func IsActivationToken(token string) bool {
	return token != "" && len(token) <= maxTokenLength
}

// hashToken is what the activation keeps of its token.
func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// ActivationURL is the signup page of a product with the token in its query.
func ActivationURL(baseURL, token string) (string, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return "", fmt.Errorf("domain: activation base URL %q: %w", baseURL, err)
	}
	q := u.Query()
	q.Set("token", token)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// ActivationGrant is what a purchase hands the integrating app of a saas_signup product
// (the activation member of checkout.purchased, and the operator's purchase answer). The log never
// keeps it as it is: CheckoutPurchased keeps a SealedActivationGrant.
type ActivationGrant struct {
	Token     string
	URL       string
	ExpiresAt time.Time
}

// ActivationTokenSealing is the associated data an activation token is sealed with: its purpose
// and its activation, so that a token sealed for one activation opens as nothing else, neither
// another activation's token nor any other sealed value.
func ActivationTokenSealing(activationID string) []byte {
	return []byte("funnel activation token\x00" + activationID)
}

// SealedActivationGrant is what the log keeps of an ActivationGrant (the activation member of
// CheckoutPurchased since schema version 2): the token sealed with the server key, which the
// webhook projector opens to hand it over in checkout.purchased, and the product's signup page
// without the token. Whoever reads the log without the key learns no token.
type SealedActivationGrant struct {
	ActivationID string `json:"activationId"`
	// SealedToken is the token sealed with ActivationTokenSealing(ActivationID).
	SealedToken string `json:"sealedToken,omitempty"`
	// PlainToken is the token of a purchase recorded before tokens were sealed (schema version 1),
	// as it was recorded: the log is append-only. It is never recorded now.
	PlainToken        string    `json:"token,omitempty"`
	ActivationBaseURL string    `json:"activationBaseUrl"`
	ExpiresAt         time.Time `json:"expiresAt"`
}

// URL is the signup page with token.
func (g SealedActivationGrant) URL(token string) (string, error) {
	return ActivationURL(g.ActivationBaseURL, token)
}

// Activation is the SaaS signup a purchase of a saas_signup product issues: the integrating app
// creates the buyer's user, then completes it. Its stream id derives from its token
// (ActivationIDFor), and it keeps only the token's hash.
type Activation struct {
	id             string
	exists         bool
	accountID      string
	tokenHash      string
	email          string
	productID      string
	productName    string
	baseURL        string
	expiresAt      time.Time
	status         string
	externalUserID string
	subscriptionID string
	contactID      string
	changes
}

// ActivationStream returns an empty activation to load stream id into.
func ActivationStream(id string) *Activation { return &Activation{id: id} }

// StreamID is the activation id.
func (a *Activation) StreamID() string { return a.id }

// Exists tells whether the activation was issued.
func (a *Activation) Exists() bool { return a.exists }

// AccountID is the account whose product was bought.
func (a *Activation) AccountID() string { return a.accountID }

// Status is pending, completed or expired (as last recorded: see ExpireIfDue).
func (a *Activation) Status() string { return a.status }

// Email is the buyer's address.
func (a *Activation) Email() string { return a.email }

// ProductID is the product bought.
func (a *Activation) ProductID() string { return a.productID }

// ProductName is the product's name.
func (a *Activation) ProductName() string { return a.productName }

// ExpiresAt is seven days after the activation was issued.
func (a *Activation) ExpiresAt() time.Time { return a.expiresAt }

// ContactID is the buyer's contact ("" for an activation issued before it was recorded).
func (a *Activation) ContactID() string { return a.contactID }

// ErrActivationBuyerErased answers the holder of an erased buyer's token, on reading it and on
// completing it alike: the activation is kept (its record is not the person's), but there is
// nobody left to sign up, and an integrator that validates a token before creating its user must
// learn that before, not at the completion.
var ErrActivationBuyerErased = NotFound("activation not found: its buyer was erased")

// ExternalUserID is the integrating app's user id given on completion ("" when none).
func (a *Activation) ExternalUserID() string { return a.externalUserID }

// URL is the signup page with token, which the caller holds (the activation keeps none).
func (a *Activation) URL(token string) (string, error) { return ActivationURL(a.baseURL, token) }

// Matches tells whether token is the activation's own, in constant time.
func (a *Activation) Matches(token string) bool {
	return a.exists && subtle.ConstantTimeCompare([]byte(hashToken(token)), []byte(a.tokenHash)) == 1
}

// Issue records the activation of a purchase of a saas_signup product and returns what the
// purchase hands over. The activation must be the stream of the token (ActivationIDFor).
func (a *Activation) Issue(token string, product *Product, customer *Customer, transactionID, subscriptionID string, at time.Time) (ActivationGrant, error) {
	if a.id != ActivationIDFor(token) {
		return ActivationGrant{}, fmt.Errorf("domain: activation %s is not the stream of its token", a.id)
	}
	link, err := ActivationURL(product.ActivationBaseURL(), token)
	if err != nil {
		return ActivationGrant{}, err
	}
	at = at.UTC()
	a.record(ActivationIssued{ActivationID: a.id, AccountID: customer.AccountID(), TokenHash: hashToken(token),
		Email: customer.Email(), ContactID: customer.ContactID(), CustomerID: customer.StreamID(), ProductID: product.StreamID(), ProductName: product.Name(),
		ActivationBaseURL: product.ActivationBaseURL(), TransactionID: transactionID, SubscriptionID: subscriptionID,
		IssuedAt: at, ExpiresAt: at.Add(ActivationTTL)})
	return ActivationGrant{Token: token, URL: link, ExpiresAt: a.expiresAt}, nil
}

// Sealed is what a purchase records of the activation it issued: sealedToken is its token sealed
// with ActivationTokenSealing(a.StreamID()).
func (a *Activation) Sealed(sealedToken string) SealedActivationGrant {
	return SealedActivationGrant{ActivationID: a.id, SealedToken: sealedToken, ActivationBaseURL: a.baseURL, ExpiresAt: a.expiresAt}
}

// ExpireIfDue records that a pending activation expired, once its expiry has passed. Expiry is
// judged when the token is used, and recorded then, once.
func (a *Activation) ExpireIfDue(now time.Time) {
	if a.status == ActivationStatusPending && !now.Before(a.expiresAt) {
		a.record(ActivationExpired{ActivationID: a.id, ExpiredAt: a.expiresAt, SubscriptionID: a.subscriptionID})
	}
}

// Complete marks the signup done, with the integrating app's user id when given. Completing
// again with the same id, or none, changes nothing; with another id it is a conflict. An expired
// activation cannot be completed (call ExpireIfDue first to record its expiry).
func (a *Activation) Complete(externalUserID string, now time.Time) error {
	if err := checkLength("externalUserId", externalUserID, maxExternalUserID); err != nil {
		return err
	}
	switch {
	case a.status == ActivationStatusExpired || (a.status == ActivationStatusPending && !now.Before(a.expiresAt)):
		return Refused(CodeActivationExpired, "activation token has expired")
	case a.status == ActivationStatusCompleted:
		if externalUserID != "" && externalUserID != a.externalUserID {
			return Refused(CodeActivationConflict, "activation was completed with another externalUserId")
		}
		return nil
	}
	a.record(ActivationCompleted{ActivationID: a.id, ExternalUserID: externalUserID, CompletedAt: now.UTC(), SubscriptionID: a.subscriptionID, ContactID: a.contactID})
	return nil
}

// Replay applies one event of the activation's stream.
func (a *Activation) Replay(e Event) { a.when(e) }

func (a *Activation) record(e Event) {
	a.when(e)
	a.pending = append(a.pending, e)
}

func (a *Activation) when(e Event) {
	switch e := e.(type) {
	case ActivationIssued:
		a.exists, a.accountID, a.tokenHash, a.email, a.status = true, e.AccountID, e.TokenHash, e.Email, ActivationStatusPending
		a.productID, a.productName, a.baseURL, a.expiresAt = e.ProductID, e.ProductName, e.ActivationBaseURL, e.ExpiresAt
		a.subscriptionID, a.contactID = e.SubscriptionID, e.ContactID
	case ActivationCompleted:
		a.status, a.externalUserID = ActivationStatusCompleted, e.ExternalUserID
	case ActivationExpired:
		a.status = ActivationStatusExpired
	}
}

// ActivationIssued is the SaaS signup a purchase issued. It keeps the SHA-256 of the token, never
// the token: the purchase (CheckoutPurchased) keeps it sealed for the buyer's checkout.purchased.
type ActivationIssued struct {
	ActivationID string `json:"activationId"`
	AccountID    string `json:"accountId"`
	TokenHash    string `json:"tokenHash"`
	Email        string `json:"email"`
	ContactID    string `json:"contactId"`
	// CustomerID is the buyer's customer; "" in events recorded before it was, whose customer is
	// the one of their email's old key (LegacyCustomerIDFor).
	CustomerID        string    `json:"customerId,omitempty"`
	ProductID         string    `json:"productId"`
	ProductName       string    `json:"productName"`
	ActivationBaseURL string    `json:"activationBaseUrl"`
	TransactionID     string    `json:"transactionId"`
	SubscriptionID    string    `json:"subscriptionId,omitempty"`
	IssuedAt          time.Time `json:"issuedAt"`
	ExpiresAt         time.Time `json:"expiresAt"`
}

// ActivationCompleted records that the integrating app created the buyer's user.
type ActivationCompleted struct {
	ActivationID   string    `json:"activationId"`
	ExternalUserID string    `json:"externalUserId,omitempty"`
	CompletedAt    time.Time `json:"completedAt"`
	// SubscriptionID is the subscription the purchase opened, if any: it puts the completion in
	// that subscription's history. (Added after the first completions were recorded: absent in
	// those, whose history column migration 00008 filled from the stream's ActivationIssued.)
	SubscriptionID string `json:"subscriptionId,omitempty"`
	// ContactID is the buyer's contact, whose key seals externalUserId (PersonalEvent); absent
	// in completions recorded before erasure existed.
	ContactID string `json:"contactId,omitempty"`
}

// ActivationExpired records that a pending activation outlived its seven days; it was found so
// when its token was next used.
type ActivationExpired struct {
	ActivationID string    `json:"activationId"`
	ExpiredAt    time.Time `json:"expiredAt"`
	// SubscriptionID: as in ActivationCompleted.
	SubscriptionID string `json:"subscriptionId,omitempty"`
}

func (ActivationIssued) EventType() string    { return "ActivationIssued" }
func (ActivationCompleted) EventType() string { return "ActivationCompleted" }
func (ActivationExpired) EventType() string   { return "ActivationExpired" }

// The issue belongs to the buyer's contact history too (domain.ContactEvent).
func (e ActivationIssued) ContactRef() string { return e.ContactID }

// An activation issued with a subscription is part of its history (domain.SubscriptionEvent).
func (e ActivationIssued) SubscriptionRef() string    { return e.SubscriptionID }
func (e ActivationCompleted) SubscriptionRef() string { return e.SubscriptionID }
func (e ActivationExpired) SubscriptionRef() string   { return e.SubscriptionID }

func init() {
	register(ActivationIssued{}, 1, nil)
	personal(ActivationIssued{}, "email")
	register(ActivationCompleted{}, 1, nil)
	personal(ActivationCompleted{}, "externalUserId")
	register(ActivationExpired{}, 1, nil)
}
