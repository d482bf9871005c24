package app

import "time"

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
	LogLevel            string        // FUNNEL_LOG_LEVEL
}

// Defaults are the documented defaults of every setting.
func Defaults() Config {
	return Config{
		Addr:               "127.0.0.1:8080",
		APIHost:            "api.localhost",
		AdminAddr:          "127.0.0.1:8081",
		DatabaseURL:        "sqlite:funnel.db",
		WebhookBackoffBase: 60 * time.Second,
		WebhookBackoffCap:  24 * time.Hour,
		RateLimits:         true,
		LogLevel:           "info",
	}
}
