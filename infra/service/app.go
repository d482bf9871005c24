// Package service is the composition root: it opens the database, wires the event store, the
// pipeline, the command handlers and the HTTP handlers, and runs them.
package service

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/integration"
	"github.com/funnelhq/funnel/api/operator"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/infra/cluster"
	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/idempotency"
	"github.com/funnelhq/funnel/infra/metrics"
	"github.com/funnelhq/funnel/infra/pipeline"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/projections"
	"github.com/funnelhq/funnel/webhooks"
)

// App is one running funnel process.
type App struct {
	cfg        Config
	log        *zap.Logger
	db         *sqldb.DB
	store      *eventstore.Store
	pipeline   *pipeline.Pipeline
	metrics    *metrics.Metrics
	commands   commands.Handlers
	api        *integration.Server
	operator   *operator.Server
	dispatcher *webhooks.Dispatcher
	timer      subscriptionTimer
	sweeper    idempotencySweeper
	statistics statisticsKeeper
	replays    replayResumer
	rateLimits rateLimits
	node       *cluster.Node
	resealer   personKeyResealer
}

// Open connects to the database, claims a SQLite file for this process (sqldb.DB.Claim), applies
// pending migrations and wires the service.
func Open(ctx context.Context, cfg Config, log *zap.Logger) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	db, err := sqldb.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	if err := db.Claim(); err != nil {
		db.Close()
		return nil, err
	}
	// After the claim: on SQLite only the process that serves the file may create its key file.
	sealer, err := newSealer(cfg, db, log)
	if err != nil {
		db.Close()
		return nil, err
	}
	migrated, err := db.Migrate(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	logMigrations(log, migrated)
	// After the migrations, which make the table of the keys that sealed.
	if sealer, err = sealingKeyAfterRotations(ctx, db, sealer, time.Now(), log); err != nil {
		db.Close()
		return nil, err
	}
	// Signing secrets written in the clear before they were sealed, or sealed with a key that no
	// longer seals (a rotation), are sealed with the first key before anything is sent.
	if n, err := webhooks.SealSubscriptionSecrets(ctx, db, sealer); err != nil {
		db.Close()
		return nil, err
	} else if n > 0 {
		log.Info("webhook signing secrets sealed with the first server key", zap.Int("subscriptions", n))
	}
	m := metrics.New()
	limits, err := newRateLimits(cfg, m, log)
	if err != nil {
		db.Close()
		return nil, err
	}
	store := eventstore.New(db)
	store.SetObserver(m)
	store.SealPersonalData(sealer)

	a := &App{cfg: cfg, log: log, db: db, store: store, metrics: m, rateLimits: limits,
		resealer: newPersonKeyResealer(db, sealer, log.Named("keys"))}
	models := newReadModels(db, sealer, m, log, func() { a.dispatcher.Wake() })
	pipe := pipeline.New(db, store, log, m)
	if db.Dialect == sqldb.Postgres {
		// Several processes may share the database: each runs the projections it holds a lease
		// of (infra/cluster), and its writes wait for whichever process runs the others.
		pipe.Share()
	}
	store.SetInline(models.inline()...)
	if err := store.CatchUpInline(ctx); err != nil {
		store.Close()
		db.Close()
		return nil, err
	}
	for _, p := range models.relayed() {
		pipe.AddReadModel(p)
	}
	pipe.AddInvalidator(projections.NewCacheInvalidator(models.queries.Tags))
	a.pipeline = pipe
	policy := webhooks.TargetPolicy{AllowPrivate: cfg.WebhookAllowPrivate}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	handlers := commands.NewHandlers(commands.Dependencies{Store: store, Tags: models.queries.Tags, Targets: policy, Events: webhooks.Events, Products: models.queries.Products,
		Subscriptions: store, Sealer: sealer, Log: log, Observer: m, Now: now})
	a.timer = subscriptionTimer{timers: models.queries.Timers, end: handlers.EndSubscriptionIfDue, now: now, log: log.Named("timer"), looked: m.TimerLooked}
	// Timeout, concurrency and polling: webhooks.Config's defaults.
	a.dispatcher = webhooks.NewDispatcher(db, webhooks.Config{
		Schedule: webhooks.Schedule{Base: cfg.WebhookBackoffBase, Cap: cfg.WebhookBackoffCap},
		Policy:   policy,
		Now:      cfg.WebhookNow,
	}, sealer, func(ctx context.Context, accountID, subscriptionID, reason string) error {
		_, err := handlers.DisableWebhookSubscription.Handle(ctx, commands.DisableWebhookSubscription{AccountID: accountID, SubscriptionID: subscriptionID, Reason: reason})
		return err
	}, m, log)
	deliveries := webhooks.NewDeliveries(db, a.dispatcher.Now, a.dispatcher.Wake)
	m.WatchBacklog(func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		n, _ := deliveries.Backlog(ctx)
		return float64(n)
	})
	keys := idempotency.New(db, store, sealer, now)
	handlers.EraseContact = finishedErasures{next: handlers.EraseContact, readModels: pipe.Tracker(), keptAnswers: keys, db: db, sends: a.dispatcher}
	// Kept once every handler is final: a copy taken before held the bare erasure, which
	// returned before the read models, the kept answers and the files were done with the person.
	a.commands = handlers
	a.sweeper = idempotencySweeper{keys: keys, log: log.Named("idempotency")}
	a.statistics = statisticsKeeper{db: db, log: log.Named("statistics")}
	// What both APIs read and share, built once.
	hooks := webhooks.Queries{Subscriptions: webhooks.NewSubscriptions(db.Read), Deliveries: deliveries, Samples: webhooks.NewSamples(store),
		Feed: webhooks.NewFeed(store, sealer)}
	hooks.SelfService = webhooks.NewSelfService(db, store, maxDeliveryAttempts, sealer, hooks.Subscriptions, deliveries, hooks.Samples, a.dispatcher, now)
	hooks.SelfService.AfterBatch = cfg.AfterReplayBatch
	a.replays = replayResumer{replays: hooks.SelfService, log: log.Named("replays")}
	runtime := httpapi.Runtime{ReadModels: pipe.Tracker(), Idempotency: keys, Ready: a.readiness, Log: log, Observer: m, Unavailable: sqldb.Unavailable}
	a.api = integration.New(integration.Deps{
		Commands: handlers, Read: models.queries, Webhooks: hooks, Runtime: runtime,
		Keys:    projections.NewAPIKeyAuthenticator(models.queries.Accounts, store),
		APIHost: cfg.APIHost, RateLimits: limits.limits, Limits: limits.rules,
	})
	a.operator = operator.New(operator.Deps{
		Commands: handlers, Read: models.queries, Webhooks: hooks, Runtime: runtime,
		History: store, Projections: newProjectionAdmin(db, cfg.SecretKey), AdminToken: cfg.AdminToken, Metrics: m.Handler(),
		Cluster: clusterView{db: db},
	})
	a.node = a.newNode()
	return a, nil
}

