package servicetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/funnelhq/funnel/api/openapi"
	"github.com/funnelhq/funnel/domain"
)

// Contract is an OpenAPI document of the service (api/openapi), loaded to check the service's
// answers and webhooks against it. Every black-box test checks each answer it gets through
// Client.Do, and the test receivers each webhook they get (CheckWebhook): an answer that the
// document does not allow fails the test that got it, with every fault listed.
//
// kin-openapi's openapi3filter, on the document's gorilla/mux router, checks the operation, its
// parameters, headers and statuses. The JSON bodies are checked by bodySchemas, against the
// same named schemas with the same JSON Schema 2020-12 engine, compiled once per schema:
// openapi3filter compiles a validator anew for every body, which doubled the CPU time of the
// black-box tests.
type Contract struct {
	Doc    *openapi3.T
	router routers.Router
	bodies *bodySchemas
}

var (
	integrationContract = sync.OnceValues(func() (*Contract, error) { return loadContract(openapi.Integration()) })
	operatorContract    = sync.OnceValues(func() (*Contract, error) { return loadContract(openapi.Operator()) })
)

// IntegrationContract is the document of the integration API, as served.
func IntegrationContract(t testing.TB) *Contract { return mustContract(t, integrationContract) }

// OperatorContract is the document of the operator API, as served.
func OperatorContract(t testing.TB) *Contract { return mustContract(t, operatorContract) }

func mustContract(t testing.TB, load func() (*Contract, error)) *Contract {
	t.Helper()
	c, err := load()
	if err != nil {
		t.Fatalf("contract: %v", err)
	}
	return c
}

func loadContract(spec []byte) (*Contract, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(spec)
	if err != nil {
		return nil, fmt.Errorf("load the OpenAPI document: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is invalid: %w", err)
	}
	// The servers name the development address; the test listeners have their own. Without
	// servers the router matches paths on any host (the host rule of the API is the service's,
	// and has tests of its own).
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route the OpenAPI document: %w", err)
	}
	bodies, err := newBodySchemas(spec)
	if err != nil {
		return nil, err
	}
	return &Contract{Doc: doc, router: router, bodies: bodies}, nil
}

// exchange is one request and its answer, as a client saw them.
type exchange struct {
	request     *http.Request // its body already read, into requestBody
	requestBody []byte
	status      int
	header      http.Header
	body        []byte
	// unlisted marks an answer whose status no operation lists, provoked on purpose (a 500 of a
	// broken database): only its Error body and code are checked.
	unlisted bool
}

// options of every openapi3filter check: all faults reported, an answer whose status the
// operation does not list is a fault, the request's credentials are the service's business,
// and the bodies are bodySchemas' (see Contract).
func options() *openapi3filter.Options {
	o := &openapi3filter.Options{
		MultiError:            true,
		IncludeResponseStatus: true,
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
		ExcludeRequestBody:    true,
		ExcludeResponseBody:   true,
	}
	o.WithCustomSchemaErrorFunc(func(err *openapi3.SchemaError) string {
		at := err.JSONPointer()
		if len(at) == 0 {
			return err.Reason
		}
		return "/" + strings.Join(at, "/") + ": " + err.Reason
	})
	return o
}

// check returns every way the exchange breaks the document (none when it conforms). The answer
// is checked always; the request only when the answer is a success, since tests send bad
// requests on purpose and a 4xx is the right answer to them. An error's code must be one answered
// with the error's status.
func (c *Contract) check(x exchange) []string {
	if x.unlisted {
		return append(c.checkError(x), errorCodeFaults(x)...)
	}
	return append(c.checkOperation(x), errorCodeFaults(x)...)
}

// errorCodeFaults checks that an error answer's code is one of domain.ErrorCodes answered with
// that status (the schema's enum lets any code through with any status).
func errorCodeFaults(x exchange) []string {
	if x.status < 400 || x.request.Method == http.MethodHead {
		return nil
	}
	var body struct {
		Code domain.ErrorCode `json:"code"`
	}
	if json.Unmarshal(x.body, &body) != nil || body.Code == "" {
		return nil // not an Error body: the schema check says so
	}
	if !slices.ContainsFunc(domain.ErrorCodes, func(c domain.ErrorCodeInfo) bool { return c.Code == body.Code }) {
		return []string{fmt.Sprintf("the %d answer's code %q is not one of domain.ErrorCodes", x.status, body.Code)}
	}
	if body.Code.Status() != x.status {
		return []string{fmt.Sprintf("the %d answer's code %q is answered with %d", x.status, body.Code, body.Code.Status())}
	}
	return nil
}

