package service

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/funnelhq/funnel/infra/eventstore"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// resealRetry is how long the resealer waits after a failure (the database did not answer) before
// it goes over the table again.
const resealRetry = time.Minute

// personKeyResealer seals the persons' keys again with the first server key after a rotation
// (FUNNEL_SECRET_KEY=NEW,OLD; eventstore.ResealPersonKeys), in the background of every process
// that works: on a table of millions of contacts it takes minutes, which readiness should not
// wait for, and until it is done OLD opens what it has not reached yet. Several workers may run
// it at once: each batch replaces only the rows still as it read them, so they only repeat each
// other's work. Its end is logged, and that line is what tells the operator that OLD may be
// dropped (README "The server key").
type personKeyResealer struct {
	db     *sqldb.DB
	sealer eventstore.KeyedSealer
	log    *zap.Logger
	done   chan struct{} // closed once every key a configured key opens is sealed with the first
}

// newPersonKeyResealer returns the resealer of sealer's keys: with one key there is nothing to
// seal again (a key sealed with another one opens with none), and it is done at once.
func newPersonKeyResealer(db *sqldb.DB, sealer eventstore.KeyedSealer, log *zap.Logger) personKeyResealer {
	r := personKeyResealer{db: db, sealer: sealer, log: log, done: make(chan struct{})}
	if len(sealer.KeyIDs()) == 1 {
		close(r.done)
	}
	return r
}

// Run seals the keys again, once, retrying after a failure, until it is done or ctx ends.
func (r personKeyResealer) Run(ctx context.Context) error {
	select {
	case <-r.done:
		return nil
	default:
	}
	ids := r.sealer.KeyIDs()
	r.log.Info("sealing the persons' keys again with the first server key", zap.String("sealsWith", ids[0]), zap.Strings("opensWith", ids))
	for {
		did, err := eventstore.ResealPersonKeys(ctx, r.db, r.sealer)
		if err == nil {
			fields := []zap.Field{zap.String("sealsWith", ids[0]), zap.Int("resealed", did.Resealed)}
			if did.Unopened > 0 {
				r.log.Warn("the persons' keys that a configured server key opens are sealed with the first; these open with none, and their persons' events cannot be read (the relays stop at them) until their key is configured again",
					append(fields, zap.Int("unopened", did.Unopened))...)
			} else {
				r.log.Info("every person's key is sealed with the first server key: the others may be dropped from FUNNEL_SECRET_KEY once their deliveries may no longer retry (README \"The server key\")", fields...)
			}
			close(r.done)
			return nil
		}
		if ctx.Err() != nil {
			return nil
		}
		r.log.Warn("seal the persons' keys again with the first server key; trying again", zap.Error(err), zap.Duration("in", resealRetry))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(resealRetry):
		}
	}
}
