package projections

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/funnelhq/funnel/paging"
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
	after, err := seqAfter(page)
	if err != nil {
		return nil, "", err
	}
	query := fmt.Sprintf(`%s WHERE %s AND seq > $%d ORDER BY seq LIMIT %d`, selectFrom, where, len(args)+1, page.Limit+1)
	out, err := queryAll(ctx, db, scan, query, append(args, after)...)
	if err != nil {
		return nil, "", err
	}
	out, next := paging.Cut(out, page.Limit, func(row T) any { return seqOf(row) })
	return out, next, nil
}
