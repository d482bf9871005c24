package client_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/funnelhq/funnel/client"
	"github.com/funnelhq/funnel/client/moduletest"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
)

func TestMain(m *testing.M) { servicetest.Main(m) }

// newClient is the generated client of svc's integration API with the key (none: ""), every
// answer it gets checked against the OpenAPI document.
func newClient(t *testing.T, svc *servicetest.Service, key string) *client.ClientWithResponses {
	t.Helper()
	opts := []client.ClientOption{client.WithHTTPClient(svc.API.HTTPClient(t)), client.WithHost(service.Defaults().APIHost)}
	if key != "" {
		opts = append(opts, client.WithAPIKey(key))
	}
	c, err := client.NewClientWithResponses(svc.API.URL(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The generated client sends the key, writes, pages through a list, and decodes error bodies.
func TestClientSpeaksTheIntegrationAPI(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		ctx := context.Background()
		acc := svc.NewAccount(t)
		c := newClient(t, svc, acc.Key)

		for _, email := range []string{"ada@example.com", "grace@example.com", "alan@example.com"} {
			first := "First " + email
			res, err := c.UpsertContactWithResponse(ctx, nil, client.UpsertContactRequest{Email: email, FirstName: &first})
			if err != nil || res.JSON200 == nil {
				t.Fatalf("upsert %s: %v %s", email, err, res.Body)
			}
			if string(res.JSON200.Contact.Email) != email || res.JSON200.Contact.FirstName != first || !res.JSON200.Created {
				t.Fatalf("upsert %s answered %+v", email, res.JSON200.Contact)
			}
		}

		// Page through the contacts two at a time: newest first, each once.
		var seen []string
		limit := 2
		params := &client.ListContactsParams{Limit: &limit}
		for page := 0; ; page++ {
			res, err := c.ListContactsWithResponse(ctx, params)
			if err != nil || res.JSON200 == nil {
				t.Fatalf("list: %v %s", err, res.Body)
			}
			for _, ct := range res.JSON200.Contacts {
				seen = append(seen, string(ct.Email))
			}
			if res.JSON200.NextCursor == nil {
				break
			}
			if page > 3 {
				t.Fatal("the list never ends")
			}
			params.Cursor = res.JSON200.NextCursor
		}
		if want := []string{"alan@example.com", "grace@example.com", "ada@example.com"}; !slices.Equal(seen, want) {
			t.Errorf("paged contacts %v, want %v", seen, want)
		}
		email := "GRACE@example.com"
		byEmail, err := c.ListContactsWithResponse(ctx, &client.ListContactsParams{Email: &email})
		if err != nil || byEmail.JSON200 == nil || len(byEmail.JSON200.Contacts) != 1 || byEmail.JSON200.Contacts[0].Email != "grace@example.com" {
			t.Fatalf("by email: %v %s", err, byEmail.Body)
		}

		// Error bodies decode into the status's member.
		missing, err := c.GetContactWithResponse(ctx, "ct_aaaaaaaaaaaaaaaaaaaaaaaaaa")
		if err != nil || missing.StatusCode() != http.StatusNotFound || missing.JSON404 == nil || missing.JSON404.Error == "" {
			t.Fatalf("unknown contact: %v %d %s", err, missing.StatusCode(), missing.Body)
		}
		anonymous, err := newClient(t, svc, "").ListContactsWithResponse(ctx, nil)
		if err != nil || anonymous.JSON401 == nil || anonymous.JSON401.Error == "" {
			t.Fatalf("no key: %v %s", err, anonymous.Body)
		}
		tagsOnly := newClient(t, svc, svc.NewKey(t, acc.ID, []string{"tags:read"}))
		forbidden, err := tagsOnly.ListContactsWithResponse(ctx, nil)
		if err != nil || forbidden.JSON403 == nil || forbidden.JSON403.Error == "" {
			t.Fatalf("key without the scope: %v %s", err, forbidden.Body)
		}
		bad := ""
		invalid, err := c.UpsertContactWithResponse(ctx, nil, client.UpsertContactRequest{Email: bad})
		if err != nil || invalid.JSON400 == nil || invalid.JSON400.Error == "" {
			t.Fatalf("no email: %v %s", err, invalid.Body)
		}
	})
}

// A SaaS signup through the client: the activation is read, completed with the integrator's
// user id, and a second user id is refused with the 409 body decoded.
func TestClientCompletesAnActivation(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		ctx := context.Background()
		acc := svc.NewAccount(t)
		c := newClient(t, svc, acc.Key)
		product := svc.NewProduct(t, acc.ID, map[string]any{"name": "App", "forwarding": "saas_signup", "activationBaseUrl": "https://app.example.com/signup",
			"pricingTiers": []any{map[string]any{"name": "Monthly", "amount": 900, "currency": "EUR", "interval": "month"}}})
		bought := svc.Operator.Post(t, "/admin/v1/accounts/"+acc.ID+"/checkout/purchases", "", map[string]any{
			"productId": product.ID, "pricingTierId": product.TierIDs[0], "email": "linus@example.com"}).Expect(t, http.StatusCreated)
		token := bought.Object(t, "activation")["token"].(string)

		read, err := c.GetActivationWithResponse(ctx, token)
		if err != nil || read.JSON200 == nil {
			t.Fatalf("get activation: %v %s", err, read.Body)
		}
		if a := read.JSON200.Activation; a.Status != client.ActivationStatusPending || a.Email != "linus@example.com" || a.Product.Id != product.ID || a.ExternalUserId != nil {
			t.Fatalf("activation %+v", a)
		}
		user := "user_42"
		done, err := c.CompleteActivationWithResponse(ctx, token, nil, client.CompleteActivationRequest{ExternalUserId: &user})
		if err != nil || done.JSON200 == nil {
			t.Fatalf("complete: %v %s", err, done.Body)
		}
		if a := done.JSON200.Activation; a.Status != client.ActivationStatusCompleted || a.ExternalUserId == nil || *a.ExternalUserId != user || a.CompletedAt == nil {
			t.Fatalf("completed activation %+v", a)
		}
		other := "user_43"
		conflict, err := c.CompleteActivationWithResponse(ctx, token, nil, client.CompleteActivationRequest{ExternalUserId: &other})
		if err != nil || conflict.JSON409 == nil || conflict.JSON409.Error == "" {
			t.Fatalf("complete with another user: %v %d %s", err, conflict.StatusCode(), conflict.Body)
		}

		// The webhook types decode what the service sends: the sample of the purchase above.
		samples, err := c.ListSampleEventsWithResponse(ctx, client.EventNameOrAlias("checkout.purchased"))
		if err != nil || samples.JSON200 == nil || len(samples.JSON200.Events) != 1 {
			t.Fatalf("samples: %v %s", err, samples.Body)
		}
		event, err := samples.JSON200.Events[0].ValueByDiscriminator()
		if err != nil {
			t.Fatal(err)
		}
		purchased, ok := event.(client.CheckoutPurchasedEvent)
		if !ok {
			t.Fatalf("the sample decoded as %T", event)
		}
		if d := purchased.Data; d.Customer.Email != "linus@example.com" || d.Product.Id != product.ID || d.Activation == nil || d.Activation.Token != "[redacted]" {
			t.Fatalf("sample data %+v", d)
		}
	})
}

