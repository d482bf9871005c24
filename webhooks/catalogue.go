package webhooks

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/domain"
)

// outboundEvent is one entry of the table in events.go: an outbound event type, the filters that
// apply to it, the domain events that produce it and its made-up sample. define builds it.
type outboundEvent struct {
	name string
	// readScope reads the data the event carries: samples from the account's real events are
	// shown only to a key that holds it.
	readScope domain.Scope
	// aliases are legacy names subscriptions and samples accept for it; it is never sent under them.
	aliases []string
	filters []filter
	sources []mapping
	sample  func(now time.Time) any
	// payloadType is the generated wire type of its payload (api/wire), which the sample and
	// every mapping make.
	payloadType reflect.Type
	// holdsSecret tells whether a payload carries a secret, so that its delivery's body is
	// stored sealed (sealedWhen); nil when the event never does.
	holdsSecret func(data any) bool
}

// mapping makes the payload of an outbound event from a decoded domain event of one type,
// opening with open what the event keeps sealed.
type mapping struct {
	eventType string
	payload   func(e domain.Event, open Opener) (any, resources, error)
}

// source is a domain event type that produces an outbound event whose payload is a P.
type source[P any] struct {
	eventType string
	payload   func(domain.Event, Opener) (P, resources, error)
}

// from declares that every domain event of type E produces the outbound event; payload makes
// its data and names the resources it is about.
func from[E domain.Event, P any](payload func(E) (P, resources)) source[P] {
	return fromSealed(func(e E, _ Opener) (P, resources, error) {
		p, r := payload(e)
		return p, r, nil
	})
}

// fromChecked is from for a mapper that can fail (an answer that does not encode).
func fromChecked[E domain.Event, P any](payload func(E) (P, resources, error)) source[P] {
	return fromSealed(func(e E, _ Opener) (P, resources, error) { return payload(e) })
}

// fromSealed is from for a domain event that keeps a secret of its payload sealed with the
// server key (a purchase's activation token): payload opens it with open. When the secret cannot
// be opened (its key is not configured), payload returns an error that wraps errNotOpened,
// with the resources the event is about: the projector then records its deliveries as failed
// (Projector.deliveriesOf) rather than stop, or send the payload without its secret.
func fromSealed[E domain.Event, P any](payload func(E, Opener) (P, resources, error)) source[P] {
	var zero E
	eventType := zero.EventType()
	return source[P]{eventType: eventType, payload: func(e domain.Event, open Opener) (P, resources, error) {
		typed, ok := e.(E)
		if !ok {
			var none P
			return none, resources{}, fmt.Errorf("webhooks: a %s event decoded as %T", eventType, e)
		}
		return payload(typed, open)
	}}
}

// define declares an outbound event: its name, the scope that reads its data, the filters that
// apply to it, its made-up sample and the domain events it comes from. The sample and every
// source make the same payload type P, a generated wire type: a sample cannot drift from what is
// really delivered.
func define[P any](name string, readScope domain.Scope, filters []filter, sample func(now time.Time) P, sources ...source[P]) outboundEvent {
	e := outboundEvent{name: name, readScope: readScope, filters: filters, sample: func(now time.Time) any { return sample(now) },
		payloadType: reflect.TypeFor[P]()}
	for _, s := range sources {
		e.sources = append(e.sources, mapping{eventType: s.eventType, payload: func(d domain.Event, open Opener) (any, resources, error) {
			return s.payload(d, open)
		}})
	}
	return e
}

// sealedWhen says which payloads of the event carry a secret (checkout.purchased with an
// activation token): the body of their deliveries is stored sealed in the outbox.
func sealedWhen[P any](e outboundEvent, holdsSecret func(P) bool) outboundEvent {
	e.holdsSecret = func(data any) bool {
		p, ok := data.(P)
		return ok && holdsSecret(p)
	}
	return e
}

// alsoKnownAs adds legacy names of the event.
func (e outboundEvent) alsoKnownAs(aliases ...string) outboundEvent {
	e.aliases = append(e.aliases, aliases...)
	return e
}

// matches tells whether an event about r passes a subscription's filters: every filter that
// applies to this event type must let it through.
func (e *outboundEvent) matches(f domain.WebhookFilters, r resources) bool {
	for _, by := range e.filters {
		if !by.passes(f, r) {
			return false
		}
	}
	return true
}

// sourceTypes are the domain event types the event comes from.
func (e *outboundEvent) sourceTypes() []string {
	types := make([]string, len(e.sources))
	for i, s := range e.sources {
		types[i] = s.eventType
	}
	return types
}

// Catalogue is the table of outbound events (events.go), looked up by name and by the domain
// event type they come from.
type Catalogue struct {
	events   []*outboundEvent          // in the table's order: the contract's
	byName   map[string]*outboundEvent // names and legacy aliases
	bySource map[string]producer       // domain event types
}

