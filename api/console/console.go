// Package console serves the operator console (operator-api.md "Console"): static HTML, CSS and
// JavaScript modules built into the binary, on the operator listener at /console/. The pages hold
// no behaviour of their own: every read and every action is a call of the operator API
// (/admin/v1) from the browser, with the operator token the person typed, so the API stays the one
// source of behaviour and of its checks.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
)

//go:embed static
var static embed.FS

// Path is where the console is served.
const Path = "/console/"

// contentSecurityPolicy lets the pages load only this service's own files and talk only to this
// service: no inline script or style (the pages have none), no other origin, no plugins, no
// framing (clickjacking), no form posted anywhere, no <base> rewriting.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Mount adds the console to the operator listener's router: /console/ and its files, and
// /console redirecting there. Registered without methods, so that the console answers a wrong
// method itself (405) and the OpenAPI document, which lists the API's routes, need not list pages.
func Mount(router *mux.Router) {
	router.Handle("/console", http.RedirectHandler(Path, http.StatusMovedPermanently))
	router.PathPrefix(Path).Handler(Handler())
}

// Handler serves the console's files under /console/, with the headers that keep the pages to
// themselves.
func Handler() http.Handler {
	files, err := fs.Sub(static, "static")
	if err != nil {
		panic("console: the embedded files are missing: " + err.Error())
	}
	server := http.StripPrefix(Path, http.FileServer(http.FS(files)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			httpapi.WriteError(w, http.StatusMethodNotAllowed, "method not allowed")
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		// The files change with the binary: the browser asks again (a 304 when unchanged).
		h.Set("Cache-Control", "no-cache")
		name := strings.TrimPrefix(r.URL.Path, Path)
		if name != "" && !exists(files, name) {
			// As every unknown path of the listener: a JSON 404 with its code.
			httpapi.WriteError(w, http.StatusNotFound, "not found")
			return
		}
		server.ServeHTTP(w, r)
	})
}

// exists tells whether the console has a file (not a folder) of that name.
func exists(files fs.FS, name string) bool {
	info, err := fs.Stat(files, name)
	return err == nil && !info.IsDir()
}
