package pipeline

import (
	"github.com/ThreeDotsLabs/watermill"
	"go.uber.org/zap"
)

// zapAdapter lets Watermill log through the service's zap logger. Watermill's info-level chatter
// (every subscription, every router start) goes to debug.
type zapAdapter struct{ log *zap.Logger }

func (z zapAdapter) Error(msg string, err error, fields watermill.LogFields) {
	z.log.Error(msg, append(zapFields(fields), zap.Error(err))...)
}
func (z zapAdapter) Info(msg string, fields watermill.LogFields) {
	z.log.Debug(msg, zapFields(fields)...)
}
func (z zapAdapter) Debug(msg string, fields watermill.LogFields) {
	z.log.Debug(msg, zapFields(fields)...)
}
func (z zapAdapter) Trace(string, watermill.LogFields) {}
func (z zapAdapter) With(fields watermill.LogFields) watermill.LoggerAdapter {
	return zapAdapter{log: z.log.With(zapFields(fields)...)}
}

func zapFields(fields watermill.LogFields) []zap.Field {
	out := make([]zap.Field, 0, len(fields))
	for k, v := range fields {
		out = append(out, zap.Any(k, v))
	}
	return out
}
