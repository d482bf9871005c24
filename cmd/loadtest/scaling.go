package main

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// appendCeiling measures the append ceiling of one PostgreSQL (docs/scaling.md): for each k of
// processes, a fresh database, one `serve --role worker` and k `serve --role api` processes (each
// pool capped at 8 connections, so that they fit in max_connections), and new-contact upserts
// from 32 closed-loop clients spread round-robin over the API processes. Every upsert appends
// one event, so its rate is the events/s.
func appendCeiling(bin, pgURL string, processes []int, d time.Duration) {
	for _, k := range processes {
		dbURL, drop := postgresDatabase(pgURL, "funnel_scale")
		capped := dbURL + "?pool_max_conns=8"
		if strings.Contains(dbURL, "?") {
			capped = dbURL + "&pool_max_conns=8"
		}
		worker := startServer(bin, capped, "--role", "worker")
		apis := make([]*server, k)
		for i := range apis {
			apis[i] = startServer(bin, capped, "--role", "api")
		}
		_, key := setUp(apis[0])
		var next atomic.Int64
		fmt.Printf("appending processes: %d API + 1 worker, 32 clients:\n", k)
		// The CPU split's "service" is the first API process's; the machine's total is what counts.
		closedLoop(apis[0], 32, d, func() (time.Duration, bool) {
			return upsert(apis[next.Add(1)%int64(k)], key)
		})
		for _, s := range apis {
			s.stop()
		}
		worker.stop()
		drop()
	}
}
