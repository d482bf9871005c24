package webhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// sink is a receiver that only notes when the webhook of each submission (or transaction) arrived.
type sink struct {
	*httptest.Server
	mu      sync.Mutex
	arrived map[string]time.Time
	n       atomic.Int64
}

func newSink(b *testing.B) *sink {
	s := &sink{arrived: map[string]time.Time{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var env struct {
			Data struct {
				SubmissionID string `json:"submissionId"`
				Transaction  struct {
					ID string `json:"id"`
				} `json:"transaction"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &env)
		id := env.Data.SubmissionID + env.Data.Transaction.ID
		s.mu.Lock()
		if _, dup := s.arrived[id]; !dup {
			s.arrived[id] = time.Now()
			s.n.Add(1)
		}
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(s.Close)
	return s
}

func (s *sink) waitFor(b *testing.B, n int64, within time.Duration) {
	deadline := time.Now().Add(within)
	for s.n.Load() < n {
		if time.Now().After(deadline) {
			b.Fatalf("sink got %d of %d deliveries", s.n.Load(), n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func submission(accountID, formID string, i int) domain.StreamAppend {
	id := domain.NewID("sub")
	return domain.StreamAppend{StreamID: id, Events: []domain.Event{domain.FormSubmitted{
		SubmissionID: id, FormID: formID, FormName: "Bench", AccountID: accountID, ContactID: "ct_b", SubmittedAt: time.Now().UTC(),
		Fields:  []domain.SubmittedField{{Field: domain.Field{ID: "fld_email", Label: "Email", Type: "email", ContactField: domain.ContactFieldEmail}, Value: fmt.Sprintf("b%d@example.com", i)}},
		Contact: &domain.ContactSnapshot{ContactID: "ct_b", Email: fmt.Sprintf("b%d@example.com", i), CustomFields: map[string]string{}, CustomFieldsLabeled: []domain.LabeledValue{}},
	}}}
}

// BenchmarkDeliveryBurst appends a burst of 10,000 form submissions with one subscribed webhook
// and measures how fast the deliveries reach a receiver on loopback.
func BenchmarkDeliveryBurst(b *testing.B) {
	for _, d := range sqldbtest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			const burst = 10000
			svc := servicetest.Start(b, d, func(c *service.Config) { c.RateLimits = false })
			acc := svc.NewAccount(b)
			form := newFormB(b, svc, acc.ID)
			rcv := newSink(b)
			svc.Operator.Post(b, "/admin/v1/accounts/"+acc.ID+"/webhooks", "", map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}}).Expect(b, http.StatusCreated)
			ctx := context.Background()
			meta := domain.Metadata{AccountID: acc.ID, Actor: "bench"}
			b.ResetTimer()
			for iter := 0; iter < b.N; iter++ {
				base := rcv.n.Load()
				start := time.Now()
				for i := 0; i < burst; i += 100 {
					appends := make([]domain.StreamAppend, 100)
					for j := range appends {
						appends[j] = submission(acc.ID, form, i+j)
					}
					if _, err := svc.App.Store().Append(ctx, meta, appends...); err != nil {
						b.Fatal(err)
					}
				}
				rcv.waitFor(b, base+burst, 5*time.Minute)
				b.ReportMetric(burst/time.Since(start).Seconds(), "deliveries/s")
			}
		})
	}
}

// BenchmarkDeliveryLatency appends form submissions at 500 per second and measures the time from
// each append to its receipt by the receiver.
func BenchmarkDeliveryLatency(b *testing.B) {
	for _, d := range sqldbtest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			svc := servicetest.Start(b, d, func(c *service.Config) { c.RateLimits = false })
			acc := svc.NewAccount(b)
			form := newFormB(b, svc, acc.ID)
			rcv := newSink(b)
			svc.Operator.Post(b, "/admin/v1/accounts/"+acc.ID+"/webhooks", "", map[string]any{"url": rcv.URL, "events": []string{"form.submitted"}}).Expect(b, http.StatusCreated)
			ctx := context.Background()
			meta := domain.Metadata{AccountID: acc.ID, Actor: "bench"}
			n := max(b.N, 1500) // at least three seconds at the rate
			appended := make(map[string]time.Time, n)
			var mu sync.Mutex
			var wg sync.WaitGroup
			ticker := time.NewTicker(2 * time.Millisecond)
			defer ticker.Stop()
			b.ResetTimer()
			for i := 0; i < n; i++ {
				<-ticker.C
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					a := submission(acc.ID, form, i)
					at := time.Now()
					if _, err := svc.App.Store().Append(ctx, meta, a); err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					appended[a.StreamID] = at // the stream id is the submission id
					mu.Unlock()
				}(i)
			}
			wg.Wait()
			rcv.waitFor(b, int64(n), time.Minute)
			b.StopTimer()
			var lat []time.Duration
			rcv.mu.Lock()
			for id, at := range appended {
				lat = append(lat, rcv.arrived[id].Sub(at))
			}
			rcv.mu.Unlock()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(lat[len(lat)*90/100].Microseconds())/1000, "p90-ms")
			b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
		})
	}
}

// BenchmarkPurchaseDelivered measures a purchase end to end with 8 concurrent clients: the
// operator purchase (contact and customer upserted, transaction, subscription and activation
// recorded, read models awaited) until its checkout.purchased webhook reaches a receiver on
// loopback. It reports purchases/s and the latency from request to receipt.
func BenchmarkPurchaseDelivered(b *testing.B) {
	for _, d := range sqldbtest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			svc := servicetest.Start(b, d, func(c *service.Config) { c.RateLimits = false })
			acc := svc.NewAccount(b)
			product := svc.NewProduct(b, acc.ID, map[string]any{
				"name": "Pro", "forwarding": "saas_signup", "activationBaseUrl": "https://app.example.com/signup",
				"pricingTiers": []any{map[string]any{"name": "Monthly", "amount": 4900, "currency": "USD", "interval": "month"}},
			})
			rcv := newSink(b)
			svc.Operator.Post(b, "/admin/v1/accounts/"+acc.ID+"/webhooks", "", map[string]any{"url": rcv.URL, "events": []string{"checkout.purchased"}}).Expect(b, http.StatusCreated)
			var n atomic.Int64
			var mu sync.Mutex
			requested := map[string]time.Time{}
			b.SetParallelism(4) // 4 × GOMAXPROCS (2) = 8 clients
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					body := map[string]any{"productId": product.ID, "pricingTierId": product.TierIDs[0], "email": fmt.Sprintf("buyer-%d@example.com", n.Add(1))}
					at := time.Now()
					res := svc.Operator.Post(b, "/admin/v1/accounts/"+acc.ID+"/checkout/purchases", "", body)
					if res.Status != http.StatusCreated {
						b.Errorf("purchase: %d %s", res.Status, res.Raw)
						return
					}
					mu.Lock()
					requested[res.Object(b, "transaction")["id"].(string)] = at
					mu.Unlock()
				}
			})
			rcv.waitFor(b, int64(b.N), time.Minute)
			b.StopTimer()
			elapsed := time.Since(start)
			var lat []time.Duration
			rcv.mu.Lock()
			for id, at := range requested {
				lat = append(lat, rcv.arrived[id].Sub(at))
			}
			rcv.mu.Unlock()
			slices.Sort(lat)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "purchases/s")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

func newFormB(b *testing.B, svc *servicetest.Service, accountID string) string {
	id := domain.NewID("form")
	ctx := context.Background()
	pos, err := svc.App.Store().Append(ctx, domain.Metadata{AccountID: accountID, Actor: "bench"}, domain.StreamAppend{StreamID: id, Events: []domain.Event{domain.FormCreated{
		FormID: id, AccountID: accountID, Name: "Bench", TagIDs: []string{}, Fields: []domain.Field{{ID: "fld_email", Label: "Email", Type: "email", ContactField: domain.ContactFieldEmail}},
	}}})
	if err != nil {
		b.Fatal(err)
	}
	if err := svc.App.ReadModels().WaitReadModels(ctx, pos); err != nil {
		b.Fatal(err)
	}
	return id
}
