package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/funnelhq/funnel/api/httpapi/limits"
	"github.com/funnelhq/funnel/api/integration"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/ratelimit/redistest"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// BenchmarkUpsertContact measures POST /api/v1/contacts end to end (HTTP on loopback, a new email
// and two tagNames, read-your-writes included) with 8 concurrent clients, in both storage modes,
// and with the rate limits off, kept in memory, and kept in Redis, side by side: what deciding
// costs. The limits are raised out of reach (the same rules and windows, but a billion requests
// each) so that every upsert is decided and none refused. Each is run again with a fresh
// Idempotency-Key on every upsert (/idempotency-key): what the key costs. It reports upserts/s,
// the p99 latency and, on SQLite, the bytes written to disk per upsert (diskWrites).
func BenchmarkUpsertContact(b *testing.B) {
	for _, dialect := range sqldbtest.Dialects {
		for _, limits := range []string{"off", "memory", "redis"} {
			for _, withKey := range []bool{false, true} {
				name := string(dialect) + "/limits=" + limits
				if withKey {
					name += "/idempotency-key"
				}
				b.Run(name, func(b *testing.B) {
					benchmarkUpserts(b, servicetest.Start(b, dialect, rateLimitsOf(b, limits)), limits != "off", withKey)
				})
			}
		}
	}
}

// BenchmarkSubmitForm measures POST /api/v1/forms/{id}/submissions end to end with 8 concurrent
// clients and the rate limits off: each submission a new email with a name and a free-text
// answer, so that it creates a contact and records the submission (two events sealed under a
// new person's key), in both storage modes. It reports submissions/s and the p99 latency.
func BenchmarkSubmitForm(b *testing.B) {
	for _, dialect := range sqldbtest.Dialects {
		b.Run(string(dialect), func(b *testing.B) {
			svc := servicetest.Start(b, dialect, rateLimitsOf(b, "off"))
			acc := svc.NewAccount(b)
			formID, fields := svc.NewForm(b, acc.ID, "Signup", nil,
				servicetest.Field{"label": "Email", "type": "email", "contactField": "builtin:email", "required": true},
				servicetest.Field{"label": "First name", "type": "text", "contactField": "builtin:firstName"},
				servicetest.Field{"label": "What brings you here?", "type": "text"})
			var n atomic.Int64
			latencies := eightClients(b, func() error {
				i := n.Add(1)
				body := map[string]any{"values": map[string]any{fields[0]: fmt.Sprintf("form-%d@example.com", i), fields[1]: "Bench", fields[2]: "A friend told me"}}
				if res := svc.API.Post(b, "/api/v1/forms/"+formID+"/submissions", acc.Key, body); res.Status != http.StatusCreated {
					return fmt.Errorf("submission: %d %s", res.Status, res.Raw)
				}
				return nil
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "submissions/s")
			b.ReportMetric(float64(percentile(latencies, 0.99).Microseconds())/1000, "p99-ms")
		})
	}
}

// rateLimitsOf configures a benchmark's service with the rate limits off, in memory or in Redis,
// raised out of reach.
func rateLimitsOf(b *testing.B, store string) func(*service.Config) {
	if store == "off" {
		return func(c *service.Config) { c.RateLimits = false }
	}
	var redisURL, prefix string
	if store == "redis" {
		redisURL, prefix = redistest.URL(b), redistest.Prefix(b)
	}
	unreachable := integration.Section8()
	for _, rule := range []*limits.Rule{&unreachable.PerAddress, &unreachable.FailedAuth, &unreachable.Reads, &unreachable.Writes, &unreachable.ContactWrites} {
		rule.Max = 1 << 30
	}
	return func(c *service.Config) {
		c.RateLimits = true
		c.RateLimitRules = &unreachable
		c.RedisURL, c.RedisKeyPrefix = redisURL, prefix
	}
}

func benchmarkUpserts(b *testing.B, svc *servicetest.Service, limited, withKey bool) {
	acc := svc.NewAccount(b)
	svc.NewTag(b, acc.ID, "Lead")
	svc.NewTag(b, acc.ID, "Newsletter")
	first := svc.API.Post(b, "/api/v1/contacts", acc.Key, map[string]any{"email": "bench@example.com"}).Expect(b, http.StatusOK)
	if decided := first.Header.Get("RateLimit-Limit") != ""; decided != limited {
		b.Fatalf("RateLimit headers %v with the limits on %v", decided, limited)
	}
	var n atomic.Int64
	written := startDiskWrites(svc)
	latencies := eightClients(b, func() error {
		i := n.Add(1)
		req := servicetest.Request{Method: http.MethodPost, Path: "/api/v1/contacts", Token: acc.Key,
			Body: map[string]any{"email": fmt.Sprintf("bench-%d@example.com", i), "firstName": "Bench", "tagNames": []string{"Lead", "Newsletter"}}}
		if withKey {
			req.Headers = map[string]string{"Idempotency-Key": fmt.Sprintf("bench-%d", i)}
		}
		if res := svc.API.Do(b, req); res.Status != http.StatusOK {
			return fmt.Errorf("upsert: %d %s", res.Status, res.Raw)
		}
		return nil
	})
	written.report(b, "disk-B/upsert")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "upserts/s")
	b.ReportMetric(float64(percentile(latencies, 0.99).Microseconds())/1000, "p99-ms")
}

