package servicetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/funnelhq/funnel/domain"
)

// Client speaks HTTP to one listener of a test service, and checks every answer against the
// listener's OpenAPI document (Contract).
type Client struct {
	server   *httptest.Server
	host     string
	token    string
	contract func() (*Contract, error)
}

func newClient(h http.Handler, host, token string, contract func() (*Contract, error)) *Client {
	return &Client{server: httptest.NewServer(h), host: host, token: token, contract: contract}
}

func (c *Client) close() { c.server.Close() }

// URL is the listener's base URL.
func (c *Client) URL() string { return c.server.URL }

// Response is a decoded answer.
type Response struct {
	Status int
	Header http.Header
	Raw    []byte
	Body   map[string]any // nil when the body is not a JSON object
}

// Request describes one call. Body is JSON-encoded unless it is a string or []byte.
type Request struct {
	Method  string
	Path    string
	Body    any
	Token   string // overrides the client's token; "-" sends no Authorization header
	Host    string // overrides the client's Host header
	Headers map[string]string
	// Unlisted is set for a request whose answer has a status on purpose that no operation of the
	// document lists (a 500 provoked by breaking the database): the contract check then checks
	// only that the answer is an Error with a code of that status.
	Unlisted bool
}

// Do performs a request and decodes the answer.
func (c *Client) Do(t testing.TB, req Request) Response {
	t.Helper()
	var sent []byte // the body, kept for the contract check
	var body io.Reader
	switch b := req.Body.(type) {
	case nil:
	case string:
		sent = []byte(b)
	case []byte:
		sent = b
	case io.Reader:
		body = io.TeeReader(b, (*bodyCopy)(&sent))
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("encode request: %v", err)
		}
		sent = enc
	}
	if sent != nil {
		body = bytes.NewReader(sent)
	}
	hr, err := http.NewRequest(req.Method, c.server.URL+req.Path, body)
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	hr.Host = c.host
	if req.Host != "" {
		hr.Host = req.Host
	}
	token := c.token
	if req.Token != "" {
		token = req.Token
	}
	if token != "" && token != "-" {
		hr.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range req.Headers {
		hr.Header.Set(k, v)
	}
	resp, err := c.server.Client().Do(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.Path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	out := Response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	_ = json.Unmarshal(raw, &out.Body)
	c.checkContract(t, exchange{request: hr, requestBody: sent, status: resp.StatusCode, header: resp.Header, body: raw, unlisted: req.Unlisted})
	return out
}

// checkContract fails the test when the exchange breaks the listener's OpenAPI document.
// Benchmarks skip it: they measure the service, not the check.
func (c *Client) checkContract(t testing.TB, x exchange) {
	t.Helper()
	if _, bench := t.(*testing.B); bench || c.contract == nil {
		return
	}
	contract, err := c.contract()
	if err != nil {
		t.Errorf("contract: %v", err)
		return
	}
	var faults []string
	if offHost(x.request.Host, c.host) && x.request.URL.Path != "/healthz" && x.request.URL.Path != "/readyz" {
		// Another host than the API's: nothing but the health endpoints answers there, so the
		// answer is the JSON 404 of the service's host rule, whatever the path.
		faults = contract.checkError(x)
		if x.status != http.StatusNotFound {
			faults = append(faults, fmt.Sprintf("another host than the API's answered %d", x.status))
		}
	} else {
		faults = contract.check(x)
	}
	for _, f := range faults {
		t.Errorf("contract: %s %s → %d: %s\nbody: %.2000s", x.request.Method, x.request.URL.RequestURI(), x.status, f, x.body)
	}
}

// HTTPClient is an HTTP client for code that builds its own requests, such as the generated Go
// client (github.com/funnelhq/funnel/client): it reaches this listener whatever the request's URL
// names (give it c.URL() as its server), and checks every answer against the listener's OpenAPI
// document as Do does, failing t on a fault.
func (c *Client) HTTPClient(t testing.TB) *http.Client {
	return &http.Client{Transport: checkedTransport{t: t, client: c}}
}

// checkedTransport sends a request to the test listener and checks the exchange.
type checkedTransport struct {
	t      testing.TB
	client *Client
}

// RoundTrip sends the request and hands back its answer with the body read and checked.
func (ct checkedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var sent []byte
	if req.Body != nil {
		var err error
		if sent, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		_ = req.Body.Close()
	}
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(sent))
	target, err := url.Parse(ct.client.server.URL)
	if err != nil {
		return nil, err
	}
	out.URL.Scheme, out.URL.Host = target.Scheme, target.Host
	res, err := ct.client.server.Client().Transport.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(raw))
	ct.client.checkContract(ct.t, exchange{request: out, requestBody: sent, status: res.StatusCode, header: res.Header, body: raw})
	return res, nil
}

