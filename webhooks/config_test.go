package webhooks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/infra/sqldb/sqldbtest"
)

// A dispatcher given only a target policy takes the documented defaults, and delivers: a zero
// concurrency, timeout, poll, slow threshold or backoff does not silently send nothing.
func TestADispatcherWithAZeroConfigDelivers(t *testing.T) {
	sqldbtest.Run(t, func(t *testing.T, d sqldb.Dialect) {
		got := make(chan struct{}, 10)
		rcv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { got <- struct{}{} }))
		defer rcv.Close()
		db := outboxTo(t, d, rcv.URL)
		disp := NewDispatcher(db, Config{Policy: TargetPolicy{AllowPrivate: true}}, testSealer(t),
			func(context.Context, string, string, string) error { return nil }, &countingObserver{}, zap.NewNop())
		want := Config{Schedule: Schedule{Base: time.Minute, Cap: 24 * time.Hour}, Policy: TargetPolicy{AllowPrivate: true},
			Timeout: 10 * time.Second, Concurrency: 64, Poll: 250 * time.Millisecond, SlowAfter: 2 * time.Second}
		if disp.cfg.Now == nil {
			t.Error("config with defaults has no clock")
		}
		cfg := disp.cfg
		cfg.Now = nil
		if !reflect.DeepEqual(cfg, want) { // a Config holds a func: not comparable with !=
			t.Errorf("config with defaults = %+v, want %+v", cfg, want)
		}

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- disp.Run(ctx) }()
		select {
		case <-got:
		case <-time.After(10 * time.Second):
			t.Error("a dispatcher built with Config{} sent nothing")
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if row := readDelivery(t, db); row.status != "succeeded" || row.attempts != 1 {
			t.Fatalf("delivery = %+v, want succeeded at the first attempt", row)
		}
	})
}
