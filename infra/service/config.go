package service

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/integration"
	"github.com/funnelhq/funnel/infra/cluster"
	"github.com/funnelhq/funnel/infra/ratelimit"
	"github.com/funnelhq/funnel/infra/sealing"
	"github.com/funnelhq/funnel/webhooks"
)

// Config is the service's configuration (operator-api.md "Processes and configuration").
type Config struct {
	Addr                string        // FUNNEL_ADDR
	APIHost             string        // FUNNEL_API_HOST
	AdminAddr           string        // FUNNEL_ADMIN_ADDR
	AdminToken          string        // FUNNEL_ADMIN_TOKEN
	DatabaseURL         string        // FUNNEL_DATABASE_URL
	WebhookAllowPrivate bool          // FUNNEL_WEBHOOK_ALLOW_PRIVATE
	WebhookBackoffBase  time.Duration // FUNNEL_WEBHOOK_BACKOFF_BASE
	WebhookBackoffCap   time.Duration // FUNNEL_WEBHOOK_BACKOFF_CAP
	RateLimits          bool          // FUNNEL_RATE_LIMITS
	RedisURL            string        // FUNNEL_REDIS_URL
	TrustedProxies      string        // FUNNEL_TRUSTED_PROXIES
	LogLevel            string        // FUNNEL_LOG_LEVEL
	Role                cluster.Role  // FUNNEL_ROLE: all (the default), api or worker
	// SecretKey is FUNNEL_SECRET_KEY: the server key that seals activation tokens in the database,
	// base64 of 32 random bytes, or several comma-separated (the first seals, every one opens: a
	// rotation). Required on PostgreSQL; on SQLite it defaults to the key file beside the database
	// (secret_key.go).
	SecretKey string
	// Now is the clock of the commands, of the subscription timers and of the rate limits kept
	// in memory; nil is time.Now. Tests move it to let billing periods and rate-limit windows
	// pass without waiting.
	Now func() time.Time
	// WebhookNow is the clock of the webhook retry schedule (webhooks.Config.Now); nil is
	// time.Now. Not a setting, and apart from Now, whose tests stop the clock: webhook tests move
	// it forward to let a retry fall due without waiting for it.
	WebhookNow func() time.Time
	// AfterReplayBatch, when set, is called after each batch of a webhook replay is committed
	// (webhooks.SelfService.AfterBatch). Not a setting: tests hold a replay between two batches.
	AfterReplayBatch func(replayID string)
	// RedisKeyPrefix starts every rate-limit key in Redis (default "funnel:ratelimit:"). Not a
	// setting: tests that share one Redis give each service a prefix of its own.
	RedisKeyPrefix string
	// RateLimitRules replaces the section 8 limits (nil: those). Not a setting: benchmarks raise
	// them to measure what deciding costs without being refused.
	RateLimitRules *integration.Limits
}

// Defaults are the documented defaults of every setting.
func Defaults() Config {
	return Config{
		Addr:               "127.0.0.1:8080",
		APIHost:            "api.localhost",
		AdminAddr:          "127.0.0.1:8081",
		DatabaseURL:        "sqlite:funnel.db",
		WebhookBackoffBase: webhooks.DefaultBackoffBase,
		WebhookBackoffCap:  webhooks.DefaultBackoffCap,
		RateLimits:         true,
		LogLevel:           "info",
		Role:               cluster.RoleAll,
	}
}

