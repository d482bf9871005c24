// Command receiver is an example of an app that receives funnel's webhooks: it verifies both
// signatures and the timestamp of each delivery, applies each event once, and keeps the buyers'
// entitlements in SQLite by the ten integration rules of the contract (section 6), completing
// SaaS signups through the integration API with the generated Go client. See README.md.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// config is the receiver's settings, from its flags and environment.
type config struct {
	addr      string
	tlsCert   string
	tlsKey    string
	secret    string
	apiURL    string
	apiHost   string
	apiKey    string
	dbPath    string
	tolerance time.Duration
	failFirst int
	catchUp   time.Duration
}

// parseConfig reads the flags, with the secrets from the environment when their flags are not
// given, and refuses settings the receiver cannot run safely with.
func parseConfig(args []string, getenv func(string) string, output io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("receiver", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:4000", "listen address; plain HTTP only on a loopback address")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "TLS certificate file (PEM): serve HTTPS")
	fs.StringVar(&c.tlsKey, "tls-key", "", "TLS private key file (PEM), with -tls-cert")
	fs.StringVar(&c.secret, "secret", "", "the webhook's signing secret (default $FUNNEL_WEBHOOK_SECRET)")
	fs.StringVar(&c.apiURL, "api-url", "http://127.0.0.1:8080", "base URL of funnel's integration API")
	fs.StringVar(&c.apiHost, "api-host", "", "Host header for the API, when -api-url names an address (a local funnel: api.localhost)")
	fs.StringVar(&c.apiKey, "api-key", "", "API key with checkout:read and checkout:write (default $FUNNEL_API_KEY)")
	fs.StringVar(&c.dbPath, "db", "receiver.db", "SQLite file of the store")
	fs.DurationVar(&c.tolerance, "tolerance", 5*time.Minute, "how far webhook-timestamp may be from now")
	fs.IntVar(&c.failFirst, "fail-first", 0, "DEMO AID: fail the first N attempts of every delivery with 503")
	fs.DurationVar(&c.catchUp, "catch-up", 0, "read the event feed at start and then this often, applying what webhooks did not bring (0: never; the key needs events:read)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if c.secret == "" {
		c.secret = getenv("FUNNEL_WEBHOOK_SECRET")
	}
	if c.apiKey == "" {
		c.apiKey = getenv("FUNNEL_API_KEY")
	}
	var problems []error
	if c.secret == "" {
		problems = append(problems, errors.New("-secret (or FUNNEL_WEBHOOK_SECRET) is required"))
	}
	if c.apiKey == "" {
		problems = append(problems, errors.New("-api-key (or FUNNEL_API_KEY) is required"))
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		problems = append(problems, errors.New("-tls-cert and -tls-key go together"))
	}
	if c.tlsCert == "" && !loopback(c.addr) {
		problems = append(problems, fmt.Errorf("-addr %s is not a loopback address: plain HTTP is for local development, give -tls-cert and -tls-key", c.addr))
	}
	if c.tolerance <= 0 {
		problems = append(problems, errors.New("-tolerance must be positive"))
	}
	if c.failFirst < 0 {
		problems = append(problems, errors.New("-fail-first must not be negative"))
	}
	return c, errors.Join(problems...)
}

// loopback tells whether a listen address is on this machine only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg, err := parseConfig(os.Args[1:], os.Getenv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "receiver:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, log); err != nil {
		fmt.Fprintln(os.Stderr, "receiver:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends, then stops taking deliveries and lets those in flight finish.
func run(ctx context.Context, cfg config, log *slog.Logger) error {
	st, err := openStore(ctx, cfg.dbPath)
	if err != nil {
		return err
	}
	defer st.Close()
	api, err := newFunnelAPI(cfg.apiURL, cfg.apiHost, cfg.apiKey, &http.Client{Timeout: apiTimeout})
	if err != nil {
		return err
	}
	srv := &server{
		secret: cfg.secret, tolerance: cfg.tolerance, now: time.Now, store: st, failFirst: newFailFirst(cfg.failFirst), log: log,
		rules: &rules{store: st, funnel: api, now: time.Now, log: log},
	}
	if cfg.catchUp > 0 {
		feed := &catchUp{api: api.api, store: st, rules: srv.rules, log: log}
		go feed.every(ctx, cfg.catchUp)
	}
	httpServer := &http.Server{
		Handler:           srv.handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      30 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	scheme := "http"
	if cfg.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.tlsCert, cfg.tlsKey)
		if err != nil {
			ln.Close()
			return fmt.Errorf("tls: %w", err)
		}
		httpServer.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, httpServer.TLSConfig)
		scheme = "https"
	}
	log.Info("receiving webhooks", "url", scheme+"://"+ln.Addr().String()+"/webhooks/funnel", "store", cfg.dbPath,
		"api", cfg.apiURL, "tolerance", cfg.tolerance, "failFirst", cfg.failFirst)
	served := make(chan error, 1)
	go func() { served <- httpServer.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := httpServer.Shutdown(shutdown); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}
