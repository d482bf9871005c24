package webhooks_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/service/servicetest"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
	"github.com/funnelhq/funnel/webhooks/verify"
)

// BenchmarkReplay measures a replay of 10,000 events (POST
// /api/v1/webhooks/subscriptions/{id}/replay) to a receiver on loopback, in both storage modes:
// the payments of 1,000 monthly plans (a purchase and 9 rebills each), recorded before the
// subscription existed. The receiver checks every request's two signatures and that each billing
// subscription's payments arrive once each, in the order they were made. It reports events/s
// from the request to the last receipt, how long the request itself took (accept-ms: it records
// every delivery, 500 events a transaction, before answering), how the service's other writes
// fare meanwhile (a contact of another account upserted back to back while the request runs:
// slowest-write-ms, writes/s), and the memory of the whole process while the replay runs
// (service, receiver and all), sampled every 5 ms: the peak heap in use (HeapInuse: live objects
// and the garbage not yet collected), the peak live heap (what the last collection found
// reachable: what the replay holds), and the peak RSS (VmHWM, reset before the replay; Linux
// only). Both must stay flat as the replay grows: run with FUNNEL_BENCH_REPLAY_EVENTS to compare
// (the default fits `make bench`'s timeout; issue 24 asks for 100,000).
func BenchmarkReplay(b *testing.B) {
	events := benchCount(b, "FUNNEL_BENCH_REPLAY_EVENTS", 10_000, 10)
	for _, d := range sqldbtest.Dialects {
		b.Run(string(d), func(b *testing.B) {
			svc := servicetest.Start(b, d, func(c *service.Config) { c.RateLimits = false })
			acc := svc.NewAccount(b)
			log := billingLog{accountID: acc.ID, subs: max(1, events/10), payments: 10}
			since := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
			log.append(b, svc)
			rcv := newReplayReceiver(b, log.payments)
			hook, secret := subscribeB(b, svc, acc.ID, map[string]any{"url": rcv.URL, "events": []string{"checkout.purchased", "checkout.rebilled"}})
			rcv.secret.Store(&secret)

			other := svc.NewAccount(b) // whose contacts are written while the replay is recorded
			var accept, took, slowest time.Duration
			var writes int
			var heap, live, rss uint64
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				peak := watchMemory()
				stopWrites := writeWhile(b, svc, other.ID)
				b.StartTimer()
				start := time.Now()
				res := svc.API.Post(b, "/api/v1/webhooks/subscriptions/"+hook+"/replay", acc.Key, map[string]any{"since": since}).
					Expect(b, http.StatusAccepted).Object(b, "replay")
				accept += time.Since(start)
				b.StopTimer()
				n, longest := stopWrites()
				writes, slowest = writes+n, max(slowest, longest)
				b.StartTimer()
				if res["count"] != float64(log.events()) {
					b.Fatalf("replay = %v, want %d deliveries", res, log.events())
				}
				rcv.waitFor(b, int64((i+1)*log.events()), 30*time.Minute)
				took += time.Since(start)
				b.StopTimer()
				h, l, r := peak()
				heap, live, rss = max(heap, h), max(live, l), max(rss, r)
				b.StartTimer()
			}
			b.StopTimer()
			rcv.check(b)
			b.ReportMetric(float64(b.N*log.events())/took.Seconds(), "events/s")
			b.ReportMetric(float64(accept.Milliseconds())/float64(b.N), "accept-ms")
			b.ReportMetric(float64(slowest.Microseconds())/1000, "slowest-write-ms")
			b.ReportMetric(float64(writes)/accept.Seconds(), "writes/s")
			b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(live)/(1<<20), "peak-live-heap-MiB")
			if rss > 0 {
				b.ReportMetric(float64(rss)/(1<<20), "peak-rss-MiB")
			}
		})
	}
}

// writeWhile upserts contacts of an account back to back, one at a time, until the function it
// returns is called; that returns how many it wrote and the slowest (a write still waiting then
// counts with how long it waited).
func writeWhile(b *testing.B, svc *servicetest.Service, accountID string) func() (int, time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var n int
	var slowest time.Duration
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			start := time.Now()
			_, err := svc.App.Commands().UpsertContact.Handle(ctx, commands.UpsertContact{Meta: commands.Meta{AccountID: accountID},
				Email: fmt.Sprintf("meanwhile%d@example.com", n)})
			if ctx.Err() != nil { // still waiting when the replay answered: that long at least
				slowest = max(slowest, time.Since(start))
				return
			}
			if err != nil {
				b.Error(err)
				return
			}
			n, slowest = n+1, max(slowest, time.Since(start))
		}
	}()
	return func() (int, time.Duration) {
		cancel()
		<-done
		return n, slowest
	}
}

