// Command testcount reads the JSON stream of `go test -json` (a file, or standard input) and
// prints the one line `make test` ends with: N passed, N failed, N skipped.
//
// Every test counts, subtests included: a test of both stores is three (the test and its sqlite
// and postgres subtests), and a failing subtest fails its parent too. A package that fails
// without any failing test (it does not build, or its test binary dies outside a test) counts as
// one failed.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// event is the part of a test2json event the count needs.
type event struct {
	Action  string
	Package string
	Test    string
}

func main() {
	in := io.Reader(os.Stdin)
	if len(os.Args) > 1 {
		f, err := os.Open(os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, "testcount:", err)
			os.Exit(2)
		}
		defer f.Close()
		in = f
	}
	passed, failed, skipped, err := count(in)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testcount:", err)
		os.Exit(2)
	}
	fmt.Printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped)
}

func count(in io.Reader) (passed, failed, skipped int, err error) {
	failedTests := map[string]int{} // by package
	failedPackages := map[string]bool{}
	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 1<<20), 64<<20) // an output line can be long
	for scanner.Scan() {
		var e event
		if json.Unmarshal(scanner.Bytes(), &e) != nil {
			continue // not an event: a build error go test printed as text
		}
		switch {
		case e.Test == "" && e.Action == "fail":
			failedPackages[e.Package] = true
		case e.Test == "":
		case e.Action == "pass":
			passed++
		case e.Action == "fail":
			failed++
			failedTests[e.Package]++
		case e.Action == "skip":
			skipped++
		}
	}
	for pkg := range failedPackages {
		if failedTests[pkg] == 0 {
			failed++
		}
	}
	if err := scanner.Err(); err != nil {
		return 0, 0, 0, fmt.Errorf("read go test -json: %w", err)
	}
	return passed, failed, skipped, nil
}