// eightClients calls do b.N times in all from 8 concurrent clients, timing each call, and returns
// the latencies; the first error a client meets fails the benchmark and stops that client.
func eightClients(b *testing.B, do func() error) []time.Duration {
	var mu sync.Mutex
	var latencies []time.Duration
	b.SetParallelism(4) // 4 × GOMAXPROCS (2) = 8 clients
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			start := time.Now()
			err := do()
			mine = append(mine, time.Since(start))
			if err != nil {
				b.Error(err)
				break
			}
		}
		mu.Lock()
		latencies = append(latencies, mine...)
		mu.Unlock()
	})
	b.StopTimer()
	return latencies
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

// BenchmarkTagLongContact measures POST /api/v1/contacts/{id}/tags end to end (HTTP on loopback,
// one client, read-your-writes included) on a contact whose stream holds 10 or 6,000 events, in
// both storage modes: adding and removing one tag in turn, so each write appends one event. The
// contact is replaced by a fresh one of the same length, outside the timer, whenever the writes
// have grown its stream by a tenth; an untimed write then lets the read models catch up with
// the events appended straight to the log.
func BenchmarkTagLongContact(b *testing.B) {
	for _, dialect := range sqldbtest.Dialects {
		b.Run(string(dialect), func(b *testing.B) {
			svc := servicetest.Start(b, dialect, func(c *service.Config) { c.RateLimits = false })
			acc := svc.NewAccount(b)
			tag := svc.NewTag(b, acc.ID, "Toggled")
			contacts := 0
			for _, events := range []int{10, 6000} {
				b.Run(fmt.Sprintf("events=%d", events), func(b *testing.B) {
					growth := max(2, events/10)
					written := growth
					var path string
					b.ResetTimer()
					for i := range b.N {
						if written >= growth {
							b.StopTimer()
							contacts++
							path = "/api/v1/contacts/" + longContact(b, svc, acc, tag, fmt.Sprintf("long-%d@example.com", contacts), events-1) + "/tags"
							svc.API.Post(b, path, acc.Key, map[string]any{"tagIds": []string{tag}, "action": "remove"}).Expect(b, http.StatusOK)
							written = 0
							b.StartTimer()
						}
						action := []string{"add", "remove"}[i%2]
						svc.API.Post(b, path, acc.Key, map[string]any{"tagIds": []string{tag}, "action": action}).Expect(b, http.StatusOK)
						written++
					}
				})
			}
		})
	}
}

// longContact creates a contact through the API and appends events-1 more of its events (the
// tag applied and removed in turn) straight to the log.
func longContact(b *testing.B, svc *servicetest.Service, acc servicetest.Account, tag, email string, events int) string {
	b.Helper()
	id := svc.API.Post(b, "/api/v1/contacts", acc.Key, map[string]any{"email": email}).Expect(b, http.StatusOK).Object(b, "contact")["id"].(string)
	var batch []domain.Event
	for i := 1; i < events; i++ {
		if i%2 == 1 {
			batch = append(batch, domain.TagApplied{ContactID: id, TagID: tag, TagName: "Toggled"})
		} else {
			batch = append(batch, domain.TagRemoved{ContactID: id, TagID: tag, TagName: "Toggled"})
		}
	}
	if len(batch) > 0 {
		if _, err := svc.App.Store().Append(context.Background(), domain.Metadata{AccountID: acc.ID, Actor: "operator"},
			domain.StreamAppend{StreamID: id, ExpectedVersion: 1, Events: batch}); err != nil {
			b.Fatal(err)
		}
	}
	return id
}
