package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/openapi"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// The documents name every route the service serves, and no route it does not: a route added
// without its document, or an operation left in a document after its route went, fails here.
func TestDocumentsNameEveryRouteAndNoOther(t *testing.T) {
	svc := servicetest.Shared(t, sqldb.SQLite)
	// The API listener: the routes of the API host, and the health endpoints on any host.
	health := httpapi.NewRouter()
	httpapi.AddHealth(health, nil)
	compareRoutes(t, "integration", servicetest.IntegrationContract(t).Doc, svc.App.APIRouter(), health)
	compareRoutes(t, "operator", servicetest.OperatorContract(t).Doc, svc.App.OperatorRouter())
}

// servedRoutes are the routes of routers, walked, as "METHOD /path/{template}".
func servedRoutes(t *testing.T, routers ...*mux.Router) map[string]bool {
	t.Helper()
	served := map[string]bool{}
	for _, r := range routers {
		err := r.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
			path, err := route.GetPathTemplate()
			methods, merr := route.GetMethods()
			if err != nil || merr != nil { // a route of any method only answers 405 (RefuseOtherMethods)
				return nil
			}
			for _, m := range methods {
				served[m+" "+path] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return served
}

func compareRoutes(t *testing.T, name string, doc *openapi3.T, routers ...*mux.Router) {
	t.Helper()
	served := servedRoutes(t, routers...)
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	if len(served) < 10 {
		t.Fatalf("%s: walked only %d routes", name, len(served))
	}
	for route := range served {
		if !documented[route] {
			t.Errorf("%s: %s is served but not in the document", name, route)
		}
	}
	for route := range documented {
		if !served[route] {
			t.Errorf("%s: %s is in the document but not served", name, route)
		}
	}
}

// The documents are served as checked in, without credentials: the integration document and
// /llms-full.txt on the API host only, the operator document on the operator listener.
func TestDocumentsAreServed(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		for _, c := range []struct {
			client      *servicetest.Client
			path        string
			contentType string
			want        []byte
		}{
			{svc.API, "/api/v1/openapi.json", "application/json; charset=utf-8", openapi.Integration()},
			{svc.API, "/llms-full.txt", "text/plain; charset=utf-8", openapi.LLMsFull()},
			{svc.Operator, "/admin/v1/openapi.json", "application/json; charset=utf-8", openapi.Operator()},
		} {
			res := c.client.Do(t, servicetest.Request{Method: http.MethodGet, Path: c.path, Token: "-"}).Expect(t, http.StatusOK)
			if !bytes.Equal(res.Raw, c.want) || res.Header.Get("Content-Type") != c.contentType {
				t.Errorf("%s: %d bytes of %s, want the %d bytes embedded as %s", c.path, len(res.Raw), res.Header.Get("Content-Type"), len(c.want), c.contentType)
			}
		}
		svc.API.Do(t, servicetest.Request{Method: http.MethodGet, Path: "/api/v1/openapi.json", Token: "-", Host: "elsewhere.example"}).ExpectError(t, http.StatusNotFound)
	})
}

