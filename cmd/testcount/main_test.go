package main

import (
	"strings"
	"testing"
)

// A stream with a passing test of both stores, a skipped subtest, a failing subtest that fails
// its parent, and a package that fails without a failing test (it did not build).
func TestCountSubtestsAndPackagesThatFailOutsideATest(t *testing.T) {
	stream := `{"Action":"start","Package":"a"}
{"Action":"run","Package":"a","Test":"TestX"}
{"Action":"output","Package":"a","Test":"TestX","Output":"=== RUN   TestX\n"}
{"Action":"pass","Package":"a","Test":"TestX/sqlite"}
{"Action":"skip","Package":"a","Test":"TestX/postgres"}
{"Action":"pass","Package":"a","Test":"TestX"}
{"Action":"fail","Package":"a","Test":"TestY/postgres"}
{"Action":"fail","Package":"a","Test":"TestY"}
{"Action":"fail","Package":"a"}
# b
b/b.go:1:1: expected 'package', found x
{"Action":"fail","Package":"b","FailedBuild":"b"}
{"Action":"pass","Package":"c"}
`
	passed, failed, skipped, err := count(strings.NewReader(stream))
	if err != nil {
		t.Fatal(err)
	}
	if passed != 2 || failed != 3 || skipped != 1 {
		t.Fatalf("count = %d passed, %d failed, %d skipped; want 2, 3, 1", passed, failed, skipped)
	}
}