// ProcessID is this process's id in the cluster view (GET /admin/v1/cluster).
func (a *App) ProcessID() string { return a.node.ID() }

// Commands are the command handlers (for the demo data and tests).
func (a *App) Commands() commands.Handlers { return a.commands }

// Store is the event log.
func (a *App) Store() *eventstore.Store { return a.store }

// SecretKey is the FUNNEL_SECRET_KEY the service runs with ("": the key file of a SQLite
// database): what a tool beside it (Rebuild) needs to open the log's personal values.
func (a *App) SecretKey() string { return a.cfg.SecretKey }

// DB is the database.
func (a *App) DB() *sqldb.DB { return a.db }

// ReadModels tells how far the read models are.
func (a *App) ReadModels() *pipeline.Tracker { return a.pipeline.Tracker() }

// APIHandler serves the integration API.
func (a *App) APIHandler() http.Handler { return a.api.Handler() }

// APIRouter is the integration API's router (tests walk its routes).
func (a *App) APIRouter() *mux.Router { return a.api.Router() }

// OperatorHandler serves the operator API.
func (a *App) OperatorHandler() http.Handler { return a.operator.Handler() }

// OperatorRouter holds the routes of the operator listener (tests walk them).
func (a *App) OperatorRouter() *mux.Router { return a.operator.Router() }

// Ready is closed once the projections caught up with the log as it was at start.
func (a *App) Ready() <-chan struct{} { return a.pipeline.Ready() }

// PersonKeysResealed is closed once this process sealed every person's key again with the first
// server key (personKeyResealer): at once with one key, never in an api process (the workers do
// it).
func (a *App) PersonKeysResealed() <-chan struct{} { return a.resealer.done }

// readiness is what /readyz answers (deployment.md, "Health and readiness"): ready once the
// projections caught up with the log as it was at start, and, for an api process on PostgreSQL,
// while workers run the projections its writes wait for (cluster.Node.WorkersRun): without
// them, every write that waits for a relayed read model would answer 503 after 10 s.
func (a *App) readiness() *httpapi.NotReady {
	select {
	case <-a.pipeline.Ready():
	default:
		return &httpapi.NotReady{Status: wire.Starting, Reason: "the projections are catching up with the event log as it was at start"}
	}
	switch ok, unheld := a.node.WorkersRun(); {
	case ok:
		return nil
	case len(unheld) == 0: // every lease was held at the last look, but no look succeeded since
		return &httpapi.NotReady{Status: wire.WaitingForWorkers,
			Reason: "this process could not read, for 5 s, whether workers run the projections its writes wait for: the database does not answer it"}
	default:
		return &httpapi.NotReady{Status: wire.WaitingForWorkers, Reason: fmt.Sprintf(
			"no worker runs %s: this process runs no projection (FUNNEL_ROLE %s), and its writes would wait for them; start a worker (FUNNEL_ROLE worker or all)",
			strings.Join(unheld, ", "), a.cfg.Role)}
	}
}

// maxDeliveryAttempts is how often a webhook is tried (integration-api.md section 8).
const maxDeliveryAttempts = 10

