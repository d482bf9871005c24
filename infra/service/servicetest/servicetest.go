// Package servicetest starts the whole service in-process, in either storage mode, for black-box
// tests that speak HTTP to its two listeners.
package servicetest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/funnelhq/funnel/infra/service"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// AdminToken is the operator token of every test service.
const AdminToken = "test-operator-token"

// Service is a running service with clients for both listeners.
type Service struct {
	App      *service.App
	Dialect  sqldb.Dialect
	API      *Client
	Operator *Client
	stop     func()
}

// Stop stops the service as a shutdown does: its HTTP clients, the pipeline, then the event
// store and the database. It is safe to call more than once; a service of Start or StartOn is
// also stopped when its test ends. Never stop a Shared service: other tests use it.
func (s *Service) Stop() { s.stop() }

// Run runs fn as one subtest per storage mode, each with the shared service of that mode.
// Tests stay apart by creating accounts of their own.
func Run(t *testing.T, fn func(t *testing.T, svc *Service)) {
	t.Helper()
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) { fn(t, Shared(t, d)) })
}

var (
	sharedMu sync.Mutex
	shared   = map[sqldb.Dialect]*Service{}
	cleanups []func()
)

// Shared returns the service of one storage mode shared by the tests of this binary, starting
// it on first use. Main stops it.
func Shared(t testing.TB, dialect sqldb.Dialect) *Service {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if svc, ok := shared[dialect]; ok {
		return svc
	}
	url, drop := databaseURL(t, dialect)
	svc := start(t, url, zap.NewNop(), func(c *service.Config) {})
	shared[dialect] = svc
	cleanups = append(cleanups, func() { svc.stop(); drop() })
	return svc
}

// Start starts a service of its own on a fresh database, stopped when the test ends. Like every
// test service it runs without rate limits unless configure turns them on.
func Start(t testing.TB, dialect sqldb.Dialect, configure func(*service.Config)) *Service {
	t.Helper()
	svc := start(t, sqldbtest.URL(t, dialect), zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)), configure)
	t.Cleanup(svc.stop)
	return svc
}

// StartOn starts a service on an existing database, stopped when the test ends.
func StartOn(t testing.TB, databaseURL string, configure func(*service.Config)) *Service {
	t.Helper()
	svc := start(t, databaseURL, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)), configure)
	t.Cleanup(svc.stop)
	return svc
}

// Main runs the tests of a package and stops the shared services afterwards.
func Main(m *testing.M) {
	code := m.Run()
	sharedMu.Lock()
	for _, c := range cleanups {
		c()
	}
	sharedMu.Unlock()
	os.Exit(code)
}

func databaseURL(t testing.TB, dialect sqldb.Dialect) (string, func()) {
	if dialect == sqldb.SQLite {
		dir, err := os.MkdirTemp("", "funnel-test-")
		if err != nil {
			t.Fatal(err)
		}
		return "sqlite:" + filepath.Join(dir, "funnel.db"), func() { os.RemoveAll(dir) }
	}
	url, drop, err := sqldbtest.CreatePostgresDatabase()
	if err != nil {
		sqldbtest.RequirePostgres(t, err)
	}
	return sqldbtest.SizedForTest(t, url), func() { _ = drop() }
}

// SecretKey is the server key (FUNNEL_SECRET_KEY) of a test service on databaseURL. On PostgreSQL
// it derives from the URL: every service of one database gets the same key, as the processes of a
// deployment must, and another database another key. On SQLite it is none: the service makes its
// key file beside the database, as an embedded service does.
func SecretKey(databaseURL string) string {
	if strings.HasPrefix(databaseURL, "sqlite:") {
		return ""
	}
	sum := sha256.Sum256([]byte("funnel test server key\x00" + databaseURL))
	return base64.StdEncoding.EncodeToString(sum[:])
}

func start(t testing.TB, databaseURL string, log *zap.Logger, configure func(*service.Config)) *Service {
	t.Helper()
	cfg := service.Defaults()
	cfg.DatabaseURL = databaseURL
	cfg.SecretKey = SecretKey(databaseURL)
	cfg.AdminToken = AdminToken
	cfg.WebhookAllowPrivate = true
	// Tests send far more than the section 8 limits allow from 127.0.0.1: the tests of the
	// limits turn them on in configure.
	cfg.RateLimits = false
	configure(&cfg)
	ctx := context.Background()
	a, err := service.Open(ctx, cfg, log)
	if err != nil {
		t.Fatalf("start service: %v", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := a.RunBackground(runCtx); err != nil {
			log.Error("pipeline", zap.Error(err))
		}
	}()
	select {
	case <-a.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("service did not become ready")
	}
	d := service.Dialect(a)
	api := newClient(a.APIHandler(), cfg.APIHost, "", integrationContract)
	op := newClient(a.OperatorHandler(), "", AdminToken, operatorContract)
	var once sync.Once
	return &Service{App: a, Dialect: d, API: api, Operator: op, stop: func() {
		once.Do(func() {
			api.close()
			op.close()
			cancel()
			<-done
			a.Close()
		})
	}}
}
