package projections

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/projections/paging"
)

// Customers is the read model of checkout customers: one per account and email.
type Customers struct {
	readModel[writer]
	db *sql.DB
}

// NewCustomers reads the customers read model from db. A customer is created by its first
// purchase and only ever renamed afterwards: each event is one small write.
func NewCustomers(db *sql.DB) *Customers {
	return &Customers{db: db, readModel: eachEvent(db, "customers", []string{"customers"},
		on(insertCustomer), on(renameCustomer), on(eraseCustomer))}
}

// eraseCustomer deletes the customer of an erased contact; its transactions and subscriptions
// keep their amounts, products and dates under its id (financial records).
func eraseCustomer(w writer, _ domain.Recorded, e domain.ContactErased) error {
	return w.exec(`DELETE FROM customers WHERE contact_id = $1`, e.ContactID)
}

func insertCustomer(w writer, r domain.Recorded, e domain.CustomerCreated) error {
	return w.exec(`INSERT INTO customers (id, account_id, email, email_key, name, contact_id, created_at, seq)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		e.CustomerID, e.AccountID, e.Email, domain.CustomerEmailKey(e.AccountID, e.CustomerID, e.Email), e.Name, e.ContactID, millis(r.OccurredAt), r.Position)
}

func renameCustomer(w writer, _ domain.Recorded, e domain.CustomerRenamed) error {
	return w.exec(`UPDATE customers SET name = $1 WHERE id = $2`, e.Name, e.CustomerID)
}

// Customer is a checkout customer as the APIs show it.
type Customer struct {
	ID        string
	AccountID string
	Email     string // as the first purchase spelt it
	Name      string
	ContactID string
	CreatedAt time.Time
	seq       int64
}

const selectCustomers = `SELECT id, account_id, email, name, contact_id, created_at, seq FROM customers`

func scanCustomer(row interface{ Scan(...any) error }) (Customer, error) {
	var c Customer
	var created int64
	if err := row.Scan(&c.ID, &c.AccountID, &c.Email, &c.Name, &c.ContactID, &created, &c.seq); err != nil {
		return Customer{}, notFound(err)
	}
	c.CreatedAt = fromMillis(created)
	return c, nil
}

// Get returns one customer of an account: a domain NotFound error when there is none, a domain
// Forbidden one when it belongs to another account (ofAccount).
func (p *Customers) Get(ctx context.Context, accountID, id string) (Customer, error) {
	row, err := p.byID(ctx, id)
	return ofAccount(row, err, row.AccountID, accountID, "customer")
}

// byID returns one customer of any account (ErrNotFound when there is none).
func (p *Customers) byID(ctx context.Context, id string) (Customer, error) {
	c, err := scanCustomer(p.db.QueryRowContext(ctx, selectCustomers+` WHERE id = $1`, id))
	if err != nil {
		return Customer{}, fmt.Errorf("projections: customer %s: %w", id, err)
	}
	return c, nil
}

// CustomerFilter narrows a customer list.
type CustomerFilter struct {
	Email string // exact, case-insensitive
}

// List returns one page of an account's customers, newest first.
func (p *Customers) List(ctx context.Context, accountID string, filter CustomerFilter, page paging.Page) ([]Customer, string, error) {
	out, next, err := listNewestFirst(ctx, p.db, scanCustomer, func(c Customer) int64 { return c.seq }, page, selectCustomers, ofAccountWithEmail(accountID, filter.Email))
	if err != nil {
		return nil, "", fmt.Errorf("projections: list customers: %w", err)
	}
	return out, next, nil
}
