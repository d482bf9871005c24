package api_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/service/servicetest"
)

// An operator endpoint whose members are all optional (an API key, a rebill, a refund) takes a
// request with no body as {}, sent with a length of 0 or chunked, as a processor's callback or a
// curl without -d sends it (docs/operator-api.md). A body that is there must still be one JSON
// object, and an endpoint with a required member still refuses none.
func TestAnOperatorBodyOfOptionalMembersMayBeLeftOut(t *testing.T) {
	servicetest.Run(t, func(t *testing.T, svc *servicetest.Service) {
		acc := svc.NewAccount(t)
		noBody := func(path string) servicetest.Response {
			return svc.Operator.Do(t, servicetest.Request{Method: http.MethodPost, Path: path})
		}
		chunkedEmpty := func(path string) servicetest.Response {
			return svc.Operator.Do(t, servicetest.Request{Method: http.MethodPost, Path: path, Body: io.MultiReader(strings.NewReader(""))})
		}

		key := noBody("/admin/v1/accounts/"+acc.ID+"/api-keys").Expect(t, http.StatusCreated).Object(t, "apiKey")
		if len(servicetest.Strings(t, key["scopes"])) != len(domain.AllScopes) || key["key"] == nil {
			t.Fatalf("key issued without a body = %v", key)
		}

		pro := svc.NewProduct(t, acc.ID, proPlan())
		bought := buy(t, svc, acc.ID, map[string]any{"productId": pro.ID, "pricingTierId": pro.TierIDs[1], "email": "ada@example.com"})
		subID := bought.Object(t, "subscription")["id"].(string)
		rebilled := noBody(checkoutPath(acc.ID, "subscriptions/"+subID+"/rebill")).Expect(t, http.StatusCreated)
		if got := rebilled.Object(t, "subscription"); got["payments"] != float64(2) {
			t.Fatalf("subscription after a rebill without a body = %v", got)
		}
		txnID := rebilled.Object(t, "transaction")["id"].(string)
		refunded := chunkedEmpty(checkoutPath(acc.ID, "transactions/"+txnID+"/refund")).Expect(t, http.StatusOK)
		if txn, r := refunded.Object(t, "transaction"), refunded.Object(t, "refund"); txn["status"] != "refunded" || r["fullyRefunded"] != true {
			t.Fatalf("refund without a body = %v", refunded.Body)
		}

		// A body that is there is one JSON object, or refused, and records nothing.
		first := bought.Object(t, "transaction")["id"].(string)
		for _, body := range []string{"null", "[]", "x", `"{}"`} {
			res := svc.Operator.Do(t, servicetest.Request{Method: http.MethodPost, Path: checkoutPath(acc.ID, "transactions/"+first+"/refund"), Body: body})
			res.ExpectError(t, http.StatusBadRequest)
			if res.Body["code"] != "invalid_json" {
				t.Fatalf("refund with body %s: %s", body, res.Raw)
			}
		}
		partial := svc.Operator.Post(t, checkoutPath(acc.ID, "transactions/"+first+"/refund"), "", map[string]any{"amountCents": 100}).Expect(t, http.StatusOK)
		if got := partial.Object(t, "transaction"); got["refundedAmount"] != float64(100) {
			t.Fatalf("a refund after the refused ones = %v", got)
		}
		// atPeriodEnd is required: no body is not {} there.
		noBody(checkoutPath(acc.ID, "subscriptions/"+subID+"/cancel")).ExpectError(t, http.StatusBadRequest)
	})
}
