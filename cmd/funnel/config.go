package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/funnelhq/funnel/infra/cluster"
	"github.com/funnelhq/funnel/infra/service"
)

var defaults = service.Defaults()

// configFlags are the settings of operator-api.md; each reads its environment variable.
var configFlags = []cli.Flag{
	&cli.StringFlag{Name: "addr", Value: defaults.Addr, Sources: cli.EnvVars("FUNNEL_ADDR"), Usage: "API listener"},
	&cli.StringFlag{Name: "api-host", Value: defaults.APIHost, Sources: cli.EnvVars("FUNNEL_API_HOST"), Usage: "the only host (port ignored) on which /api/v1 and /llms-full.txt answer"},
	&cli.StringFlag{Name: "admin-addr", Value: defaults.AdminAddr, Sources: cli.EnvVars("FUNNEL_ADMIN_ADDR"), Usage: "operator listener"},
	&cli.StringFlag{Name: "admin-token", Sources: cli.EnvVars("FUNNEL_ADMIN_TOKEN"), Usage: "bearer token of the operator API (default: generated and printed at start)"},
	&cli.StringFlag{Name: "database-url", Value: defaults.DatabaseURL, Sources: cli.EnvVars("FUNNEL_DATABASE_URL"), Usage: "sqlite:PATH (embedded) or postgres://…"},
	&cli.BoolFlag{Name: "webhook-allow-private", Sources: cli.EnvVars("FUNNEL_WEBHOOK_ALLOW_PRIVATE"), Usage: "allow http and loopback/private webhook targets (development, tests)"},
	&cli.DurationFlag{Name: "webhook-backoff-base", Value: defaults.WebhookBackoffBase, Sources: cli.EnvVars("FUNNEL_WEBHOOK_BACKOFF_BASE"), Usage: "first webhook retry delay"},
	&cli.DurationFlag{Name: "webhook-backoff-cap", Value: defaults.WebhookBackoffCap, Sources: cli.EnvVars("FUNNEL_WEBHOOK_BACKOFF_CAP"), Usage: "longest webhook retry delay"},
	&cli.StringFlag{Name: "rate-limits", Value: "on", Sources: cli.EnvVars("FUNNEL_RATE_LIMITS"), Usage: "on, or off to lift the section 8 rate limits",
		Validator: func(v string) error {
			if v != "on" && v != "off" {
				return fmt.Errorf("rate-limits must be on or off, not %q", v)
			}
			return nil
		}},
	&cli.StringFlag{Name: "secret-key", Sources: cli.EnvVars("FUNNEL_SECRET_KEY"),
		Usage: "server key sealing activation tokens in the database: base64 of 32 random bytes (openssl rand -base64 32), or several comma-separated, the first sealing (required on PostgreSQL; default on SQLite: the key file PATH.key beside the database)"},
	&cli.StringFlag{Name: "redis-url", Sources: cli.EnvVars("FUNNEL_REDIS_URL"), Usage: "redis://host:port[/db]: the rate limits shared by every process of the deployment (default: each process alone)"},
	&cli.StringFlag{Name: "trusted-proxies", Sources: cli.EnvVars("FUNNEL_TRUSTED_PROXIES"), Usage: "comma-separated IPs or CIDR ranges of the reverse proxies whose X-Forwarded-For names the client"},
	&cli.StringFlag{Name: "role", Value: string(defaults.Role), Sources: cli.EnvVars("FUNNEL_ROLE"), Usage: "all, api (both listeners, no background work) or worker (the projections, webhooks, timers and other loops, and the operator listener); api and worker need PostgreSQL"},
	&cli.StringFlag{Name: "log-level", Value: defaults.LogLevel, Sources: cli.EnvVars("FUNNEL_LOG_LEVEL"), Usage: "debug, info, warn or error"},
}

// refuseEmptyVariables refuses, naming each, the settings' variables set to the empty string
// that no flag overrides, except those of a setting whose default is none (a string flag without
// a default value: the operator token, the server key, Redis, the trusted proxies), where empty
// is that none. Left to the flag library, an empty role, log level or webhook backoff read as the
// default and an empty switch as false, while an empty listener or rate-limits setting was
// refused: one rule now, the README's (Configuration), under which a value given must be one the
// service can run with, and a default is had by leaving the variable out.
func refuseEmptyVariables(cmd *cli.Command) error {
	var problems []error
	for _, f := range configFlags {
		if s, ok := f.(*cli.StringFlag); ok && s.Value == "" {
			continue
		}
		overridden := givenAsFlag(os.Args[1:], f.Names(), configFlags)
		for _, key := range f.(interface{ GetEnvVars() []string }).GetEnvVars() {
			if value, set := os.LookupEnv(key); set && value == "" && !overridden {
				problems = append(problems, fmt.Errorf("%s is empty: give it a value, or leave it out for its default", key))
			}
		}
	}
	if err := errors.Join(problems...); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	return nil
}

// givenAsFlag tells whether a command line gives one of a flag's names (--name, --name=value, -name):
// the flag library reads a variable and a flag into one value, so whether that value came from
// the command line, where false, 0 or "" are values given on purpose, is read from it. The token
// after a flag of flags that takes a value and was given without "=" is that value, whatever it
// looks like (`--admin-token -webhook-allow-private`), not a flag.
func givenAsFlag(args, names []string, flags []cli.Flag) bool {
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			return false
		}
		if !strings.HasPrefix(arg, "-") {
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		if slices.Contains(names, name) {
			return true
		}
		if !hasValue && takesValue(name, flags) {
			i++ // its value
		}
	}
	return false
}

// takesValue tells whether the flag of flags named name reads the next argument as its value:
// every one but a switch.
func takesValue(name string, flags []cli.Flag) bool {
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			_, isSwitch := f.(*cli.BoolFlag)
			return !isSwitch
		}
	}
	return false
}

func configFrom(cmd *cli.Command) service.Config {
	return service.Config{
		Addr:                cmd.String("addr"),
		APIHost:             cmd.String("api-host"),
		AdminAddr:           cmd.String("admin-addr"),
		AdminToken:          cmd.String("admin-token"),
		DatabaseURL:         cmd.String("database-url"),
		WebhookAllowPrivate: cmd.Bool("webhook-allow-private"),
		// As given: a flag left out is its default already (Value), so a 0 here was set on
		// purpose, and service.Config.Validate refuses it rather than run another schedule.
		WebhookBackoffBase: cmd.Duration("webhook-backoff-base"),
		WebhookBackoffCap:  cmd.Duration("webhook-backoff-cap"),
		RateLimits:         cmd.String("rate-limits") != "off",
		RedisURL:           cmd.String("redis-url"),
		TrustedProxies:     cmd.String("trusted-proxies"),
		LogLevel:           cmd.String("log-level"),
		Role:               cluster.Role(cmd.String("role")),
		SecretKey:          cmd.String("secret-key"),
		Now:                clockFrom(cmd),
	}
}

// newLogger logs JSON to stderr at the configured level.
func newLogger(level string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("log-level: %w", err)
	}
	cfg := zap.NewProductionConfig()
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	cfg.Sampling = nil
	return cfg.Build()
}
