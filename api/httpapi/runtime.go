package httpapi

import (
	"go.uber.org/zap"

	"github.com/funnelhq/funnel/api/httpapi/idempotent"
	"github.com/funnelhq/funnel/api/wire"
)

// Runtime is what the handlers of every API share beside the commands and the read side: the
// wait for read-your-writes, the Idempotency-Key store, readiness, the log and the metrics. The
// service builds one and gives it to both APIs.
type Runtime struct {
	ReadModels ReadModelWaiter
	// Idempotency keeps the answers of requests with an Idempotency-Key; nil turns the header off.
	Idempotency idempotent.Store
	// Ready reports, for /readyz, nil once the process is ready (deployment.md, "Health and
	// readiness"), or why it is not.
	Ready    func() *NotReady
	Log      *zap.Logger
	Observer Observer // the HTTP metrics; may be nil
	// Unavailable classifies the errors that mean the database is out of reach for now
	// (Listener.Unavailable).
	Unavailable func(error) bool
}

// NotReady is why a process is not ready: the status /readyz answers with its 503, and a
// sentence for the operator.
type NotReady struct {
	Status wire.HealthStatus
	Reason string
}
