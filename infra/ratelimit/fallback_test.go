package ratelimit

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/funnelhq/funnel/api/httpapi/limits"
	"github.com/funnelhq/funnel/infra/ratelimit/redistest"
)

// redisProxy forwards TCP connections to Redis until stopped, as a Redis that goes away and
// comes back on the same address would behave.
type redisProxy struct {
	addr, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        []net.Conn
}

func startProxy(t *testing.T, target string) *redisProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &redisProxy{addr: ln.Addr().String(), target: target}
	p.serve(ln)
	t.Cleanup(p.stop)
	return p
}

func (p *redisProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
}

// stop closes the listener and every connection: Redis is gone.
func (p *redisProxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// restart listens again on the same address: Redis is back.
func (p *redisProxy) restart(t *testing.T) {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.serve(ln)
}

// redisGauge records what Fallback reports, as the metrics do.
type redisGauge struct {
	unreachable atomic.Bool
	local       atomic.Int64
}

func (g *redisGauge) RedisUnreachable(u bool) { g.unreachable.Store(u) }
func (g *redisGauge) LocalDecision()          { g.local.Add(1) }

// Redis going away mid-traffic: every decision still gets an answer, from this process's
// windows (exact for the process), one warning is logged for the outage, the gauge is raised,
// and decisions go back to Redis once it answers again.
func TestFallbackDecidesLocallyWhileRedisIsAway(t *testing.T) {
	direct := redistest.Client(t)
	prefix := redistest.Prefix(t)
	proxy := startProxy(t, direct.Options().Addr)
	opts, err := ClientOptions("redis://" + proxy.addr + "/" + "0")
	if err != nil {
		t.Fatal(err)
	}
	opts.DB = direct.Options().DB
	client := redis.NewClient(opts)
	defer client.Close()
	core, logs := observer.New(zapcore.InfoLevel)
	gauge := &redisGauge{}
	f := NewFallback(NewRedis(client, prefix), NewMemory(nil), FallbackConfig{RetryAfter: 20 * time.Millisecond}, gauge, zap.New(core))
	ctx := context.Background()
	rule := limits.Rule{Name: "writes", Max: 5, Window: time.Minute}
	shared := func(subject string) int64 { return direct.ZCard(ctx, prefix+"writes:"+subject).Val() }

	if d := mustDecide(t, f, limits.Count{Rule: rule, Subject: "before"}); !d.Allowed || shared("before") != 1 {
		t.Fatalf("with Redis up the decision is counted there: %+v, %d in Redis", d, shared("before"))
	}

	proxy.stop()
	for i := range 50 {
		d, err := f.Decide(ctx, []limits.Count{{Rule: rule, Subject: "during"}})
		if err != nil {
			t.Fatalf("decision %d while Redis is away: %v", i+1, err)
		}
		if d.Allowed != (i < rule.Max) {
			t.Fatalf("decision %d while Redis is away: allowed %v, want the process's own exact limit", i+1, d.Allowed)
		}
	}
	if !gauge.unreachable.Load() || gauge.local.Load() != 50 {
		t.Fatalf("gauge: unreachable %v, %d local decisions; want true, 50", gauge.unreachable.Load(), gauge.local.Load())
	}
	if warns := logs.FilterLevelExact(zapcore.WarnLevel).All(); len(warns) != 1 || !strings.Contains(warns[0].Message, "Redis does not answer") {
		t.Fatalf("want one warning for the outage, got %v", warns)
	}
	if shared("during") != 0 {
		t.Fatal("decisions while Redis was away reached it")
	}

	proxy.restart(t)
	deadline := time.Now().Add(10 * time.Second)
	for shared("after") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("decisions did not go back to Redis once it answered")
		}
		mustDecide(t, f, limits.Count{Rule: rule, Subject: "after"})
		time.Sleep(5 * time.Millisecond) // the breaker asks Redis again after RetryAfter
	}
	if gauge.unreachable.Load() {
		t.Fatal("the gauge stayed raised after Redis answered again")
	}
	if infos := logs.FilterMessageSnippet("answers again").All(); len(infos) != 1 {
		t.Fatalf("want one line when the limits are shared again, got %v", infos)
	}
}

// A decision whose client went away ends with the context's error, and does not count against
// Redis's health.
func TestFallbackReturnsTheContextsError(t *testing.T) {
	gauge := &redisGauge{}
	f := NewFallback(NewRedis(redistest.Client(t), redistest.Prefix(t)), NewMemory(nil), FallbackConfig{FailuresToOpen: 1}, gauge, zap.NewNop())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Decide(ctx, []limits.Count{{Rule: perMinute, Subject: "s"}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if gauge.unreachable.Load() || gauge.local.Load() != 0 {
		t.Fatal("a cancelled decision was taken for Redis being away")
	}
}
