package service

import (
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/integration"
	"github.com/funnelhq/funnel/infra/metrics"
	"github.com/funnelhq/funnel/infra/ratelimit"
)

// defaultRedisKeyPrefix starts the rate-limit keys in Redis. A deployment sharing a Redis with
// another picks another database in FUNNEL_REDIS_URL (redis://host:6379/3).
const defaultRedisKeyPrefix = "funnel:ratelimit:"

// rateLimits are the integration API's rate limits as configured.
type rateLimits struct {
	limits *httpapi.RateLimits // nil when FUNNEL_RATE_LIMITS=off
	rules  integration.Limits
	mode   string        // "off", "memory" or "redis", for the start's log line
	redis  *redis.Client // closed with the app; nil without FUNNEL_REDIS_URL
}

// newRateLimits builds the limits: none when FUNNEL_RATE_LIMITS=off; windows in this process's
// memory without FUNNEL_REDIS_URL; windows in Redis with it, shared by every process, and in
// memory while Redis does not answer (ratelimit.Fallback). Redis is not asked at start: a Redis
// that is away then is found by the first requests, which are answered all the same.
func newRateLimits(cfg Config, m *metrics.Metrics, log *zap.Logger) (rateLimits, error) {
	rules := integration.Section8()
	if cfg.RateLimitRules != nil {
		rules = *cfg.RateLimitRules
	}
	if !cfg.RateLimits {
		return rateLimits{rules: rules, mode: "off"}, nil
	}
	trusted, err := httpapi.ParseTrustedProxies(cfg.TrustedProxies)
	if err != nil {
		return rateLimits{}, err
	}
	clientIPs := httpapi.NewClientIPs(trusted)
	local := ratelimit.NewMemory(cfg.Now)
	if cfg.RedisURL == "" {
		return rateLimits{limits: httpapi.NewRateLimits(local, clientIPs), rules: rules, mode: "memory"}, nil
	}
	opts, err := ratelimit.ClientOptions(cfg.RedisURL)
	if err != nil {
		return rateLimits{}, err
	}
	prefix := cfg.RedisKeyPrefix
	if prefix == "" {
		prefix = defaultRedisKeyPrefix
	}
	client := redis.NewClient(opts)
	shared := ratelimit.NewFallback(ratelimit.NewRedis(client, prefix), local, ratelimit.FallbackConfig{}, m, log)
	return rateLimits{limits: httpapi.NewRateLimits(shared, clientIPs), rules: rules, mode: "redis", redis: client}, nil
}

// close closes the Redis client, if any.
func (r rateLimits) close() {
	if r.redis != nil {
		_ = r.redis.Close()
	}
}