// client.gen.go is what the pinned generator (go.mod's tool directive) makes of the integration
// document today: regenerating changes nothing.
func TestGeneratedClientIsUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the generator")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	// The go:generate line of doc.go, writing to stdout instead of client.gen.go.
	cmd := exec.Command(goTool, "tool", "oapi-codegen", "-config", "oapi-codegen.yaml", "../api/openapi/integration.json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	generated, err := cmd.Output()
	if err != nil {
		t.Fatalf("go tool oapi-codegen: %v\n%s", err, stderr.Bytes())
	}
	checkedIn, err := os.ReadFile("client.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(generated, checkedIn) {
		t.Error("client.gen.go is not what oapi-codegen makes of api/openapi/integration.json: run `make generate`")
	}
}

// An integrator's own module imports the client: a throwaway module outside the tree requires
// this module, builds a program that makes a client and decodes a webhook body with it, and runs
// it.
func TestAnotherModuleImportsTheClient(t *testing.T) {
	if out := moduletest.Run(t, "..", `package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/funnelhq/funnel/client"
)

func main() {
	if _, err := client.NewClientWithResponses("https://api.example.com", client.WithAPIKey("fnl_x")); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	var event client.WebhookEvent
	body := []byte(`+"`"+`{"id":"0190a0b2-7c4e-7d2a-9f1e-3b5c6d7e8f90","type":"checkout.subscription_cancelled","createdAt":"2026-11-23T10:15:30.123Z",`+
		`"data":{"subscription":{"id":"sub_1","status":"cancelled","processor":"stripe","cancelledAt":"2026-11-23T10:15:30.123Z"}}}`+"`"+`)
	if err := json.Unmarshal(body, &event); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	typed, err := event.ValueByDiscriminator()
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println(typed.(client.CheckoutSubscriptionCancelledEvent).Data.Subscription.Id)
}
`); out != "sub_1\n" {
		t.Fatalf("the program printed %q, want sub_1", out)
	}
}