// bodyCopy keeps what a request body reader sent.
type bodyCopy []byte

func (b *bodyCopy) Write(p []byte) (int, error) {
	*b = append(*b, p...)
	return len(p), nil
}

// Get, Post, Patch and Delete are Do with a method.
func (c *Client) Get(t testing.TB, path, token string) Response {
	t.Helper()
	return c.Do(t, Request{Method: http.MethodGet, Path: path, Token: token})
}

// Post sends a JSON body.
func (c *Client) Post(t testing.TB, path, token string, body any) Response {
	t.Helper()
	return c.Do(t, Request{Method: http.MethodPost, Path: path, Token: token, Body: body})
}

// Patch sends a JSON body.
func (c *Client) Patch(t testing.TB, path, token string, body any) Response {
	t.Helper()
	return c.Do(t, Request{Method: http.MethodPatch, Path: path, Token: token, Body: body})
}

// Delete sends no body.
func (c *Client) Delete(t testing.TB, path, token string) Response {
	t.Helper()
	return c.Do(t, Request{Method: http.MethodDelete, Path: path, Token: token})
}

// Expect fails the test unless the response has the status.
func (r Response) Expect(t testing.TB, status int) Response {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body: %s", r.Status, status, r.Raw)
	}
	return r
}

// ExpectError fails the test unless the response is an error with that status: a message, a
// code of that status and, at most, the param of the field at fault. It returns the message.
func (r Response) ExpectError(t testing.TB, status int) string {
	t.Helper()
	r.Expect(t, status)
	msg, ok := r.Body["error"].(string)
	code, _ := r.Body["code"].(string)
	_, hasParam := r.Body["param"]
	members := 2
	if hasParam {
		members++
	}
	if !ok || msg == "" || domain.ErrorCode(code).Status() != status || len(r.Body) != members {
		t.Fatalf("error body = %s, want {\"error\": \"...\", \"code\": <a code of %d>, \"param\"?: \"...\"}", r.Raw, status)
	}
	return msg
}

// Object returns a member that is a JSON object.
func (r Response) Object(t testing.TB, key string) map[string]any {
	t.Helper()
	v, ok := r.Body[key].(map[string]any)
	if !ok {
		t.Fatalf("member %q is not an object in %s", key, r.Raw)
	}
	return v
}

// List returns a member that is an array of objects.
func (r Response) List(t testing.TB, key string) []map[string]any {
	t.Helper()
	raw, ok := r.Body[key].([]any)
	if !ok {
		t.Fatalf("member %q is not an array in %s", key, r.Raw)
	}
	out := make([]map[string]any, len(raw))
	for i, v := range raw {
		obj, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s[%d] is not an object", key, i)
		}
		out[i] = obj
	}
	return out
}

// Strings turns a JSON array of strings into a slice.
func Strings(t testing.TB, v any) []string {
	t.Helper()
	raw, ok := v.([]any)
	if !ok {
		t.Fatalf("%v is not an array", v)
	}
	out := make([]string, len(raw))
	for i, s := range raw {
		out[i] = fmt.Sprint(s)
	}
	return out
}
