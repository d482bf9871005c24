package projections

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/projections/paging"
)

// seqAfter reads a creation-order cursor: the seq of the last row of the previous page, or 0.
func seqAfter(page paging.Page) (int64, error) {
	if page.Cursor == "" {
		return 0, nil
	}
	var after int64
	if err := paging.DecodeCursor(page.Cursor, &after); err != nil {
		return 0, err
	}
	return after, nil
}

// listInCreationOrder returns one page of the rows of selectFrom that match where (whose
// parameters are args), in creation order (the seq column), and the cursor of the next page.
func listInCreationOrder[T any](ctx context.Context, db *sql.DB, scan func(interface{ Scan(...any) error }) (T, error), seqOf func(T) int64,
	page paging.Page, selectFrom, where string, args ...any) ([]T, string, error) {
	return listInOrderOf(ctx, db, "seq", scan, seqOf, page, selectFrom, where, args...)
}

// listInOrderOf is listInCreationOrder for a table whose creation order is another column (a log
// position of another name).
func listInOrderOf[T any](ctx context.Context, db *sql.DB, column string, scan func(interface{ Scan(...any) error }) (T, error), seqOf func(T) int64,
	page paging.Page, selectFrom, where string, args ...any) ([]T, string, error) {
	after, err := seqAfter(page)
	if err != nil {
		return nil, "", err
	}
	query := fmt.Sprintf(`%s WHERE %s AND %s > $%d ORDER BY %s LIMIT %d`, selectFrom, where, column, len(args)+1, column, sqldb.TextLimit(page.Limit+1))
	out, err := queryAll(ctx, db, scan, query, append(args, after)...)
	if err != nil {
		return nil, "", err
	}
	out, next := paging.Cut(out, page.Limit, func(row T) any { return seqOf(row) })
	return out, next, nil
}

// listNewestFirst returns one page of the rows of selectFrom that match the condition, newest
// first (the seq column, descending), and the cursor of the next page.
func listNewestFirst[T any](ctx context.Context, db *sql.DB, scan func(interface{ Scan(...any) error }) (T, error), seqOf func(T) int64,
	page paging.Page, selectFrom string, cond listCondition) ([]T, string, error) {
	where, args := cond.where, cond.args
	// seq is the column of the account's newest-first index. A condition that names its few
	// rows through another index (one email) sorts by seq+0 instead: SQLite, which keeps no
	// statistics, would otherwise walk the newest-first index to avoid a sort of two rows,
	// reading every row of the account (seconds over 100k contacts).
	seq := "seq"
	if cond.fewRows {
		seq = "seq + 0"
	}
	if page.Cursor != "" {
		var before int64
		if err := paging.DecodeCursor(page.Cursor, &before); err != nil {
			return nil, "", err
		}
		args = append(args, before)
		where += fmt.Sprintf(` AND %s < $%d`, seq, len(args))
	}
	query := fmt.Sprintf(`%s WHERE %s ORDER BY %s DESC LIMIT %d`, selectFrom, where, seq, sqldb.TextLimit(page.Limit+1))
	// A default page and its extra row are read into one allocation; a bigger page grows as it is
	// read, so a short list of a large limit does not hold room for 201 rows.
	out, err := queryInto(ctx, db, make([]T, 0, min(sqldb.TextLimit(page.Limit+1), 64)), scan, query, args...)
	if err != nil {
		return nil, "", err
	}
	out, next := paging.Cut(out, page.Limit, func(row T) any { return seqOf(row) })
	return out, next, nil
}

// listCondition narrows a list: a WHERE clause and its parameters, and whether it names a few
// rows through an index of its own (fewRows).
type listCondition struct {
	where   string
	args    []any
	fewRows bool
}

// ofAccountWithEmail is the condition of a list of an account's rows that have an email_key
// column, narrowed to one email (domain.EmailKey, and the old key of a row written under it:
// domain.EmailKeys) unless email is "".
func ofAccountWithEmail(accountID, email string) listCondition {
	if email == "" {
		return listCondition{where: `account_id = $1`, args: []any{accountID}}
	}
	keys := domain.EmailKeys(email)
	return listCondition{where: `account_id = $1 AND email_key IN ($2, $3)`, args: []any{accountID, keys[0], keys[1]}, fewRows: true}
}
