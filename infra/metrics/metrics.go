// Package metrics exposes the service's Prometheus metrics. Metrics implements the observer
// interfaces of the commands, the event store, the pipeline and the API, so that none of them
// imports Prometheus.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds every collector, registered on a registry of its own (so that tests can start
// many services in one process).
type Metrics struct {
	registry *prometheus.Registry

	requests           *prometheus.CounterVec
	requestDuration    *prometheus.HistogramVec
	commands           *prometheus.CounterVec
	commandDuration    *prometheus.HistogramVec
	appendedEvents     prometheus.Counter
	appendBatch        prometheus.Histogram
	appendCommit       prometheus.Histogram
	projectionPos      *prometheus.GaugeVec
	projectionLag      *prometheus.HistogramVec
	relayPosition      prometheus.Gauge
	deliveries         *prometheus.CounterVec
	attemptDuration    prometheus.Histogram
	timerLooks         prometheus.Counter
	redisDown          prometheus.Gauge
	slowAccounts       prometheus.Gauge
	localDecisions     prometheus.Counter
	projectionBatches  *prometheus.CounterVec
	projectionOverlaps *prometheus.CounterVec
	leasesHeld         prometheus.Gauge
	leaseHeld          *prometheus.GaugeVec
	takeovers          *prometheus.CounterVec
}

// New registers every collector.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := func(c prometheus.Collector) { reg.MustRegister(c) }
	m := &Metrics{registry: reg}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "funnel_http_requests_total", Help: "HTTP requests by listener, route, method and status."}, []string{"listener", "route", "method", "status"})
	m.requestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "funnel_http_request_duration_seconds", Help: "HTTP request latency.", Buckets: latencyBuckets}, []string{"listener", "route", "method"})
	m.commands = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "funnel_commands_total", Help: "Commands handled, by outcome (ok or error)."}, []string{"command", "outcome"})
	m.commandDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "funnel_command_duration_seconds", Help: "Command latency, load to append.", Buckets: latencyBuckets}, []string{"command"})
	m.appendedEvents = prometheus.NewCounter(prometheus.CounterOpts{Name: "funnel_events_appended_total", Help: "Events appended to the log."})
	m.appendBatch = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "funnel_append_batch_size", Help: "Appends committed together in one transaction (group commit).", Buckets: prometheus.ExponentialBuckets(1, 2, 9)})
	m.appendCommit = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "funnel_append_commit_seconds", Help: "Duration of one group-commit transaction.", Buckets: latencyBuckets})
	m.projectionPos = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "funnel_projection_position", Help: "Last log position each projection applied."}, []string{"projection"})
	m.projectionLag = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "funnel_projection_lag_seconds", Help: "Time from an event's append to its projection.", Buckets: lagBuckets}, []string{"projection"})
	m.relayPosition = prometheus.NewGauge(prometheus.GaugeOpts{Name: "funnel_relay_position", Help: "Last log position the relay published."})
	m.deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "funnel_webhook_deliveries_total", Help: "Webhook delivery attempts by outcome: succeeded, retrying, failed, gone; given_up counts deliveries dropped unsent because their webhook ended; not_opened those that failed unsent because a secret they carry could not be opened with the configured keys (FUNNEL_SECRET_KEY)."}, []string{"outcome"})
	m.attemptDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "funnel_webhook_attempt_duration_seconds", Help: "Time from sending a webhook to its answer.", Buckets: latencyBuckets})
	m.redisDown = prometheus.NewGauge(prometheus.GaugeOpts{Name: "funnel_rate_limit_redis_unreachable", Help: "1 while Redis (FUNNEL_REDIS_URL) does not answer and each process enforces the rate limits alone; 0 otherwise."})
	m.slowAccounts = prometheus.NewGauge(prometheus.GaugeOpts{Name: "funnel_webhook_slow_accounts", Help: "Accounts whose webhook receivers this process found slow (a send waited 2 s) in the last minute: each sends a quarter of the slots at most (docs/webhooks.md, Slow receivers)."})
	m.localDecisions = prometheus.NewCounter(prometheus.CounterOpts{Name: "funnel_rate_limit_local_decisions_total", Help: "Rate-limit decisions taken in this process's memory because Redis did not answer."})
	m.timerLooks = prometheus.NewCounter(prometheus.CounterOpts{Name: "funnel_subscription_timer_looks_total", Help: "Looks of the cancel-at-period-end timer loop at its pending timers (it looks at least once a second while it runs)."})
	m.leasesHeld = prometheus.NewGauge(prometheus.GaugeOpts{Name: "funnel_cluster_leases_held", Help: "Leases this process holds and runs now: projections, the webhook projector, the timers and the other loops that run on one process at a time (GET /admin/v1/cluster)."})
	m.leaseHeld = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "funnel_cluster_lease_held", Help: "1 for each lease this process holds and runs now."}, []string{"lease"})
	m.takeovers = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "funnel_cluster_takeovers_total", Help: "Leases this process took over from a process that stopped renewing them (died, hung, or lost the database)."}, []string{"lease"})
	m.projectionBatches = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "funnel_projection_batches_total", Help: "Transactions in which this process applied events to a projection's read model."}, []string{"projection"})
	m.projectionOverlaps = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "funnel_projection_applied_elsewhere_total", Help: "Batches this process found applied, wholly or in part, by another process when it came to apply them: work done twice, and left out the second time. None while every projection runs on one process (leases)."}, []string{"projection"})
	for _, c := range []prometheus.Collector{m.projectionBatches, m.projectionOverlaps, m.leasesHeld, m.leaseHeld, m.takeovers, m.requests, m.requestDuration, m.commands, m.commandDuration, m.appendedEvents, m.appendBatch, m.appendCommit, m.projectionPos, m.projectionLag, m.relayPosition, m.deliveries, m.attemptDuration, m.timerLooks, m.redisDown, m.slowAccounts, m.localDecisions} {
		f(c)
	}
	return m
}

