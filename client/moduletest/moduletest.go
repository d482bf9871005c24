// Package moduletest builds and runs a throwaway Go module that requires this one, for the tests
// that show an integrator's own module can import a package of funnel (webhooks/verify, client).
package moduletest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Run writes a module named example.com/integration with a main package of the given source in a
// temporary folder, requiring github.com/funnelhq/funnel replaced by the checkout at root (as a
// fork or a vendored copy would be), tidies it and runs it, and returns what it printed. It uses
// only the module cache this checkout already fills and the checkout's go.sum, so it needs no
// network. Skipped with -short.
func Run(t *testing.T, root, mainGo string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: builds a separate module")
	}
	checkout, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sums, err := os.ReadFile(filepath.Join(checkout, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"go.mod": "module example.com/integration\n\ngo 1.26\n\nrequire github.com/funnelhq/funnel v0.0.0\n\n" +
			"replace github.com/funnelhq/funnel => " + checkout + "\n",
		"go.sum":  string(sums), // the sums this module trusts: no checksum database to ask
		"main.go": mainGo,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	run := func(args ...string) string {
		cmd := exec.Command(goTool, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// -e: tidy also looks for the modules that the tests of dependencies import (testify for
	// oapi-codegen/runtime's, at a version this checkout's graph never selects), which a build
	// never needs and an offline cache may not hold; whatever the program does need, `go run`
	// below still refuses to go without.
	run("mod", "tidy", "-e")
	return run("run", ".")
}
