package commands

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

type recordingObserver struct{ names []string }

func (o *recordingObserver) CommandHandled(command string, _ time.Duration, _ error) {
	o.names = append(o.names, command)
}

type failingHandler struct{}

func (failingHandler) Handle(context.Context, CreateTag) (CreateTagResult, error) {
	return CreateTagResult{}, errors.New("disk on fire")
}

// A handler is measured and logged under its command's type name, which nobody typed.
func TestDecorateNamesTheCommandByItsType(t *testing.T) {
	core, logs := observer.New(zap.ErrorLevel)
	obs := &recordingObserver{}
	h := decorate[CreateTag, CreateTagResult](failingHandler{}, zap.New(core), obs)

	if _, err := h.Handle(context.Background(), CreateTag{}); err == nil {
		t.Fatal("the decorated handler swallowed the error")
	}
	if len(obs.names) != 1 || obs.names[0] != "CreateTag" {
		t.Fatalf("observed %v, want [CreateTag]", obs.names)
	}
	entries := logs.FilterMessage("command failed").All()
	if len(entries) != 1 || entries[0].ContextMap()["command"] != "CreateTag" || entries[0].LoggerName != "commands" {
		t.Fatalf("logged %+v, want one 'command failed' entry of logger commands for CreateTag", logs.All())
	}
}

// Every constructor decorates: the handlers of NewHandlers all report under their own names.
func TestNewHandlersAreAllDecorated(t *testing.T) {
	obs := &recordingObserver{}
	h := NewHandlers(Dependencies{Log: zap.NewNop(), Observer: obs})
	// Commands that fail validation before touching the store are enough to see the decoration.
	_, _ = h.UpsertContact.Handle(context.Background(), UpsertContact{Email: "not an email"})
	_, _ = h.CreateLead.Handle(context.Background(), CreateLead{CRMID: "not-a-crm"})
	want := []string{"UpsertContact", "CreateLead"}
	if len(obs.names) != len(want) || obs.names[0] != want[0] || obs.names[1] != want[1] {
		t.Fatalf("observed %v, want %v", obs.names, want)
	}
}
