package ratelimit

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/funnelhq/funnel/api/httpapi/limits"
)

// Redis keeps the windows in Redis, shared by every process that uses the same server and key
// prefix. Each decision is one script (window.lua), atomic in Redis and timed by Redis's clock,
// so that processes with clocks apart still count in one timeline. Each window is a sorted set
// that expires one window length after its newest request.
//
// The keys of one decision (an address's and an account's windows) must live on one server:
// Redis Cluster, which spreads keys over shards, is not supported.
type Redis struct {
	client redis.UniversalClient
	prefix string
	// members are unique per decision: this process's random id and a sequence number.
	process string
	seq     atomic.Uint64
}

//go:embed window.lua
var windowLua string

var windowScript = redis.NewScript(windowLua)

// NewRedis returns a store on client whose keys start with prefix.
func NewRedis(client redis.UniversalClient, prefix string) *Redis {
	var id [6]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails (it aborts the program instead)
	return &Redis{client: client, prefix: prefix, process: hex.EncodeToString(id[:])}
}

// ClientOptions reads a Redis URL (redis://[user:password@]host:port[/db] or rediss://…) and
// fills what it leaves unset for a limiter, which must answer fast or step aside: a second to
// connect, half a second per command, no retry (Fallback decides locally instead). It also
// silences go-redis's log, process-wide.
func ClientOptions(url string) (*redis.Options, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("ratelimit: redis URL: %w", err)
	}
	if opts.DialTimeout == 0 {
		opts.DialTimeout = time.Second
	}
	if opts.ReadTimeout == 0 {
		opts.ReadTimeout = 500 * time.Millisecond
	}
	if opts.WriteTimeout == 0 {
		opts.WriteTimeout = 500 * time.Millisecond
	}
	if opts.MaxRetries == 0 {
		opts.MaxRetries = -1
	}
	if opts.DialerRetries == 0 {
		opts.DialerRetries = 1 // one dial per attempt: a refused connection fails at once
	}
	quietClient.Do(func() { redis.SetLogger(silent{}) })
	return opts, nil
}

// quietClient silences go-redis's own log (a line on stderr per failed dial): Fallback reports
// Redis's failures itself, once per outage, with the error.
var quietClient sync.Once

type silent struct{}

func (silent) Printf(context.Context, string, ...any) {}

// Decide admits a request under every count or none, in one script (limits.Limiter).
func (r *Redis) Decide(ctx context.Context, counts []limits.Count) (limits.Decision, error) {
	member := r.process + ":" + strconv.FormatUint(r.seq.Add(1), 36)
	keys := make([]string, len(counts))
	args := make([]any, 0, 1+3*len(counts))
	args = append(args, member)
	for i, c := range counts {
		keys[i] = r.prefix + windowKey(c)
		take := 1
		if c.CheckOnly {
			take = 0
		}
		args = append(args, c.Rule.Max, c.Rule.Window.Microseconds(), take)
	}
	out, err := windowScript.Run(ctx, r.client, keys, args...).Int64Slice()
	if err != nil {
		return limits.Decision{}, fmt.Errorf("ratelimit: redis: %w", err)
	}
	if len(out) != 1+2*len(counts) {
		return limits.Decision{}, fmt.Errorf("ratelimit: redis: the script answered %d numbers for %d windows", len(out), len(counts))
	}
	seen := make([]window, len(counts))
	for i := range counts {
		seen[i] = window{count: int(out[1+2*i]), frees: time.Duration(out[2+2*i]) * time.Microsecond}
	}
	d := decide(counts, seen)
	if d.Allowed != (out[0] == 1) { // both read the same counts: they cannot disagree
		return limits.Decision{}, fmt.Errorf("ratelimit: redis: the script and the rules disagree on admitting the request")
	}
	if d.Allowed {
		counted := slot{member: member, shared: true}
		for _, c := range counts {
			if !c.CheckOnly {
				counted.keys = append(counted.keys, r.prefix+windowKey(c))
			}
		}
		d.Slot = counted
	}
	return d, nil
}

// Release removes the request a decision counted from its windows (limits.Limiter).
func (r *Redis) Release(ctx context.Context, s limits.Slot) error {
	slot := slotOf(s)
	if len(slot.keys) == 0 {
		return nil
	}
	pipe := r.client.Pipeline()
	for _, key := range slot.keys {
		pipe.ZRem(ctx, key, slot.member)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("ratelimit: redis: release: %w", err)
	}
	return nil
}
