package httpapi

import (
	"net/http"
	"strings"
)

// Bearer returns the token of an "Authorization: Bearer …" header.
func Bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}

// Unauthorized answers 401 with a WWW-Authenticate challenge for a bearer token.
func Unauthorized(w http.ResponseWriter, message string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="funnel"`)
	WriteError(w, http.StatusUnauthorized, message)
}
