package projections

import (
	"context"
	"fmt"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/projections/paging"
)

// List returns one page of every account, oldest first, and the cursor of the next page: the
// operator console starts from this list (the operator token sees every account).
func (a *Accounts) List(ctx context.Context, page paging.Page) ([]Account, string, error) {
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
	accounts, err := queryAll(ctx, a.db, func(row interface{ Scan(...any) error }) (Account, error) {
		var acc Account
		var created int64
		if err := row.Scan(&acc.ID, &acc.Name, &created); err != nil {
			return Account{}, err
		}
		acc.CreatedAt = fromMillis(created)
		return acc, nil
	}, fmt.Sprintf(`SELECT id, name, created_at FROM accounts
		WHERE created_at > $1 OR (created_at = $1 AND id > $2) ORDER BY created_at, id LIMIT %d`, sqldb.TextLimit(page.Limit+1)),
		after.CreatedAt, after.ID)
	if err != nil {
		return nil, "", fmt.Errorf("projections: list accounts: %w", err)
	}
	accounts, next := paging.Cut(accounts, page.Limit, func(acc Account) any { return cursor{acc.CreatedAt.UnixMilli(), acc.ID} })
	return accounts, next, nil
}