// Validate refuses a configuration the service cannot run as the operator meant it, naming the
// variable: an empty listener or host, an API host that is not a host name (a URL; a port is
// ignored, not refused: integration.HostName), a database URL of no known kind, a retry schedule that is
// not positive or whose cap is below its base (retries would never wait, or never grow), a server
// key that is not base64 of 32 bytes or none on PostgreSQL, an operator token with white space
// around it, an empty role or a log level zap does not know (an empty one included), a Redis URL
// go-redis cannot read, or a trusted proxy that is neither an IP address nor a CIDR range.
// Open calls it, so a mistake stops the start instead of a quiet default.
func (c Config) Validate() error {
	var problems []error
	bad := func(format string, args ...any) { problems = append(problems, fmt.Errorf(format, args...)) }
	if c.Addr == "" {
		bad("FUNNEL_ADDR is empty")
	}
	if c.AdminAddr == "" {
		bad("FUNNEL_ADMIN_ADDR is empty")
	}
	if c.Addr != "" && c.Addr == c.AdminAddr && !strings.HasSuffix(c.Addr, ":0") { // port 0: each listener gets its own
		bad("FUNNEL_ADDR and FUNNEL_ADMIN_ADDR are both %s: the two APIs need a listener each", c.Addr)
	}
	// The port and surrounding spaces are ignored (integration.HostName); what is left must be a
	// host name, or /api/v1 would answer on no host while the service looks healthy.
	switch {
	case integration.HostName(c.APIHost) == "":
		bad("FUNNEL_API_HOST is empty")
	case !isHost(c.APIHost):
		bad("FUNNEL_API_HOST must be a host name or an IP address, with a port or none, not %q", c.APIHost)
	}
	if !strings.HasPrefix(c.DatabaseURL, "sqlite:") && !c.postgres() {
		bad("FUNNEL_DATABASE_URL must start with sqlite: or postgres://")
	}
	if c.WebhookBackoffBase <= 0 {
		bad("FUNNEL_WEBHOOK_BACKOFF_BASE must be positive, not %s", c.WebhookBackoffBase)
	}
	if c.WebhookBackoffCap <= 0 {
		bad("FUNNEL_WEBHOOK_BACKOFF_CAP must be positive, not %s", c.WebhookBackoffCap)
	} else if c.WebhookBackoffCap < c.WebhookBackoffBase {
		bad("FUNNEL_WEBHOOK_BACKOFF_CAP (%s) must not be below FUNNEL_WEBHOOK_BACKOFF_BASE (%s)", c.WebhookBackoffCap, c.WebhookBackoffBase)
	}
	// HTTP drops the white space around a header's value, so such a token could never be
	// presented: the operator API would answer 401 to everyone, in silence. Never quoted: a secret.
	if strings.TrimSpace(c.AdminToken) != c.AdminToken {
		bad("FUNNEL_ADMIN_TOKEN must not begin or end with white space: no Authorization header can carry it, so no operator request would authenticate")
	}
	if c.SecretKey != "" {
		if _, err := sealing.ParseKeys(c.SecretKey); err != nil {
			bad("FUNNEL_SECRET_KEY: %v", err)
		}
	} else if c.postgres() {
		bad("FUNNEL_SECRET_KEY is required with a postgres:// database: every process that shares the database seals and opens " +
			"activation tokens with it, so they must all be given the same key (make one with: openssl rand -base64 32)")
	}
	if c.RedisURL != "" {
		if _, err := ratelimit.ClientOptions(c.RedisURL); err != nil {
			bad("FUNNEL_REDIS_URL must be redis://host:port[/db] or rediss://…: %v", err)
		}
	}
	if _, err := httpapi.ParseTrustedProxies(c.TrustedProxies); err != nil {
		bad("FUNNEL_TRUSTED_PROXIES must be comma-separated IP addresses or CIDR ranges: %v", err)
	}
	if c.Role == "" {
		bad("FUNNEL_ROLE is empty: set all, api or worker, or leave it out for all")
	} else if role, err := cluster.ParseRole(string(c.Role)); err != nil {
		bad("FUNNEL_ROLE must be all, api or worker, not %q", c.Role)
	} else if role != cluster.RoleAll && !c.postgres() {
		bad("FUNNEL_ROLE %s needs a postgres:// database: a SQLite file is served by one process, which runs everything (FUNNEL_ROLE all)", role)
	}
	if c.LogLevel == "" { // zap reads it as info
		bad("FUNNEL_LOG_LEVEL is empty: set debug, info, warn or error, or leave it out for info")
	} else if _, err := zapcore.ParseLevel(c.LogLevel); err != nil {
		bad("FUNNEL_LOG_LEVEL must be debug, info, warn or error, not %q", c.LogLevel)
	}
	if err := errors.Join(problems...); err != nil {
		return fmt.Errorf("app: configuration: %w", err)
	}
	return nil
}

// postgres tells whether the database is PostgreSQL.
func (c Config) postgres() bool {
	return strings.HasPrefix(c.DatabaseURL, "postgres://") || strings.HasPrefix(c.DatabaseURL, "postgresql://")
}

// isHost tells whether a FUNNEL_API_HOST is a host a request's Host header can name: a host
// name (letters, digits, hyphens and underscores, as container names have them, in
// dot-separated labels, as DNS and browsers send it: an internationalised name in its punycode
// form) or an IP address (IPv6 with or without its brackets, without a zone), with a numeric
// port or none.
// A URL, a list, a wildcard or a name with a trailing dot would match no request.
func isHost(raw string) bool {
	raw = strings.TrimSpace(raw)
	host := raw
	if h, port, err := net.SplitHostPort(raw); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			return false
		}
		host = h
	}
	if bare, found := strings.CutPrefix(host, "["); found {
		host, found = strings.CutSuffix(bare, "]")
		if !found {
			return false
		}
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		return addr.Zone() == "" // a Host header cannot carry a zone as written here
	}
	if len(host) > 253 {
		return false
	}
	for label := range strings.SplitSeq(host, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}