// subscribeB creates a custom webhook through the operator API and returns its id and secret.
func subscribeB(b *testing.B, svc *servicetest.Service, accountID string, body map[string]any) (string, string) {
	b.Helper()
	hook := svc.Operator.Post(b, "/admin/v1/accounts/"+accountID+"/webhooks", "", body).Expect(b, http.StatusCreated).Object(b, "webhook")
	return hook["id"].(string), hook["secret"].(string)
}

// replayReceiver is a receiver on loopback for the payments of a billingLog: it checks each
// request's signatures (X-Service-Signature and the Standard Webhooks headers) and that each
// billing subscription's payments come in order, 0 to payments-1 and again for the next replay,
// and counts them. It keeps one small entry per billing subscription, not one per request: its
// memory is not the replay's.
type replayReceiver struct {
	*httptest.Server
	secret   atomic.Pointer[string]
	payments int
	n        atomic.Int64
	mu       sync.Mutex
	next     map[string]int // billing subscription: the rank of the payment it expects next
	failed   []string       // what went wrong, the first few
}

func newReplayReceiver(b *testing.B, payments int) *replayReceiver {
	r := &replayReceiver{payments: payments, next: map[string]int{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if problem := r.receive(req.Header, body); problem != "" {
			r.mu.Lock()
			if len(r.failed) < 5 {
				r.failed = append(r.failed, problem)
			}
			r.mu.Unlock()
		}
		r.n.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(r.Close)
	return r
}

// receive checks one request and returns what is wrong with it ("" nothing).
func (r *replayReceiver) receive(h http.Header, body []byte) string {
	secret := r.secret.Load()
	if secret == nil {
		return "a request before the subscription existed"
	}
	if err := verify.Service(*secret, body, h.Get("X-Service-Signature")); err != nil {
		return "X-Service-Signature: " + err.Error()
	}
	if err := verify.Standard(*secret, h, body, 5*time.Minute, time.Now()); err != nil {
		return "webhook-signature: " + err.Error()
	}
	var env struct {
		ID   string `json:"id"`
		Data struct {
			Transaction struct {
				ID             string `json:"id"`
				SubscriptionID string `json:"subscriptionId"`
			} `json:"transaction"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil || uuid.Validate(env.ID) != nil || h.Get("webhook-id") != h.Get("X-Service-Delivery") {
		return fmt.Sprintf("envelope id %q, delivery %q and %q: %v", env.ID, h.Get("webhook-id"), h.Get("X-Service-Delivery"), err)
	}
	sub, k, ok := paymentOrder(env.Data.Transaction.ID)
	if !ok || sub != env.Data.Transaction.SubscriptionID {
		return fmt.Sprintf("transaction %q of %q", env.Data.Transaction.ID, env.Data.Transaction.SubscriptionID)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if want := r.next[sub]; k != want {
		return fmt.Sprintf("%s: payment %d, want %d", sub, k, want)
	}
	r.next[sub] = (k + 1) % r.payments
	return ""
}

// waitFor waits until the receiver got n requests in all.
func (r *replayReceiver) waitFor(b *testing.B, n int64, within time.Duration) {
	b.Helper()
	deadline := time.Now().Add(within)
	for r.n.Load() < n {
		if time.Now().After(deadline) {
			b.Fatalf("receiver got %d of %d deliveries", r.n.Load(), n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// check fails the benchmark if any request was wrong, or if a billing subscription's payments
// did not all arrive.
func (r *replayReceiver) check(b *testing.B) {
	b.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.failed) > 0 {
		b.Fatalf("receiver: %s", strings.Join(r.failed, "; "))
	}
	for sub, next := range r.next {
		if next != 0 {
			b.Fatalf("%s: %d payments of the last replay arrived, want %d", sub, next, r.payments)
		}
	}
}

// watchMemory samples the heap every 5 ms until the returned function is called, which returns
// the highest heap in use, the highest live heap, and the peak RSS of the process since the call
// (0 where /proc cannot tell it).
func watchMemory() func() (heap, live, rss uint64) {
	runtime.GC() // what the setup left behind is not the replay's
	// Writing 5 to clear_refs resets VmHWM to the current RSS (Linux).
	resetRSS := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	var peak, peakLive atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		var m runtime.MemStats
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			runtime.ReadMemStats(&m)
			metrics.Read(live)
			peak.Store(max(peak.Load(), m.HeapInuse))
			peakLive.Store(max(peakLive.Load(), live[0].Value.Uint64()))
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return func() (uint64, uint64, uint64) {
		close(stop)
		<-done
		if !resetRSS {
			return peak.Load(), peakLive.Load(), 0
		}
		return peak.Load(), peakLive.Load(), peakRSS()
	}
}

// peakRSS is VmHWM of /proc/self/status in bytes, 0 if it cannot be read.
func peakRSS() uint64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	s := bufio.NewScanner(bytes.NewReader(status))
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