// exampleIDs are the ids the documents' examples use, each the id of a resource the fixture of
// TestDocumentExamplesWork makes.
const (
	exAccount         = "acc_3wzq7k2mxb5ndr4tjv6hc2pfae"
	exKeyToRevoke     = "key_5tq2w7hrbz3mkx4nca6vjd2pye"
	exCustomField     = "cf_7rkz2qm4xwb3nd5tjv6hcpa2fe"
	exContact         = "ct_4fkq2zmw7xbn3rtjd5vhc6pa2e"
	exContactToErase  = "ct_6zkq2mxw7bn3rd4tjv5hcpe2ra"
	exContactToForget = "ct_2fkq7zmw4xbn3rtjd5vhc6go2e"
	exTagLead         = "tag_2mzk7qwx4bn5rdtj3vh6cpf2ae"
	exTagCustomer     = "tag_6pcx3kzq7mw2bnr4tjd5vh2fae"
	exCRM             = "crm_3bqz7kxm2wn4rd5tjv6hcp2fae"
	exStageNew        = "stg_2nxk7zqm4wb3rd5tjv6hcpa2fe"
	exStageWon        = "stg_5wqk2zxm7bn3rd4tjv6hcpf2ae"
	exLead            = "lead_6kqz2mxw7bn3rd4tjv5hcpa2fe"
	exForm            = "form_4xkq7zmw2bn3rd5tjv6hcpf2ae"
	exFieldEmail      = "fld_2qkz7mxw4bn3rd5tjv6hcpa2fe"
	exFieldName       = "fld_7mxk2zqw4bn3rd5tjv6hcpf2ae"
	exCalendar        = "evt_5zkq2mxw7bn3rd4tjv6hcpa2fe"
	exQuestion        = "q_3mkz7qxw2bn4rd5tjv6hcpf2ae"
	exProduct         = "prod_2wkz7qmx4bn3rd5tjv6hcpa2fe"
	exTier            = "tier_7qkz2mxw4bn3rd5tjv6hcpf2ae"
	exBump            = "bump_4mkz2qxw7bn3rd5tjv6hcpa2fe"
	exCustomer        = "cus_6wkz2qmx7bn3rd4tjv5hcpf2ae"
	exToken           = "q8Vn3xYt2LmK9pRw5sZb7cHd4jFg6aTe1uNo0iQvXyE"
	exSubToRebill     = "sub_5mkz2qxw7bn3rd4tjv6hcpf2ae"
	exSubToCancel     = "sub_3wkz7qmx2bn4rd5tjv6hcpa2fe"
	exTransaction     = "txn_2xkz7qmw4bn3rd5tjv6hcpa2fe"
	exRESTHook        = "wh_3qkz7mxw2bn4rd5tjv6hcpa2fe"
	exWebhookToDelete = "wh_5tkz2qmx7bn3rd4tjv6hcpa2fe"
	exWebhookToRotate = "wh_7mkz2qxw4bn3rd5tjv6hcpf2ae"
	exWebhookLogged   = "wh_2mkz7qxw4bn3rd5tjv6hcpa2fe"
	// exReplaySince is the replay example's since, which must fall within the feed's 30 days of
	// the test's now: the fixture replaces it with an hour ago.
	exReplaySince = "2026-11-20T09:00:00.000Z"
	exDelivery    = "dlv_7wkz2qmx4bn3rd5tjv6hcpf2ae"
	// exHooks is the receiver the examples subscribe; the test's own receiver stands in for it.
	exHooks = "https://hooks.example.com"
)

// Every operation of both documents works as its examples show it: the test makes an account
// holding the resources the examples name, sends each operation with the examples of its
// parameters and body (their ids swapped for the fixture's), and gets a success, which the
// client checks against the document as it checks every answer. The webhooks the examples
// cause reach a receiver that checks them too.
func TestDocumentExamplesWork(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			servicetest.CheckWebhook(t, r.Header, body)
		}))
		t.Cleanup(receiver.Close)
		ids, key := exampleFixture(t, svc, receiver.URL)
		real := func(s string) string {
			for example, id := range ids {
				s = strings.ReplaceAll(s, example, id)
			}
			return s
		}
		sent := map[string]int{}
		for _, d := range listeners(t, svc) {
			for _, path := range sortedPaths(d.doc) {
				item := d.doc.Paths.Value(path)
				for _, method := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
					op := item.GetOperation(method)
					if op == nil {
						continue
					}
					req := exampleRequest(t, method, path, append(item.Parameters, op.Parameters...), op, real)
					switch {
					case op.Security != nil && len(*op.Security) == 0:
						req.Token = "-" // public
					case d.client == svc.API:
						req.Token = key
					}
					res := d.client.Do(t, req)
					if res.Status < 200 || res.Status > 299 {
						t.Errorf("%s (%s %s): the example answered %d: %s", op.OperationID, method, req.Path, res.Status, res.Raw)
					}
					sent[d.doc.Info.Title]++
				}
			}
		}
		// An operation was sent for every route the service serves (a walk that sent nothing
		// would pass); TestDocumentsNameEveryRouteAndNoOther checks they are the same routes.
		health := httpapi.NewRouter()
		httpapi.AddHealth(health, nil)
		integration, operator := len(servedRoutes(t, svc.App.APIRouter(), health)), len(servedRoutes(t, svc.App.OperatorRouter()))
		if sent["funnel integration API"] != integration || sent["funnel operator API"] != operator {
			t.Fatalf("operations sent: %v, want %d of the integration API and %d of the operator API (the routes served)", sent, integration, operator)
		}
	})
}

