package domain

import "strings"

// Customer is a buyer of an account's checkouts: one per account and email (CustomerIDFor),
// linked to the contact of that email.
type Customer struct {
	id        string
	exists    bool
	accountID string
	email     string
	name      string
	contactID string
	changes
}

// CustomerIDFor is the id of the one customer an account can have for an email. Two concurrent
// first purchases by one buyer reach the same stream, and only one creates it.
func CustomerIDFor(accountID, email string) string {
	return derivedID("cus", accountID, "customer", EmailKey(email))
}

// LegacyCustomerIDFor is the id an email's customer had before emails were compared by
// EmailKey, and whether it differs from CustomerIDFor (see LegacyContactIDFor).
func LegacyCustomerIDFor(accountID, email string) (string, bool) {
	return derivedID("cus", accountID, "customer", legacyEmailKey(email)), EmailKeyChanged(email)
}

// CustomerStream returns an empty customer to load stream id into.
func CustomerStream(id string) *Customer { return &Customer{id: id} }

// StreamID is the customer id.
func (c *Customer) StreamID() string { return c.id }

// Exists tells whether the customer was created.
func (c *Customer) Exists() bool { return c.exists }

// AccountID is the account the customer buys from.
func (c *Customer) AccountID() string { return c.accountID }

// Email is the buyer's address in the casing of the first purchase.
func (c *Customer) Email() string { return c.email }

// Name is the buyer's name as last given ("" when never given).
func (c *Customer) Name() string { return c.name }

// ContactID is the contact of the customer's email.
func (c *Customer) ContactID() string { return c.contactID }

// Register creates the customer on a first purchase, or records a new name given by a later one
// (a purchase without a name keeps the one known). email must be normalized. The name is trimmed
// as BuyerProfile trims the contact's: a name of white space only is no name, so the customer
// and the contact of one purchase agree on whether it gave one.
func (c *Customer) Register(accountID, email, name, contactID string) (created bool, err error) {
	if err := checkLength("name", name, MaxNameLength); err != nil {
		return false, err
	}
	name = strings.TrimSpace(name)
	if !c.exists {
		c.record(CustomerCreated{CustomerID: c.id, AccountID: accountID, Email: email, Name: name, ContactID: contactID})
		return true, nil
	}
	if name != "" && name != c.name {
		c.record(CustomerRenamed{CustomerID: c.id, Name: name, ContactID: c.contactID})
	}
	return false, nil
}

// Sale is the customer as checkout events show it.
func (c *Customer) Sale() SaleCustomer {
	return SaleCustomer{Email: c.email, Name: c.name, ContactID: c.contactID}
}

// Replay applies one event of the customer's stream.
func (c *Customer) Replay(e Event) { c.when(e) }

func (c *Customer) record(e Event) {
	c.when(e)
	c.pending = append(c.pending, e)
}

func (c *Customer) when(e Event) {
	switch e := e.(type) {
	case CustomerCreated:
		c.exists, c.accountID, c.email, c.name, c.contactID = true, e.AccountID, e.Email, e.Name, e.ContactID
	case CustomerRenamed:
		c.name = e.Name
	}
}

// CustomerCreated is the first purchase of a buyer in an account.
type CustomerCreated struct {
	CustomerID string `json:"customerId"`
	AccountID  string `json:"accountId"`
	Email      string `json:"email"`
	Name       string `json:"name"`
	ContactID  string `json:"contactId"`
}

// CustomerRenamed records the name a later purchase gave.
type CustomerRenamed struct {
	CustomerID string `json:"customerId"`
	Name       string `json:"name"`
	// ContactID is the buyer's contact, whose key seals the name (PersonalEvent); absent in
	// renames recorded before erasure existed.
	ContactID string `json:"contactId,omitempty"`
}

func (CustomerCreated) EventType() string { return "CustomerCreated" }
func (CustomerRenamed) EventType() string { return "CustomerRenamed" }

func init() {
	register(CustomerCreated{}, 1, nil)
	personal(CustomerCreated{}, "email", "name")
	register(CustomerRenamed{}, 1, nil)
	personal(CustomerRenamed{}, "name")
}

// customerStateFormat numbers the layout of customerState: change it with the struct.
const customerStateFormat = 1

// customerState is a Customer's state as Restorable encodes it.
type customerState struct {
	Exists    bool   `json:"exists"`
	AccountID string `json:"accountId"`
	Email     string `json:"email"`
	Name      string `json:"name"`
	ContactID string `json:"contactId"`
}

// EncodeState returns the customer's state (Restorable).
func (c *Customer) EncodeState() ([]byte, error) {
	return encodeState(customerStateFormat, customerState{
		Exists: c.exists, AccountID: c.accountID, Email: c.email, Name: c.name, ContactID: c.contactID,
	})
}

// RestoreState sets the state of an empty customer (Restorable).
func (c *Customer) RestoreState(data []byte) error {
	s, err := decodeState[customerState](data, customerStateFormat)
	if err != nil {
		return err
	}
	c.exists, c.accountID, c.email, c.name, c.contactID = s.Exists, s.AccountID, s.Email, s.Name, s.ContactID
	return nil
}
