package commands

import (
	"context"
	"reflect"
	"time"

	"go.uber.org/zap"
)

// Handler handles one command type.
type Handler[C any, R any] interface {
	Handle(ctx context.Context, cmd C) (R, error)
}

// Observer records the outcome of every command (metrics).
type Observer interface {
	CommandHandled(command string, took time.Duration, err error)
}

// decorate applies, once around every handler, the replay of an Idempotency-Key's earlier
// outcome (replayable) and then logging and metrics. Each command's constructor calls it, so a
// new command is logged, measured and replayable by being written, under its type's name
// (UpsertContact), which no one has to type again.
func decorate[C any, R any](h Handler[C, R], log *zap.Logger, obs Observer) Handler[C, R] {
	name := reflect.TypeFor[C]().Name()
	return replayable[C, R]{name: name, next: observed[C, R]{name: name, next: h, log: log.Named("commands"), obs: obs}}
}

type observed[C any, R any] struct {
	name string
	next Handler[C, R]
	log  *zap.Logger
	obs  Observer
}

func (o observed[C, R]) Handle(ctx context.Context, cmd C) (R, error) {
	start := time.Now()
	res, err := o.next.Handle(ctx, cmd)
	took := time.Since(start)
	o.obs.CommandHandled(o.name, took, err)
	if err != nil && !isExpected(err) {
		o.log.Error("command failed", zap.String("command", o.name), zap.Duration("took", took), zap.Error(err))
	} else if o.log.Core().Enabled(zap.DebugLevel) {
		o.log.Debug("command handled", zap.String("command", o.name), zap.Duration("took", took), zap.Error(err))
	}
	return res, err
}