var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// lagBuckets are latencyBuckets with finer steps from 5 to 50 ms, where the relays' lag lies
// under load and its target (10 ms at the 99th percentile) is judged: with a bucket from 10 to
// 25 ms, a p99 anywhere in it read as about 24 ms.
var lagBuckets = []float64{.0005, .001, .0025, .005, .0075, .01, .0125, .015, .0175, .02, .025, .03, .04, .05, .1, .25, .5, 1, 2.5, 5, 10}

// LeasesHeld records the leases this process runs now (cluster.Observer).
func (m *Metrics) LeasesHeld(names []string) {
	m.leasesHeld.Set(float64(len(names)))
	m.leaseHeld.Reset()
	for _, n := range names {
		m.leaseHeld.WithLabelValues(n).Set(1)
	}
}

// TookOver counts a lease taken over from a process that stopped renewing it (cluster.Observer).
func (m *Metrics) TookOver(name string) { m.takeovers.WithLabelValues(name).Inc() }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// Registry lets other packages register their own collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// ObserveRequest records one HTTP request (httpapi.Observer).
func (m *Metrics) ObserveRequest(listener, route, method string, status int, took time.Duration) {
	m.requests.WithLabelValues(listener, route, method, strconv.Itoa(status)).Inc()
	m.requestDuration.WithLabelValues(listener, route, method).Observe(took.Seconds())
}

// CommandHandled records one command (commands.Observer).
func (m *Metrics) CommandHandled(command string, took time.Duration, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.commands.WithLabelValues(command, outcome).Inc()
	m.commandDuration.WithLabelValues(command).Observe(took.Seconds())
}

// Committed records one group commit (eventstore.Observer).
func (m *Metrics) Committed(events, appends int, took time.Duration) {
	m.appendedEvents.Add(float64(events))
	m.appendBatch.Observe(float64(appends))
	m.appendCommit.Observe(took.Seconds())
}

// Applied records one projection batch (pipeline.Observer): the position it reached, and the
// lag of its last event.
func (m *Metrics) Applied(projection string, position int64, lastOccurred time.Time) {
	m.projectionPos.WithLabelValues(projection).Set(float64(position))
	m.projectionLag.WithLabelValues(projection).Observe(time.Since(lastOccurred).Seconds())
	m.projectionBatches.WithLabelValues(projection).Inc()
}

// AppliedElsewhere counts a batch that a projection found applied already by another process
// (pipeline's optional observer): with leases, none in steady state.
func (m *Metrics) AppliedElsewhere(projection string) {
	m.projectionOverlaps.WithLabelValues(projection).Inc()
}

// Relayed records the relay's position (pipeline.Observer).
func (m *Metrics) Relayed(position int64) { m.relayPosition.Set(float64(position)) }

// DeliveryAttempted records one webhook attempt (webhooks.Observer).
func (m *Metrics) DeliveryAttempted(outcome string, took time.Duration) {
	m.deliveries.WithLabelValues(outcome).Inc()
	m.attemptDuration.Observe(took.Seconds())
}

// DeliveryGivenUp records a webhook delivery given up without an attempt: its subscription was
// deleted or disabled before it was sent (webhooks.Observer).
func (m *Metrics) DeliveryGivenUp() { m.deliveries.WithLabelValues("given_up").Inc() }

// DeliveryNotOpened records a webhook delivery that failed without an attempt because a secret
// it carries (an activation token, a sealed body) could not be opened with the configured keys
// (webhooks.Observer).
func (m *Metrics) DeliveryNotOpened() { m.deliveries.WithLabelValues("not_opened").Inc() }

// SlowAccounts records how many accounts this process holds to a share of its send slots because
// their receivers are slow (webhooks.Observer).
func (m *Metrics) SlowAccounts(n int) { m.slowAccounts.Set(float64(n)) }

// TimerLooked records one look of the subscription timer loop at its due timers.
func (m *Metrics) TimerLooked() { m.timerLooks.Inc() }

// RedisUnreachable records whether the rate limits are decided per process because Redis does
// not answer (ratelimit.Observer).
func (m *Metrics) RedisUnreachable(unreachable bool) {
	v := 0.0
	if unreachable {
		v = 1
	}
	m.redisDown.Set(v)
}

// LocalDecision counts a rate-limit decision taken in memory because Redis did not answer
// (ratelimit.Observer).
func (m *Metrics) LocalDecision() { m.localDecisions.Inc() }

// WatchBacklog exposes the number of webhook deliveries still to be sent, counted when scraped.
func (m *Metrics) WatchBacklog(count func() float64) {
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "funnel_webhook_backlog", Help: "Webhook deliveries still to be sent."}, count))
}
