package sqldb_test

import (
	"testing"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// A statement that must read n rows reads at least n, and the pages of every limit a client may
// ask (1 to 200, and the row past each) are written as a few texts only: each text is a
// statement prepared and kept on its own.
func TestTextLimitKeepsTheTextsFew(t *testing.T) {
	texts := map[int]bool{}
	for n := 1; n <= 2000; n++ {
		got := sqldb.TextLimit(n)
		if got < n {
			t.Fatalf("TextLimit(%d) = %d: fewer rows than needed", n, got)
		}
		if n <= 201 {
			texts[got] = true
		}
		if n > 1001 && got != n {
			t.Fatalf("TextLimit(%d) = %d, want %d past the largest size", n, got, n)
		}
	}
	if len(texts) > 8 {
		t.Fatalf("pages of 1 to 200 rows are written as %d limits, want at most 8", len(texts))
	}
	for _, limit := range []int{1, 5, 10, 20, 25, 50, 100, 200} { // common page sizes read no row more than the one past them
		if got := sqldb.TextLimit(limit + 1); got != limit+1 {
			t.Fatalf("a page of %d reads %d rows, want %d", limit, got, limit+1)
		}
	}
}
