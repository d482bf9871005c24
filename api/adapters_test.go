package api_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The HTTP APIs and their plumbing import no adapter (issue 20): what they need of a store is a
// port of their own (api/httpapi/idempotent, api/httpapi/limits: interfaces and the values they
// exchange), which the adapters in infra/ implement and infra/service wires. The read side the
// handlers query (projections, webhooks) is not api's own, and is not checked here.
func TestAPIImportsNoAdapter(t *testing.T) {
	const module = "github.com/funnelhq/funnel"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", module+"/api/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		checked[fields[0]] = true
		for _, imported := range fields[1:] {
			if strings.HasPrefix(imported, module+"/infra/") {
				t.Errorf("%s imports the adapter %s: give it a port under api/ that infra/ implements", fields[0], imported)
			}
		}
	}
	for _, pkg := range []string{"/api/httpapi", "/api/integration", "/api/operator"} {
		if !checked[module+pkg] {
			t.Errorf("go list did not list %s: the check above saw %d packages", module+pkg, len(checked))
		}
	}
}
