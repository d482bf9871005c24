package projections

import "github.com/funnelhq/funnel/paging"

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
