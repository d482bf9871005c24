package httpapi

import (
	"go.uber.org/zap"

	"github.com/funnelhq/funnel/api/httpapi/idempotent"
)

// Runtime is what the handlers of every API share beside the commands and the read side: the
// wait for read-your-writes, the Idempotency-Key store, readiness, the log and the metrics. The
// service builds one and gives it to both APIs.
type Runtime struct {
	ReadModels ReadModelWaiter
	// Idempotency keeps the answers of requests with an Idempotency-Key; nil turns the header off.
	Idempotency idempotent.Store
	// Ready reports whether migrations ran and the projections caught up at start (/readyz).
	Ready    func() bool
	Log      *zap.Logger
	Observer Observer // the HTTP metrics; may be nil
	// Unavailable classifies the errors that mean the database is out of reach for now
	// (Listener.Unavailable).
	Unavailable func(error) bool
}
