package projections

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/projections/paging"
)

// Accounts is the read model of accounts, their API keys and their custom fields.
type Accounts struct {
	readModel[writer]
	db *sql.DB
}

// NewAccounts reads the accounts read model from db.
func NewAccounts(db *sql.DB) *Accounts {
	return &Accounts{
		readModel: eachEvent(db, "accounts", []string{"accounts", "api_keys", "custom_fields"},
			on(insertAccount),
			on(insertAPIKey),
			on(revokeAPIKey),
			on(insertCustomField),
		),
		db: db,
	}
}

func insertAccount(w writer, r domain.Recorded, e domain.AccountCreated) error {
	return w.exec(`INSERT INTO accounts (id, name, created_at) VALUES ($1, $2, $3)`, e.AccountID, e.Name, millis(r.OccurredAt))
}

func insertAPIKey(w writer, r domain.Recorded, e domain.APIKeyIssued) error {
	scopes, err := json.Marshal(e.Scopes)
	if err != nil {
		return fmt.Errorf("api key scopes: %w", err)
	}
	return w.exec(`INSERT INTO api_keys (id, account_id, name, scopes, key_hash, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		e.KeyID, e.AccountID, e.Name, string(scopes), e.KeyHash, millis(r.OccurredAt))
}

func revokeAPIKey(w writer, r domain.Recorded, e domain.APIKeyRevoked) error {
	return w.exec(`UPDATE api_keys SET revoked_at = $1 WHERE id = $2`, millis(r.OccurredAt), e.KeyID)
}

func insertCustomField(w writer, r domain.Recorded, e domain.CustomFieldDefined) error {
	return w.exec(`INSERT INTO custom_fields (id, account_id, name, created_at, position) VALUES ($1, $2, $3, $4, $5)`,
		e.FieldID, e.AccountID, e.Name, millis(r.OccurredAt), r.Position)
}

// Account is an account as the operator API shows it.
type Account struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// Account returns one account.
func (a *Accounts) Account(ctx context.Context, id string) (Account, error) {
	var acc Account
	var created int64
	err := a.db.QueryRowContext(ctx, `SELECT id, name, created_at FROM accounts WHERE id = $1`, id).Scan(&acc.ID, &acc.Name, &created)
	if err != nil {
		return Account{}, fmt.Errorf("projections: account %s: %w", id, notFound(err))
	}
	acc.CreatedAt = fromMillis(created)
	return acc, nil
}

// APIKey is a key as authentication and the operator API see it (never its secret).
type APIKey struct {
	ID        string
	AccountID string
	Name      string
	Scopes    []domain.Scope
	CreatedAt time.Time
	Revoked   bool
}

// HasScope tells whether the key carries a scope; a key issued with every scope there was
// carries the scopes added since (domain.Grants).
func (k APIKey) HasScope(s domain.Scope) bool {
	return domain.Grants(k.Scopes, s)
}

// APIKeyByHash finds the key whose secret hashes to hash (see domain.HashAPIKey), as the read
// model shows it. Requests are authenticated by the APIKeyAuthenticator, which checks the log.
func (a *Accounts) APIKeyByHash(ctx context.Context, hash string) (APIKey, error) {
	row := a.db.QueryRowContext(ctx, `SELECT id, account_id, name, scopes, created_at, revoked_at FROM api_keys WHERE key_hash = $1`, hash)
	return scanAPIKey(row)
}

// APIKey returns one key of an account by its id (never its secret): a domain NotFound error
// when there is none, a domain Forbidden one when it belongs to another account.
func (a *Accounts) APIKey(ctx context.Context, accountID, id string) (APIKey, error) {
	row := a.db.QueryRowContext(ctx, `SELECT id, account_id, name, scopes, created_at, revoked_at FROM api_keys WHERE id = $1`, id)
	key, err := scanAPIKey(row)
	return ofAccount(key, err, key.AccountID, accountID, "api key")
}

// APIKeys lists a page of an account's keys, oldest first, and the cursor of the next page.
func (a *Accounts) APIKeys(ctx context.Context, accountID string, page paging.Page) ([]APIKey, string, error) {
	type cursor struct {
		CreatedAt int64  `json:"c"`
		ID        string `json:"i"`
	}
	var after cursor
	if page.Cursor != "" {
		if err := paging.DecodeCursor(page.Cursor, &after); err != nil {
			return nil, "", err
		}
	}
	keys, err := queryAll(ctx, a.db, scanAPIKey, fmt.Sprintf(`SELECT id, account_id, name, scopes, created_at, revoked_at FROM api_keys
		WHERE account_id = $1 AND (created_at > $2 OR (created_at = $2 AND id > $3)) ORDER BY created_at, id LIMIT %d`, sqldb.TextLimit(page.Limit+1)),
		accountID, after.CreatedAt, after.ID)
	if err != nil {
		return nil, "", fmt.Errorf("projections: list api keys: %w", err)
	}
	keys, next := paging.Cut(keys, page.Limit, func(k APIKey) any { return cursor{k.CreatedAt.UnixMilli(), k.ID} })
	return keys, next, nil
}

func scanAPIKey(row interface{ Scan(...any) error }) (APIKey, error) {
	var k APIKey
	var scopes string
	var created int64
	var revoked sql.NullInt64
	if err := row.Scan(&k.ID, &k.AccountID, &k.Name, &scopes, &created, &revoked); err != nil {
		return APIKey{}, fmt.Errorf("projections: api key: %w", notFound(err))
	}
	if err := json.Unmarshal([]byte(scopes), &k.Scopes); err != nil {
		return APIKey{}, fmt.Errorf("projections: api key scopes: %w", err)
	}
	k.CreatedAt = fromMillis(created)
	k.Revoked = revoked.Valid
	return k, nil
}

// CustomField is a custom field of an account's contacts.
type CustomField struct {
	ID        string
	Name      string
	CreatedAt time.Time
	position  int64 // the log position of its definition: the list's order
}

const selectCustomFields = `SELECT id, name, created_at, position FROM custom_fields`

// CustomField returns one custom field of an account.
func (a *Accounts) CustomField(ctx context.Context, accountID, id string) (CustomField, error) {
	f, err := scanCustomField(a.db.QueryRowContext(ctx, selectCustomFields+` WHERE account_id = $1 AND id = $2`, accountID, id))
	if err != nil {
		return CustomField{}, fmt.Errorf("projections: custom field %s: %w", id, notFound(err))
	}
	return f, nil
}

// CustomFields lists a page of an account's custom fields in the order they were defined, and the
// cursor of the next page.
func (a *Accounts) CustomFields(ctx context.Context, accountID string, page paging.Page) ([]CustomField, string, error) {
	fields, next, err := listInOrderOf(ctx, a.db, "position", scanCustomField, func(f CustomField) int64 { return f.position },
		page, selectCustomFields, `account_id = $1`, accountID)
	if err != nil {
		return nil, "", fmt.Errorf("projections: list custom fields: %w", err)
	}
	return fields, next, nil
}

func scanCustomField(row interface{ Scan(...any) error }) (CustomField, error) {
	var f CustomField
	var created int64
	if err := row.Scan(&f.ID, &f.Name, &created, &f.position); err != nil {
		return CustomField{}, err
	}
	f.CreatedAt = fromMillis(created)
	return f, nil
}