// checkOperation checks the exchange against the document's operation.
func (c *Contract) checkOperation(x exchange) []string {
	ctx := context.Background()
	req := x.request
	if req.Method == http.MethodHead {
		// HEAD answers as GET would, without the body: the GET operation must list the status.
		get := req.Clone(ctx)
		get.Method = http.MethodGet
		route, _, err := c.router.FindRoute(get)
		if err != nil {
			return c.checkUnrouted(x, err)
		}
		if route.Operation.Responses.Status(x.status) == nil {
			return []string{fmt.Sprintf("HEAD: the GET operation %s lists no %d answer", route.Operation.OperationID, x.status)}
		}
		return nil
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		return c.checkUnrouted(x, err)
	}
	input := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: options()}
	var faults []string
	if x.status >= 200 && x.status < 300 {
		req.Body = io.NopCloser(bytes.NewReader(x.requestBody))
		faults = append(faults, describe("request", withoutHugeIntegers(openapi3filter.ValidateRequest(ctx, input)))...)
		faults = append(faults, c.checkRequestBody("request", route.Operation, req.Header, x.requestBody)...)
	}
	res := &openapi3filter.ResponseValidationInput{RequestValidationInput: input, Status: x.status, Header: x.header, Options: options()}
	res.SetBodyBytes(x.body)
	faults = append(faults, describe("answer", openapi3filter.ValidateResponse(ctx, res))...)
	response := route.Operation.Responses.Status(x.status)
	if response == nil {
		return faults // a status the operation does not list: a fault already
	}
	return append(faults, c.checkContent("answer", response.Value.Content, x.header, x.body)...)
}

// checkRequestBody checks a request's body against its operation's request body.
func (c *Contract) checkRequestBody(what string, op *openapi3.Operation, header http.Header, body []byte) []string {
	if op.RequestBody == nil {
		return nil
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if op.RequestBody.Value.Required {
			return []string{what + ": the body is required"}
		}
		return nil
	}
	return c.checkContent(what, op.RequestBody.Value.Content, header, body)
}

// checkContent checks a body against the media type of its Content-Type: JSON against the
// named schema the document gives it.
func (c *Contract) checkContent(what string, content openapi3.Content, header http.Header, body []byte) []string {
	if len(content) == 0 {
		return nil
	}
	media := content.Get(header.Get("Content-Type"))
	if media == nil {
		return []string{fmt.Sprintf("%s: the content type %q is not the document's", what, header.Get("Content-Type"))}
	}
	mediaType, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	if mediaType != "application/json" || media.Schema == nil {
		return nil
	}
	if media.Schema.Ref == "" {
		return []string{what + ": the document gives no named schema for this body"}
	}
	return c.bodies.check(what, media.Schema.Ref, body)
}

// checkUnrouted checks an answer to a request the document has no operation for: only a JSON
// 404 (no such path) or 405 with Allow (no such method on the path) is right, or, where the
// document has rate limits, a 429 (the per-address limit counts unknown paths too).
func (c *Contract) checkUnrouted(x exchange, routeErr error) []string {
	if x.status == http.StatusTooManyRequests && c.Doc.Components.Schemas["RateLimited"] != nil {
		var faults []string
		if x.header.Get("Retry-After") == "" {
			faults = append(faults, "a 429 without Retry-After")
		}
		return append(faults, c.bodies.check("the 429 answer", "#/components/schemas/RateLimited", x.body)...)
	}
	want := http.StatusNotFound
	if errors.Is(routeErr, routers.ErrMethodNotAllowed) {
		want = http.StatusMethodNotAllowed
	}
	if x.status != want {
		return []string{fmt.Sprintf("the document has no operation %s %s (%v), yet it answered %d", x.request.Method, x.request.URL.Path, routeErr, x.status)}
	}
	return c.checkError(x)
}

// checkError checks that an answer is an Error body (and a 405 names the allowed methods).
func (c *Contract) checkError(x exchange) []string {
	var faults []string
	if x.status == http.StatusMethodNotAllowed && x.header.Get("Allow") == "" {
		faults = append(faults, "a 405 without Allow")
	}
	if x.request.Method == http.MethodHead {
		return faults
	}
	return append(faults, c.bodies.check(fmt.Sprintf("the %d answer", x.status), "#/components/schemas/Error", x.body)...)
}

