package console_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// chromiumPath is Debian's chromium, which `make test` installs (.ci/install-chromium); the
// FUNNEL_CHROMIUM variable names another build.
func chromiumPath() string {
	if p := os.Getenv("FUNNEL_CHROMIUM"); p != "" {
		return p
	}
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return ""
}

// startChromium starts one headless Chromium for the test, with a fresh profile, and answers the
// context of its first tab. Without a browser the test is skipped with how to get one, except
// in CI (CI=true), where a missing browser is a failure: the browser tests must run there.
func startChromium(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		msg := "no Chromium: install Debian's chromium (`make test` does: apt-get install -y chromium) or set FUNNEL_CHROMIUM"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("lang", "en-GB"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	// The first call starts the browser, which lives as long as the context of that call: the
	// browser's own, without a timeout.
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("start chromium (%s): %v", path, err)
	}
	return browser
}

// newTab opens a tab of browser for one part of a test, closed when the test ends.
func newTab(t *testing.T, browser context.Context) context.Context {
	t.Helper()
	tab, cancelTab := chromedp.NewContext(browser)
	t.Cleanup(cancelTab)
	// The tab opens on its first call, which must not carry a step's timeout: the tab would
	// close with it.
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	return tab
}

// stepTimeout bounds one step of a browser test (one call of run), not the whole test: a page
// that waits on the service's background work (a relay, the dispatcher) may wait seconds on a
// loaded machine, where other tests' transactions on the shared PostgreSQL server hold the
// relay back (docs/performance.md, "Operating it"), and one budget for a test of twenty steps
// failed the step that happened to be running when it ran out.
const stepTimeout = 30 * time.Second

// run runs browser actions as one step, failing the test with what it was doing.
func run(t *testing.T, tab context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, stepTimeout)
	defer cancel()
	started := time.Now()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s (after %s): %v", what, time.Since(started).Round(time.Millisecond), err)
	}
}

// into runs an action that answers a value, keeping the value in dst.
func into[T any](dst *T, a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		v, err := a(ctx, t)
		*dst = v
		return chromedp.Void{}, err
	}
}

// css is a CSS selector of the first element that matches.
func css(selector string) chromedp.CSS { return chromedp.CSS(selector) }

// goTo opens a console page by its fragment, as a click on one of its links does.
func goTo(fragment string) chromedp.Action[chromedp.Void] {
	var ignored any
	return into(&ignored, chromedp.Evaluate[any]("location.hash = "+quote(fragment)))
}

func quote(s string) string {
	b := []byte{'\''}
	for _, r := range s {
		if r == '\'' || r == '\\' {
			b = append(b, '\\')
		}
		b = append(b, string(r)...)
	}
	return string(append(b, '\''))
}

// signIn opens the console in tab and signs in with the operator token, as far as the accounts.
func signIn(t *testing.T, svc *servicetest.Service, tab context.Context) {
	t.Helper()
	run(t, tab, "sign in",
		chromedp.Navigate(svc.Operator.URL()+"/console/"),
		chromedp.WaitVisible(css("#token")),
		chromedp.SendKeys(css("#token"), servicetest.AdminToken),
		chromedp.Click(css(`form.login button[type="submit"]`)),
		chromedp.WaitVisible(css("main table a")))
}
