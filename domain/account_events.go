package domain

// AccountCreated opens a tenant.
type AccountCreated struct {
	AccountID string `json:"accountId"`
	Name      string `json:"name"`
}

// APIKeyIssued adds an API key. KeyHash is the hex SHA-256 of the secret; the secret is never stored.
type APIKeyIssued struct {
	AccountID string  `json:"accountId"`
	KeyID     string  `json:"keyId"`
	Name      string  `json:"name"`
	Scopes    []Scope `json:"scopes"`
	KeyHash   string  `json:"keyHash"`
}

// APIKeyRevoked stops a key from authenticating.
type APIKeyRevoked struct {
	AccountID string `json:"accountId"`
	KeyID     string `json:"keyId"`
}

// CustomFieldDefined adds a custom field to the account's contacts.
type CustomFieldDefined struct {
	AccountID string `json:"accountId"`
	FieldID   string `json:"fieldId"`
	Name      string `json:"name"`
}

func (AccountCreated) EventType() string     { return "AccountCreated" }
func (APIKeyIssued) EventType() string       { return "APIKeyIssued" }
func (APIKeyRevoked) EventType() string      { return "APIKeyRevoked" }
func (CustomFieldDefined) EventType() string { return "CustomFieldDefined" }

func init() {
	register(AccountCreated{}, 1, nil)
	register(APIKeyIssued{}, 1, nil)
	register(APIKeyRevoked{}, 1, nil)
	register(CustomFieldDefined{}, 1, nil)
}
