package service

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/infra/sqldb"
)

// analyzeEvery is how often the statistics keeper looks for PostgreSQL tables that changed
// enough since their last ANALYZE.
const analyzeEvery = time.Minute

// firstLooks are the keeper's waits before its first looks after the process starts: a new
// deployment's tables were analyzed empty, and the generic plans PostgreSQL makes of the
// statements it runs five times stay until an ANALYZE of their tables. Waiting a whole minute
// left such plans to the first minute of traffic (the webhook dispatcher's claim met one:
// docs/performance.md, "The claim runs its walk once"). A look at tables that did not change
// costs one read of the catalogue.
var firstLooks = []time.Duration{5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second}

// statisticsKeeper analyzes what autovacuum would on a PostgreSQL that runs without it
// (sqldb.AnalyzeChanged says why the read models' plans need it). Every process runs one; a
// table another process is analyzing is skipped.
type statisticsKeeper struct {
	db  *sqldb.DB
	log *zap.Logger
}

// Run looks after each of firstLooks, then every analyzeEvery, until ctx ends. Errors are
// logged, never returned: the next look tries again.
func (k statisticsKeeper) Run(ctx context.Context) error {
	if k.db.Dialect != sqldb.Postgres {
		return nil
	}
	for look := 0; ; look++ {
		wait := analyzeEvery
		if look < len(firstLooks) {
			wait = firstLooks[look]
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		tables, err := k.db.AnalyzeChanged(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			k.log.Warn("analyze changed tables", zap.Error(err))
		case len(tables) > 0:
			k.log.Debug("analyzed changed tables", zap.Strings("tables", tables))
		}
	}
}