// exampleRequest builds an operation's request from its examples: every path parameter must
// have one, and so must a body. Header examples are not sent: the one Idempotency-Key example
// serves every operation, and one key sent with two bodies is a conflict.
func exampleRequest(t *testing.T, method, path string, params openapi3.Parameters, op *openapi3.Operation, real func(string) string) servicetest.Request {
	t.Helper()
	query := url.Values{}
	// An operation's own parameter overrides the path's of the same name and place (OpenAPI):
	// the last one given wins.
	effective := map[string]*openapi3.Parameter{}
	for _, ref := range params {
		effective[ref.Value.In+" "+ref.Value.Name] = ref.Value
	}
	for _, ref := range params {
		p := ref.Value
		if effective[p.In+" "+p.Name] != p {
			continue
		}
		example, has := p.Example.(string)
		if !has && p.Example != nil {
			b, _ := json.Marshal(p.Example)
			example, has = string(b), true
		}
		switch {
		case p.In == openapi3.ParameterInPath && !has:
			t.Fatalf("%s: path parameter %s has no example", op.OperationID, p.Name)
		case p.In == openapi3.ParameterInPath:
			path = strings.Replace(path, "{"+p.Name+"}", url.PathEscape(real(example)), 1)
		case p.In == openapi3.ParameterInQuery && has:
			query.Set(p.Name, real(example))
		}
	}
	req := servicetest.Request{Method: method, Path: path}
	if len(query) > 0 {
		req.Path += "?" + query.Encode()
	}
	if op.RequestBody != nil {
		media := op.RequestBody.Value.Content.Get("application/json")
		if media == nil || media.Example == nil {
			t.Fatalf("%s: the request body has no example", op.OperationID)
		}
		b, err := json.Marshal(media.Example)
		if err != nil {
			t.Fatal(err)
		}
		req.Body = real(string(b))
	}
	return req
}

// listener is a listener of the service with the OpenAPI document of what it serves.
type listener struct {
	client *servicetest.Client
	doc    *openapi3.T
}

func listeners(t *testing.T, svc *servicetest.Service) []listener {
	return []listener{{svc.API, servicetest.IntegrationContract(t).Doc}, {svc.Operator, servicetest.OperatorContract(t).Doc}}
}

