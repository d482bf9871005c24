package sqldb

// textLimits are the row counts a statement's LIMIT may be written as: a page of 1, 5, 10, 20,
// 25, 50, 100, 200, 500 or 1,000 and the row past it that tells whether another page follows.
var textLimits = [...]int{2, 6, 11, 21, 26, 51, 101, 201, 501, 1001}

// TextLimit returns the number of rows a statement that must read at least n rows writes in its
// LIMIT: n rounded up to one of a few sizes (n itself past the largest). A limit written into a
// statement's text makes each limit another statement, prepared and kept on its own (pgx's
// cache on PostgreSQL, Query's at most maxStatements a pool on SQLite), so a client paging with
// every limit from 1 to 200 would fill the room of the reads that come after it. The caller
// reads up to TextLimit(n) rows and uses the first n. A limit that is a parameter instead would
// leave PostgreSQL to plan the statement for a guessed row count, or anew on every run.
func TextLimit(n int) int {
	for _, size := range textLimits {
		if n <= size {
			return size
		}
	}
	return n
}