// RunBackground runs, until ctx ends, this process's place in the cluster (its heartbeat and
// leases, infra/cluster) and the relay; a process of a role that works (all, worker) also runs
// the webhook dispatcher, the resealer of the persons' keys after a server-key rotation
// (personKeyResealer) and, under their leases, the projections, the subscription timers, the
// sweeper of expired Idempotency-Keys and the statistics keeper. An api process's relay only
// keeps its caches right (the cache invalidators), and its writes wait for the workers'
// checkpoints. When ctx ends, the leases are handed over once their work stopped here.
func (a *App) RunBackground(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return a.pipeline.Run(ctx) })
	g.Go(func() error { return a.node.Run(ctx) })
	if a.cfg.Role.Works() {
		g.Go(func() error { return a.dispatcher.Run(ctx) })
		g.Go(func() error { return a.resealer.Run(ctx) })
	}
	return g.Wait()
}

// Close stops the appender and closes the database and the Redis client. Call it after Run
// returned.
func (a *App) Close() {
	a.store.Close()
	a.db.Close()
	a.rateLimits.close()
}

// Listeners are the two listening sockets, opened before Run so that a taken port fails at once.
type Listeners struct {
	API, Operator net.Listener
}

// Listen opens the API and operator listeners; a worker opens the operator listener only (API
// is nil then).
func (a *App) Listen() (Listeners, error) {
	var apiLn net.Listener
	if a.cfg.Role.ServesAPI() {
		var err error
		if apiLn, err = net.Listen("tcp", a.cfg.Addr); err != nil {
			return Listeners{}, fmt.Errorf("app: listen on FUNNEL_ADDR %s: %w", a.cfg.Addr, err)
		}
	}
	opLn, err := net.Listen("tcp", a.cfg.AdminAddr)
	if err != nil {
		if apiLn != nil {
			apiLn.Close()
		}
		return Listeners{}, fmt.Errorf("app: listen on FUNNEL_ADMIN_ADDR %s: %w", a.cfg.AdminAddr, err)
	}
	return Listeners{API: apiLn, Operator: opLn}, nil
}

// drainTimeout is how long a stopping process lets the requests in flight finish
// (operator-api.md: at most 10 s).
const drainTimeout = 10 * time.Second

// Serve runs the listeners and the background work until ctx ends (SIGTERM, SIGINT), then
// drains in order: the listeners stop accepting and finish the requests in flight (at most
// drainTimeout; in-flight writes still wait for their read models), then the background work
// stops and its leases are handed over at once, so that another worker goes on within a second.
func (a *App) Serve(ctx context.Context, ln Listeners) error {
	pipeCtx, stopPipeline := context.WithCancel(context.Background())
	defer stopPipeline()
	pipeDone := make(chan error, 1)
	go func() { pipeDone <- a.RunBackground(pipeCtx) }()

	var servers []*http.Server
	var listeners []net.Listener
	if ln.API != nil {
		servers, listeners = append(servers, newHTTPServer(a.APIHandler())), append(listeners, ln.API)
	}
	servers, listeners = append(servers, newHTTPServer(a.OperatorHandler())), append(listeners, ln.Operator)
	g, gctx := errgroup.WithContext(ctx)
	for i, l := range listeners {
		srv := servers[i]
		g.Go(func() error {
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("app: serve %s: %w", l.Addr(), err)
			}
			return nil
		})
	}
	a.log.Info("serving", zap.String("api", addrOf(ln.API)), zap.String("apiHost", integration.HostName(a.cfg.APIHost)),
		zap.String("operator", ln.Operator.Addr().String()), zap.String("database", string(a.db.Dialect)),
		zap.String("rateLimits", a.rateLimits.mode), zap.String("role", string(a.cfg.Role)), zap.String("process", a.node.ID()))

	var pipeErr error
	select {
	case <-gctx.Done():
	case pipeErr = <-pipeDone:
		pipeErr = fmt.Errorf("app: pipeline stopped: %w", pipeErr)
	}
	a.log.Info("draining: finishing the requests in flight, then handing the work over")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	for _, srv := range servers {
		if err := srv.Shutdown(shutdownCtx); err != nil {
			a.log.Warn("a listener did not finish its requests within the shutdown timeout", zap.Error(err))
		}
	}
	err := g.Wait()
	stopPipeline()
	if pipeErr == nil {
		<-pipeDone
	}
	err = errors.Join(err, pipeErr)
	a.log.Info("stopped", zap.String("api", addrOf(ln.API)), zap.String("operator", ln.Operator.Addr().String()), zap.Error(err))
	return err
}

func addrOf(l net.Listener) string {
	if l == nil {
		return ""
	}
	return l.Addr().String()
}

func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

// logMigrations logs, at info, the migrations a start applied, or that there were none to apply.
func logMigrations(log *zap.Logger, migrated sqldb.Migrated) {
	for _, name := range migrated.Applied {
		log.Info("applied migration", zap.String("migration", name))
	}
	if len(migrated.Applied) == 0 {
		log.Info("schema already up to date", zap.Int64("version", migrated.Version))
	}
}

// Dialect is the storage mode the app runs on.
func Dialect(a *App) sqldb.Dialect { return a.db.Dialect }
