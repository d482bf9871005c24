package domain

import "strings"

// Account is a tenant: it owns API keys and the custom-field catalogue, and every other
// stream names it in its metadata.
type Account struct {
	id          string
	name        string
	exists      bool
	activeKeys  map[string]bool // key id → not revoked
	knownKeys   map[string]bool
	fieldByName map[string]string // NameKey(name) → field id
	fieldNames  map[string]string // field id → name
	changes
}

// AccountStream returns an empty account to load stream id into.
func AccountStream(id string) *Account {
	return &Account{
		id:          id,
		activeKeys:  map[string]bool{},
		knownKeys:   map[string]bool{},
		fieldByName: map[string]string{},
		fieldNames:  map[string]string{},
	}
}

// StreamID is the account id.
func (a *Account) StreamID() string { return a.id }

// Exists tells whether the account was created.
func (a *Account) Exists() bool { return a.exists }

// HasCustomField tells whether the account defined a custom field with this id.
func (a *Account) HasCustomField(id string) bool { _, ok := a.fieldNames[id]; return ok }

// CustomFieldNames maps the account's custom field ids to their names.
func (a *Account) CustomFieldNames() map[string]string { return a.fieldNames }

// Create opens the account.
func (a *Account) Create(name string) error {
	if a.exists {
		return Conflict("account already exists")
	}
	name = strings.TrimSpace(name)
	if err := requireName("name", name); err != nil {
		return err
	}
	a.record(AccountCreated{AccountID: a.id, Name: name})
	return nil
}

// IssueAPIKey records a new key. Only the key's hash is kept: the secret is shown once, to the caller.
func (a *Account) IssueAPIKey(keyID, name string, scopes []Scope, keyHash string) error {
	if err := checkLength("name", strings.TrimSpace(name), MaxNameLength); err != nil {
		return err
	}
	a.record(APIKeyIssued{AccountID: a.id, KeyID: keyID, Name: strings.TrimSpace(name), Scopes: scopes, KeyHash: keyHash})
	return nil
}

// RevokeAPIKey stops a key from authenticating. Revoking twice, or an unknown key, is NotFound.
func (a *Account) RevokeAPIKey(keyID string) error {
	if !a.knownKeys[keyID] {
		return NotFound("api key not found")
	}
	if !a.activeKeys[keyID] {
		return NotFound("api key already revoked")
	}
	a.record(APIKeyRevoked{AccountID: a.id, KeyID: keyID})
	return nil
}

// DefineCustomField adds a field to the account's contact schema. Names are unique, case-insensitively.
func (a *Account) DefineCustomField(fieldID, name string) error {
	name = strings.TrimSpace(name)
	if err := requireName("name", name); err != nil {
		return err
	}
	if _, dup := a.fieldByName[NameKey(name)]; dup {
		return Conflict("a custom field named %q already exists", name)
	}
	a.record(CustomFieldDefined{AccountID: a.id, FieldID: fieldID, Name: name})
	return nil
}

// Replay applies one event of the account's stream.
func (a *Account) Replay(e Event) { a.when(e) }

func (a *Account) record(e Event) {
	a.when(e)
	a.pending = append(a.pending, e)
}

func (a *Account) when(e Event) {
	switch e := e.(type) {
	case AccountCreated:
		a.exists = true
		a.name = e.Name
	case APIKeyIssued:
		a.knownKeys[e.KeyID] = true
		a.activeKeys[e.KeyID] = true
	case APIKeyRevoked:
		a.activeKeys[e.KeyID] = false
	case CustomFieldDefined:
		a.fieldByName[NameKey(e.Name)] = e.FieldID
		a.fieldNames[e.FieldID] = e.Name
	}
}

// accountStateFormat numbers the layout of accountState: change it with the struct.
const accountStateFormat = 1

// accountState is an Account's state as Restorable encodes it.
type accountState struct {
	Exists      bool              `json:"exists"`
	Name        string            `json:"name"`
	ActiveKeys  map[string]bool   `json:"activeKeys"`
	KnownKeys   map[string]bool   `json:"knownKeys"`
	FieldByName map[string]string `json:"fieldByName"`
	FieldNames  map[string]string `json:"fieldNames"`
}

// EncodeState returns the account's state (Restorable).
func (a *Account) EncodeState() ([]byte, error) {
	return encodeState(accountStateFormat, accountState{
		Exists: a.exists, Name: a.name, ActiveKeys: a.activeKeys, KnownKeys: a.knownKeys,
		FieldByName: a.fieldByName, FieldNames: a.fieldNames,
	})
}

// RestoreState sets the state of an empty account (Restorable).
func (a *Account) RestoreState(data []byte) error {
	s, err := decodeState[accountState](data, accountStateFormat)
	if err != nil {
		return err
	}
	a.exists, a.name = s.Exists, s.Name
	a.activeKeys, a.knownKeys, a.fieldByName, a.fieldNames = s.ActiveKeys, s.KnownKeys, s.FieldByName, s.FieldNames
	return nil
}