// sortedPaths lists a document's paths in a fixed order.
func sortedPaths(doc *openapi3.T) []string {
	var paths []string
	for p := range doc.Paths.Map() {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths
}

// exampleFixture makes an account holding a resource for each id the examples name, and returns
// what each example id stands for, and an API key of the account with every scope.
func exampleFixture(t *testing.T, svc *servicetest.Service, receiverURL string) (map[string]string, string) {
	t.Helper()
	acc := svc.NewAccount(t)
	a := "/admin/v1/accounts/" + acc.ID
	ids := map[string]string{exAccount: acc.ID, exHooks: receiverURL}

	ids[exKeyToRevoke] = svc.Operator.Get(t, a+"/api-keys", "").Expect(t, http.StatusOK).List(t, "apiKeys")[0]["id"].(string)
	key := svc.NewKey(t, acc.ID, nil)
	ids[exCustomField] = svc.NewCustomField(t, acc.ID, "Organisation")
	ids[exTagLead] = svc.NewTag(t, acc.ID, "Lead")
	ids[exTagCustomer] = svc.NewTag(t, acc.ID, "Customer")
	crm := svc.NewCRM(t, acc.ID, "Sales", "New", "Won")
	ids[exCRM], ids[exStageNew], ids[exStageWon] = crm.ID, crm.Stages[0], crm.Stages[1]

	contact := upsert(t, svc, key, map[string]any{"email": "ada@example.com", "tagIds": []string{ids[exTagCustomer]}}).Expect(t, http.StatusOK)
	ids[exContact] = contact.Object(t, "contact")["id"].(string)
	// Two contacts for the two erasures (DELETE /api/v1/contacts/{id} and the operator's).
	ids[exContactToErase] = upsert(t, svc, key, map[string]any{"email": "erase.me@example.com"}).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
	ids[exContactToForget] = upsert(t, svc, key, map[string]any{"email": "forget.me@example.com"}).Expect(t, http.StatusOK).Object(t, "contact")["id"].(string)
	lead := svc.API.Post(t, "/api/v1/crms/"+crm.ID+"/leads", key, map[string]any{"contactEmail": "ada@example.com"}).Expect(t, http.StatusCreated)
	ids[exLead] = lead.Object(t, "lead")["id"].(string)

	form, fields := svc.NewForm(t, acc.ID, "Signup", nil,
		servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email", "required": true},
		servicetest.Field{"label": "Name", "type": "text", "contactField": "builtin:fullName"})
	ids[exForm], ids[exFieldEmail], ids[exFieldName] = form, fields[0], fields[1]
	calendar, questions := svc.NewEventType(t, acc.ID, "Intro call", 30,
		servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email", "required": true})
	ids[exCalendar], ids[exQuestion] = calendar, questions[0]

	product := svc.NewProduct(t, acc.ID, map[string]any{
		"name": "Pro", "forwarding": "saas_signup", "activationBaseUrl": "https://app.example.com/signup",
		"pricingTiers": []any{map[string]any{"name": "Monthly", "amount": 4900, "currency": "USD", "interval": "month"}},
		"bumps":        []any{map[string]any{"name": "Onboarding call", "amount": 9900}},
	})
	ids[exProduct], ids[exTier], ids[exBump] = product.ID, product.TierIDs[0], product.BumpIDs[0]
	purchase := func(email string) servicetest.Response {
		return svc.Operator.Post(t, a+"/checkout/purchases", "", map[string]any{
			"productId": product.ID, "pricingTierId": product.TierIDs[0], "bumpIds": []string{product.BumpIDs[0]}, "email": email,
		}).Expect(t, http.StatusCreated)
	}
	bought := purchase("linus@example.com")
	ids[exCustomer] = bought.Object(t, "customer")["id"].(string)
	ids[exTransaction] = bought.Object(t, "transaction")["id"].(string)
	ids[exSubToRebill] = bought.Object(t, "subscription")["id"].(string)
	ids[exToken] = bought.Object(t, "activation")["token"].(string)
	ids[exSubToCancel] = purchase("grace@example.com").Object(t, "subscription")["id"].(string)

	webhook := func(events ...string) string {
		return svc.Operator.Post(t, a+"/webhooks", "", map[string]any{"url": receiverURL, "events": events}).
			Expect(t, http.StatusCreated).Object(t, "webhook")["id"].(string)
	}
	ids[exRESTHook] = svc.API.Post(t, "/api/v1/webhooks/subscriptions", key, map[string]any{"url": receiverURL, "event": "form.submitted"}).
		Expect(t, http.StatusCreated).Object(t, "subscription")["id"].(string)
	ids[exWebhookToDelete] = webhook("scheduling.booked")
	ids[exWebhookToRotate] = webhook("scheduling.booked")
	ids[exWebhookLogged] = webhook("form.submitted")
	ids[exReplaySince] = time.Now().Add(-time.Hour).UTC().Format("2006-01-02T15:04:05.000Z")
	svc.API.Post(t, "/api/v1/forms/"+form+"/submissions", key, map[string]any{"values": map[string]any{fields[0]: "logged@example.com"}}).
		Expect(t, http.StatusCreated)
	// The delivery to retry has been sent: a delivery being sent at that moment is a 409.
	deadline := time.Now().Add(10 * time.Second)
	for {
		list := svc.Operator.Get(t, a+"/webhook-deliveries?status=succeeded&webhookId="+ids[exWebhookLogged], "").Expect(t, http.StatusOK).List(t, "deliveries")
		if len(list) == 1 {
			ids[exDelivery] = list[0]["id"].(string)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the form submission was not delivered")
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Every id an example names stands for one of the fixture's, and no two for the same.
	seen := map[string]string{}
	for example, id := range ids {
		if other, dup := seen[id]; dup || id == "" {
			t.Fatalf("examples %s and %s stand for %q", example, other, id)
		}
		seen[id] = example
	}
	if !slices.Contains([]string{"ada@example.com"}, contact.Object(t, "contact")["email"].(string)) {
		t.Fatal("the fixture contact is not the examples' ada@example.com")
	}
	return ids, key
}

// Every operation answers its documented errors: no credentials (401), a key without the scope
// (403), ids that exist nowhere (a 4xx), a malformed body (400) and one over 256 KB (413). The
// client checks each answer against the document as always, so a status an operation does not
// list fails here.
func TestDocumentedErrorsOfEveryOperation(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		formsOnly := svc.NewKey(t, acc.ID, []string{"forms:read"})
		tagsOnly := svc.NewKey(t, acc.ID, []string{"tags:read"})
		huge := `{"name": "` + strings.Repeat("x", httpapi.MaxBodyBytes) + `"}`
		for _, d := range listeners(t, svc) {
			for _, path := range sortedPaths(d.doc) {
				item := d.doc.Paths.Value(path)
				for method, op := range item.Operations() {
					if op.Security != nil && len(*op.Security) == 0 {
						continue // public
					}
					nowhere := strings.NewReplacer("{accountId}", "acc_nowhere").Replace(path)
					nowhere = regexpVariable.ReplaceAllString(nowhere, "nowhere")
					inAccount := regexpVariable.ReplaceAllStringFunc(path, func(v string) string {
						if v == "{accountId}" {
							return acc.ID
						}
						return "nowhere"
					})
					token := ""
					if d.client == svc.API {
						token = acc.Key
					}
					send := func(path, token string, body any) servicetest.Response {
						return d.client.Do(t, servicetest.Request{Method: method, Path: path, Token: token, Body: body})
					}
					var body any
					if op.RequestBody != nil {
						body = map[string]any{}
					}
					send(nowhere, "-", body).ExpectError(t, http.StatusUnauthorized)
					if d.client == svc.API {
						other := formsOnly
						if scopes := (*op.Security)[0]["apiKey"]; slices.Contains(scopes, "forms:read") {
							other = tagsOnly
						}
						send(nowhere, other, body).ExpectError(t, http.StatusForbidden)
					}
					for _, p := range []string{nowhere, inAccount} {
						if p == strings.ReplaceAll(path, "{accountId}", acc.ID) {
							continue // no id to make up
						}
						if res := send(p, token, body); res.Status < 400 || res.Status > 499 {
							t.Errorf("%s %s: %d, want a 4xx for ids that exist nowhere", method, p, res.Status)
						}
					}
					if op.RequestBody != nil {
						send(inAccount, token, "{").ExpectError(t, http.StatusBadRequest)
						send(inAccount, token, huge).ExpectError(t, http.StatusRequestEntityTooLarge)
					}
				}
			}
		}
	})
}

var regexpVariable = regexp.MustCompile(`\{\w+\}`)

// The documents declare Idempotency-Key on every POST and PATCH and on nothing else: the service
// keeps no answer of another method (a retried DELETE of a contact is a 404), so a client
// generated from a document that declared it elsewhere would be promised a replay it never gets.
func TestDocumentsDeclareIdempotencyKeyOnPostAndPatchOnly(t *testing.T) {
	for name, doc := range map[string][]byte{"integration": openapi.Integration(), "operator": openapi.Operator()} {
		spec, err := openapi3.NewLoader().LoadFromData(doc)
		if err != nil {
			t.Fatal(err)
		}
		for path, item := range spec.Paths.Map() {
			for method, op := range item.Operations() {
				declared := op.Parameters.GetByInAndName("header", "Idempotency-Key") != nil
				if want := method == http.MethodPost || method == http.MethodPatch; declared != want {
					t.Errorf("%s: %s %s declares Idempotency-Key: %v, want %v", name, method, path, declared, want)
				}
			}
		}
	}
}