// producer is the outbound event a domain event type produces, and how.
type producer struct {
	event   *outboundEvent
	mapping mapping
}

// newCatalogue indexes the table. A name or a domain event type listed twice is a mistake in
// the table, caught when the package loads: a domain event produces at most one outbound event,
// since the envelope and delivery ids derive from the domain event's id.
func newCatalogue(table ...outboundEvent) *Catalogue {
	c := &Catalogue{byName: map[string]*outboundEvent{}, bySource: map[string]producer{}}
	for i := range table {
		e := &table[i]
		c.events = append(c.events, e)
		for _, name := range append([]string{e.name}, e.aliases...) {
			if _, dup := c.byName[name]; dup {
				panic("webhooks: outbound event " + name + " is listed twice")
			}
			c.byName[name] = e
		}
		for _, m := range e.sources {
			if p, dup := c.bySource[m.eventType]; dup {
				panic("webhooks: " + m.eventType + " produces both " + p.event.name + " and " + e.name)
			}
			c.bySource[m.eventType] = producer{event: e, mapping: m}
		}
	}
	return c
}

// Names lists every outbound event type, in the contract's order (integration-api.md section 6).
func (c *Catalogue) Names() []string {
	names := make([]string, len(c.events))
	for i, e := range c.events {
		names[i] = e.name
	}
	return names
}

// EventDoc is what the docs list of an outbound event (docs/webhooks.md, written by
// `make generate`): its name, the scope that reads its data, the subscription filters that
// apply to it and the domain events it comes from.
type EventDoc struct {
	Name      string
	ReadScope string
	Filters   []string
	Sources   []string
}

// Docs lists every outbound event as the docs show it, in the contract's order.
func (c *Catalogue) Docs() []EventDoc {
	out := make([]EventDoc, len(c.events))
	for i, e := range c.events {
		d := EventDoc{Name: e.name, ReadScope: string(e.readScope), Sources: e.sourceTypes()}
		for _, f := range e.filters {
			d.Filters = append(d.Filters, f.member)
		}
		out[i] = d
	}
	return out
}

// Aliases lists the legacy names subscriptions and samples accept, in the table's order.
func (c *Catalogue) Aliases() []string {
	var aliases []string
	for _, e := range c.events {
		aliases = append(aliases, e.aliases...)
	}
	return aliases
}

// Schema is the name of the OpenAPI schema of an event's envelope (its body): the event's name in
// CamelCase and "Event", "checkout.subscription_cancelled" is CheckoutSubscriptionCancelledEvent.
func Schema(name string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(name, func(r rune) bool { return r == '.' || r == '_' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String() + "Event"
}

// Canonical checks the event types a subscription asks for (commands.OutboundEvents): a legacy
// alias becomes the type it stands for, repeats are dropped, and an unknown name is a
// domain.Invalid error. An empty list stays empty, for the subscription to refuse.
func (c *Catalogue) Canonical(names []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		e, ok := c.lookup(n)
		if !ok {
			return nil, domain.InvalidField("events", "events: unknown event type %q", n)
		}
		if !seen[e.name] {
			seen[e.name] = true
			out = append(out, e.name)
		}
	}
	return out, nil
}

// lookup finds an outbound event by its name or a legacy alias.
func (c *Catalogue) lookup(name string) (*outboundEvent, bool) {
	e, ok := c.byName[name]
	return e, ok
}

// handles tells whether domain events of a type produce an outbound event.
func (c *Catalogue) handles(eventType string) bool {
	_, ok := c.bySource[eventType]
	return ok
}

// toOutbound maps a recorded domain event to its outbound event, opening what it keeps sealed
// with open; ok is false for events that have none.
func (c *Catalogue) toOutbound(r domain.Recorded, open Opener) (o outbound, ok bool, err error) {
	if !c.handles(r.Type) {
		return outbound{}, false, nil
	}
	e, err := r.Decode()
	if err != nil {
		return outbound{}, false, fmt.Errorf("webhooks: decode %s: %w", r.Type, err)
	}
	return c.outboundOf(r, e, open)
}

// outboundOf maps the decoded event e of r to its outbound event. A secret that could not be
// opened is no error here: the outbound event says so (notOpened), for its deliveries to fail
// one by one.
func (c *Catalogue) outboundOf(r domain.Recorded, e domain.Event, open Opener) (o outbound, ok bool, err error) {
	p, ok := c.bySource[r.Type]
	if !ok {
		return outbound{}, false, nil
	}
	data, about, err := p.mapping.payload(e, open)
	var notOpened error
	if errors.Is(err, errNotOpened) {
		notOpened, data, err = err, nil, nil
	}
	if err != nil {
		return outbound{}, false, err
	}
	env := Envelope{ID: r.ID, Type: p.event.name, CreatedAt: wire.Time(r.OccurredAt), Data: data}
	return outbound{event: p.event, envelope: env, resources: about, notOpened: notOpened}, true, nil
}
