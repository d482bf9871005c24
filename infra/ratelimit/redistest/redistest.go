// Package redistest gives tests the Redis server of the development machines and CI, and a key
// prefix of their own on it: every helper's and every test's keys stay apart on the one server.
//
// Redis is reached at FUNNEL_TEST_REDIS_URL (default redis://127.0.0.1:6379/0). Without a server
// a test that needs it fails when CI=true and is skipped, with a message, everywhere else.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultURL is where CI and the development machines run Redis.
const DefaultURL = "redis://127.0.0.1:6379/0"

// URL returns the URL of the test Redis server once it answers a PING, or ends the test: a
// failure in CI (CI=true), a skip with the reason everywhere else.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("FUNNEL_TEST_REDIS_URL")
	if url == "" {
		url = DefaultURL
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("FUNNEL_TEST_REDIS_URL: %v", err)
	}
	client := redis.NewClient(opts)
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		if os.Getenv("CI") != "true" {
			t.Skipf("skipping: Redis is not reachable at %s (%v); start it or set FUNNEL_TEST_REDIS_URL", opts.Addr, err)
		}
		t.Fatalf("Redis is required (CI=true): %s: %v", opts.Addr, err)
	}
	return url
}

// Client returns a client of the test Redis server (URL), closed when the test ends.
func Client(t testing.TB) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(URL(t))
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opts)
	t.Cleanup(func() { client.Close() })
	return client
}

// Prefix returns a key prefix of the test's own; its keys are deleted when the test ends.
func Prefix(t testing.TB) string {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	prefix := "funnel-test:" + hex.EncodeToString(b[:]) + ":"
	client := Client(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		iter := client.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			client.Del(ctx, iter.Val())
		}
	})
	return prefix
}
