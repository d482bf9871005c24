package service

import (
	"strings"
	"testing"
	"time"
)

func TestDefaultsAreValid(t *testing.T) {
	if err := Defaults().Validate(); err != nil {
		t.Fatalf("the documented defaults are refused: %v", err)
	}
	c := Defaults()
	c.Addr, c.AdminAddr = "127.0.0.1:0", "127.0.0.1:0" // a free port each, as tests ask
	if err := c.Validate(); err != nil {
		t.Fatalf("two listeners on free ports are refused: %v", err)
	}
	c.DatabaseURL, c.SecretKey = "postgres://postgres@127.0.0.1:5432/funnel", testKey+","+strings.ReplaceAll(testKey, "A", "B")
	if err := c.Validate(); err != nil {
		t.Fatalf("postgres with a rotation list of server keys is refused: %v", err)
	}
	c.RedisURL, c.TrustedProxies = "redis://127.0.0.1:6379/2", " 10.0.0.0/8, 192.0.2.7,2001:db8::/32 "
	if err := c.Validate(); err != nil {
		t.Fatalf("a Redis URL and trusted proxies are refused: %v", err)
	}
	// The API host's port and surrounding spaces are ignored, as a request's are.
	for _, host := range []string{"api.example.com:8443", " API.example.com ", "[::1]:8080", "127.0.0.1", "::1", "localhost", "xn--bcher-kva.example", "api-1.example.com", "[::1]", "funnel_api"} {
		c.APIHost = host
		if err := c.Validate(); err != nil {
			t.Fatalf("FUNNEL_API_HOST %q is refused: %v", host, err)
		}
	}
}

// testKey is a server key: base64 of 32 bytes.
const testKey = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

// A setting that would make the service run other than the operator meant stops the start, and
// the error names the variable to fix.
func TestValidateNamesTheBadSetting(t *testing.T) {
	cases := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"empty API listener", func(c *Config) { c.Addr = "" }, "FUNNEL_ADDR is empty"},
		{"one address for both", func(c *Config) { c.AdminAddr = c.Addr }, "need a listener each"},
		{"no API host", func(c *Config) { c.APIHost = " " }, "FUNNEL_API_HOST"},
		{"an API host that is only a port", func(c *Config) { c.APIHost = ":8443" }, "FUNNEL_API_HOST is empty"},
		{"an API host given as a URL", func(c *Config) { c.APIHost = "https://api.example.com" }, "FUNNEL_API_HOST must be a host name"},
		{"an API host http:api.example.com", func(c *Config) { c.APIHost = "http:api.example.com" }, "FUNNEL_API_HOST must be a host name"},
		{"an API host api.example.com:8443:1", func(c *Config) { c.APIHost = "api.example.com:8443:1" }, "FUNNEL_API_HOST must be a host name"},
		{"an API host api.example.com:abc", func(c *Config) { c.APIHost = "api.example.com:abc" }, "FUNNEL_API_HOST must be a host name"},
		{"an API host api.example.com,api2.example.com", func(c *Config) { c.APIHost = "api.example.com,api2.example.com" }, "FUNNEL_API_HOST must be a host name"},
		{"an API host *.example.com", func(c *Config) { c.APIHost = "*.example.com" }, "FUNNEL_API_HOST must be a host name"},
		{"an API host bücher.example", func(c *Config) { c.APIHost = "bücher.example" }, "FUNNEL_API_HOST must be a host name"},
		{"an API host api.example.com.", func(c *Config) { c.APIHost = "api.example.com." }, "FUNNEL_API_HOST must be a host name"},
		{"an API host api..example.com", func(c *Config) { c.APIHost = "api..example.com" }, "FUNNEL_API_HOST must be a host name"},
		{"an API host -api.example.com", func(c *Config) { c.APIHost = "-api.example.com" }, "FUNNEL_API_HOST must be a host name"},
		{"an API host api example.com", func(c *Config) { c.APIHost = "api example.com" }, "FUNNEL_API_HOST must be a host name"},
		{"an API host with a zone", func(c *Config) { c.APIHost = "fe80::1%eth0" }, "FUNNEL_API_HOST must be a host name"},
		{"an API host with one bracket", func(c *Config) { c.APIHost = "[::1" }, "FUNNEL_API_HOST must be a host name"},
		{"unknown database", func(c *Config) { c.DatabaseURL = "mysql://x" }, "FUNNEL_DATABASE_URL"},
		{"zero backoff", func(c *Config) { c.WebhookBackoffBase = 0 }, "FUNNEL_WEBHOOK_BACKOFF_BASE must be positive"},
		{"cap below base", func(c *Config) { c.WebhookBackoffCap = time.Second }, "FUNNEL_WEBHOOK_BACKOFF_CAP"},
		{"zero backoff cap", func(c *Config) { c.WebhookBackoffCap = 0 }, "FUNNEL_WEBHOOK_BACKOFF_CAP must be positive"},
		{"log level", func(c *Config) { c.LogLevel = "loud" }, "FUNNEL_LOG_LEVEL"},
		{"empty log level", func(c *Config) { c.LogLevel = "" }, "FUNNEL_LOG_LEVEL is empty"},
		{"empty role", func(c *Config) { c.Role = "" }, "FUNNEL_ROLE is empty"},
		{"an operator token with a trailing space", func(c *Config) { c.AdminToken = "s3cret-operator-token " }, "FUNNEL_ADMIN_TOKEN must not begin or end with white space"},
		{"an operator token with a leading tab", func(c *Config) { c.AdminToken = "\ts3cret-operator-token" }, "FUNNEL_ADMIN_TOKEN must not begin or end with white space"},
		{"an operator token of white space only", func(c *Config) { c.AdminToken = "   " }, "FUNNEL_ADMIN_TOKEN must not begin or end with white space"},
		{"postgres without a server key", func(c *Config) { c.DatabaseURL = "postgres://postgres@127.0.0.1:5432/funnel" },
			"FUNNEL_SECRET_KEY is required with a postgres:// database"},
		{"postgresql without a server key", func(c *Config) { c.DatabaseURL = "postgresql://db/funnel" }, "make one with: openssl rand -base64 32"},
		{"a server key of 16 bytes", func(c *Config) { c.SecretKey = "AAECAwQFBgcICQoLDA0ODw==" }, "FUNNEL_SECRET_KEY: key 1 of the list: sealing: a key must be 32 random bytes, this one is 16"},
		{"a server key that is no base64", func(c *Config) { c.SecretKey = "correct horse battery staple" }, "FUNNEL_SECRET_KEY: key 1 of the list: sealing: a key must be written in base64"},
		{"a rotation list with a bad second key", func(c *Config) { c.SecretKey = testKey + ",oops" }, "FUNNEL_SECRET_KEY: key 2 of the list"},
		{"redis URL", func(c *Config) { c.RedisURL = "127.0.0.1:6379" }, "FUNNEL_REDIS_URL"},
		{"trusted proxy", func(c *Config) { c.TrustedProxies = "10.0.0.1, proxy.internal" }, "FUNNEL_TRUSTED_PROXIES"},
		{"trusted range", func(c *Config) { c.TrustedProxies = "10.0.0.0/33" }, "FUNNEL_TRUSTED_PROXIES"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			tc.change(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			}
			if token := strings.TrimSpace(c.AdminToken); token != "" && strings.Contains(err.Error(), token) {
				t.Fatalf("the error shows the operator token: %v", err)
			}
			for _, key := range strings.Split(c.SecretKey, ",") {
				if key != "" && strings.Contains(err.Error(), key) {
					t.Fatalf("the error shows a key: %v", err)
				}
			}
		})
	}
}
