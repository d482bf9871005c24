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

// statisticsKeeper analyzes what autovacuum would on a PostgreSQL that runs without it
// (sqldb.AnalyzeChanged says why the read models' plans need it). Every process runs one; a
// table another process is analyzing is skipped.
type statisticsKeeper struct {
	db  *sqldb.DB
	log *zap.Logger
}

// Run looks every analyzeEvery until ctx ends. Errors are logged, never returned: the next look
// tries again.
func (k statisticsKeeper) Run(ctx context.Context) error {
	if k.db.Dialect != sqldb.Postgres {
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(analyzeEvery):
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