// withoutHugeIntegers drops the faults of integer parameters too large for an int64:
// openapi3filter reads them as one, but `limit` takes any positive integer (paging.Parse
// clamps it), as its schema says.
func withoutHugeIntegers(err error) error {
	huge := func(e error) bool {
		var re *openapi3filter.RequestError
		var pe *openapi3filter.ParseError
		return errors.As(e, &re) && re.Parameter != nil && errors.As(re.Err, &pe) && errors.Is(pe.RootCause(), strconv.ErrRange)
	}
	var multi openapi3.MultiError
	if !errors.As(err, &multi) {
		if err != nil && huge(err) {
			return nil
		}
		return err
	}
	var kept openapi3.MultiError
	for _, e := range multi {
		if !huge(e) {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return kept
}

// describe lists the faults of a validation error, each on its own.
func describe(what string, err error) []string {
	if err == nil {
		return nil
	}
	var multi openapi3.MultiError
	if errors.As(err, &multi) {
		var out []string
		for _, e := range multi {
			out = append(out, describe(what, e)...)
		}
		return out
	}
	return []string{what + ": " + err.Error()}
}

// bodySchemas are the named schemas of a document, each compiled once, on first use, as a JSON
// Schema 2020-12 schema (what an OpenAPI 3.1 schema is), formats asserted.
type bodySchemas struct {
	mu       sync.Mutex
	compiler *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema // by reference, "#/components/schemas/Contact"
}

// documentURL names the document inside the compiler.
const documentURL = "urn:funnel:openapi.json"

func newBodySchemas(spec []byte) (*bodySchemas, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(spec))
	if err != nil {
		return nil, fmt.Errorf("read the OpenAPI document: %w", err)
	}
	compiler := jsonschema.NewCompiler()
	compiler.DefaultDraft(jsonschema.Draft2020)
	compiler.AssertFormat()
	if err := compiler.AddResource(documentURL, doc); err != nil {
		return nil, fmt.Errorf("the OpenAPI document as JSON Schema: %w", err)
	}
	return &bodySchemas{compiler: compiler, compiled: map[string]*jsonschema.Schema{}}, nil
}

// check lists every way a JSON body breaks the schema ref names.
func (b *bodySchemas) check(what, ref string, body []byte) []string {
	schema, err := b.schema(ref)
	if err != nil {
		return []string{fmt.Sprintf("%s: the schema %s: %v", what, ref, err)}
	}
	value, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return []string{fmt.Sprintf("%s: not JSON: %q", what, body)}
	}
	err = schema.Validate(value)
	var invalid *jsonschema.ValidationError
	if !errors.As(err, &invalid) {
		if err != nil {
			return []string{fmt.Sprintf("%s: %v", what, err)}
		}
		return nil
	}
	var faults []string
	for _, unit := range invalid.BasicOutput().Errors {
		if unit.Error == nil {
			continue
		}
		switch unit.Error.Kind.(type) {
		case *kind.Schema, *kind.Group, *kind.Reference: // "validation failed": its causes say why
			continue
		}
		faults = append(faults, fmt.Sprintf("%s: %s: %s", what, strings.TrimPrefix(ref, "#/components/schemas/")+unit.InstanceLocation, unit.Error))
	}
	if len(faults) == 0 {
		faults = append(faults, fmt.Sprintf("%s: %v", what, invalid))
	}
	return faults
}

func (b *bodySchemas) schema(ref string) (*jsonschema.Schema, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s, ok := b.compiled[ref]; ok {
		return s, nil
	}
	s, err := b.compiler.Compile(documentURL + ref)
	if err != nil {
		return nil, err
	}
	b.compiled[ref] = s
	return s, nil
}

// offHost tells whether a request names another host than the one the API answers on: its
// 404 is the service's host rule, not an operation of the document.
func offHost(requestHost, apiHost string) bool {
	if apiHost == "" {
		return false
	}
	strip := func(h string) string { // FUNNEL_API_HOST too may be given with a port and spaces
		h = strings.TrimSpace(h)
		if host, _, err := net.SplitHostPort(h); err == nil {
			return host
		}
		return h
	}
	return !strings.EqualFold(strip(requestHost), strip(apiHost))
}

// CheckWebhook fails the test unless a webhook delivery conforms to the document's webhook of
// its type (X-Service-Event): its headers and its body, every fault listed. Receivers call it
// from their handlers, so it reports with Errorf only.
func (c *Contract) CheckWebhook(t testing.TB, header http.Header, body []byte) {
	t.Helper()
	for _, fault := range c.webhookFaults(header, body) {
		t.Errorf("contract: webhook %s: %s", header.Get("X-Service-Event"), fault)
	}
}

func (c *Contract) webhookFaults(header http.Header, body []byte) []string {
	name := header.Get("X-Service-Event")
	item := c.Doc.Webhooks[name]
	if item == nil || item.Post == nil {
		return []string{fmt.Sprintf("the document has no webhook %q", name)}
	}
	req, err := http.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	if err != nil {
		return []string{err.Error()}
	}
	req.Header = header.Clone()
	route := &routers.Route{Spec: c.Doc, Path: name, PathItem: item, Method: http.MethodPost, Operation: item.Post}
	input := &openapi3filter.RequestValidationInput{Request: req, Route: route, Options: options()}
	faults := describe("delivery", openapi3filter.ValidateRequest(context.Background(), input))
	faults = append(faults, c.checkRequestBody("delivery", item.Post, header, body)...)
	var envelope struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(body, &envelope); err == nil && envelope.Type != name {
		faults = append(faults, fmt.Sprintf("X-Service-Event %q but type %q", name, envelope.Type))
	}
	return faults
}

// CheckWebhook fails the test unless a webhook delivery conforms to the integration document
// (Contract.CheckWebhook). Test receivers call it from their handlers.
func CheckWebhook(t testing.TB, header http.Header, body []byte) {
	t.Helper()
	c, err := integrationContract()
	if err != nil {
		t.Errorf("contract: %v", err)
		return
	}
	c.CheckWebhook(t, header, body)
}
