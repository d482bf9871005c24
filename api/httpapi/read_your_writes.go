package httpapi

import (
	"context"
	"net/http"
	"time"

	"go.uber.org/zap"
)

// ReadModelWaiter lets a write wait until the read models show it.
type ReadModelWaiter interface {
	WaitReadModels(ctx context.Context, pos int64) error
	// WaitWrite waits only for the read models that show events of the types a write appended
	// (pipeline.Tracker.WaitWrite).
	WaitWrite(ctx context.Context, pos int64, types []string) error
}

// readYourWrites is how long a write waits for the read models to show it before it answers.
const readYourWrites = 10 * time.Second

// AwaitReadModels waits until the read models reached pos, the log position of a write
// (DESIGN.md invariant 6), so that the answer is what a GET right after returns. It reports
// false, having answered 503, in the rare case they do not within readYourWrites: the write is
// saved, and repeating the request is safe.
func AwaitReadModels(w http.ResponseWriter, r *http.Request, readModels ReadModelWaiter, pos int64) bool {
	return AwaitWrite(w, r, readModels, pos, nil)
}

// AwaitWrite is AwaitReadModels for a write that appended events of the given types: it waits
// only for the read models that show those (none when they are all applied inline, in the
// write's transaction); nil types wait for all.
func AwaitWrite(w http.ResponseWriter, r *http.Request, readModels ReadModelWaiter, pos int64, types []string) bool {
	ctx, cancel := context.WithTimeout(r.Context(), readYourWrites)
	defer cancel()
	if err := readModels.WaitWrite(ctx, pos, types); err != nil {
		if r.Context().Err() != nil {
			return false
		}
		logOf(r).Error("read models did not catch up with a write", zap.Int64("position", pos), zap.String("requestId", RequestID(r.Context())))
		w.Header().Set("Retry-After", "1")
		WriteError(w, http.StatusServiceUnavailable, "the change was saved but is not readable yet; retry the request")
		return false
	}
	return true
}
