package domain

import "strings"

// PersonalEvent is implemented by events that carry personal data of a contact (decisions.md,
// "Erasure"): the event store seals the values at PersonalPaths under that contact's own key, so
// that erasing the contact (ContactErased) leaves them unreadable everywhere the log is copied.
// Person is "" for an event that names no contact (a form answered without an email): there is
// nobody to erase, and its values are stored as they are.
type PersonalEvent interface {
	Event
	Person() string
}

// personalPaths lists, per event type, where its personal values sit in its JSON data: member
// names separated by dots, "*" for every element of an array. This is the one list of personal
// data in the log; ids, tags, amounts, products, statuses and times are not in it. Each event
// type's entry is made by personal, in the init of the file that defines the event, beside its
// register.
var personalPaths = map[string][][]string{}

// personal records where the personal values of an event type sit in its data. Its argument is a
// PersonalEvent, so an event listed here cannot lack the Person that names whose key seals them.
func personal(zero PersonalEvent, paths ...string) {
	name := zero.EventType()
	if _, dup := personalPaths[name]; dup {
		panic("domain: personal data of an event type listed twice: " + name)
	}
	split := make([][]string, len(paths))
	for i, p := range paths {
		split[i] = strings.Split(p, ".")
	}
	personalPaths[name] = split
}

// snapshotPaths are the personal members of a ContactSnapshot at prefix.
func snapshotPaths(prefix string) []string {
	return []string{prefix + ".email", prefix + ".firstName", prefix + ".lastName", prefix + ".phone",
		prefix + ".customFields", prefix + ".customFieldsLabeled.*.value"}
}

// salePaths are the personal members of a Sale at prefix (the buyer and the buyer's contact).
func salePaths(prefix string) []string {
	return []string{prefix + "customer.email", prefix + "customer.name",
		prefix + "contact.email", prefix + "contact.firstName", prefix + "contact.lastName"}
}

// PersonalPaths returns where the personal values of an event type sit in its data (nil: none),
// each path split into its steps. The slices are shared: callers read them only.
func PersonalPaths(eventType string) [][]string {
	return personalPaths[eventType]
}

// PersonalTypes are the event types that may carry personal values.
func PersonalTypes() map[string]bool {
	out := make(map[string]bool, len(personalPaths))
	for t := range personalPaths {
		out[t] = true
	}
	return out
}

// RecordKeptAfterErasure is implemented by the personal events that record money of a
// transaction that outlives its person (decisions.md "Erasure": transactions and subscriptions
// keep their amounts, products and dates, financial records, without the person's data). One can
// still happen after the person's erasure, a refund of an erased buyer's purchase: it is no write
// to the person, so the event store records it with the person's values null, as the log reads
// every other event of an erased person, instead of refusing it as a write to an erased contact
// (ErrContactErased). The other events of a sale cannot come after the erasure: it is refused
// while a subscription is active, and a subscription no longer active records nothing more
// (Rebill, Cancel: a conflict).
type RecordKeptAfterErasure interface {
	PersonalEvent
	keptAfterErasure()
}

func (CheckoutRefunded) keptAfterErasure() {}

// ErasingEvent is implemented by the event that erases a person: appending it destroys the
// person's key in the same transaction (infra/eventstore), so the erasure and its record commit
// together or not at all.
type ErasingEvent interface {
	Event
	ErasedPerson() string
}

func (e ContactCreated) Person() string { return e.ContactID }
func (e ContactUpdated) Person() string { return e.ContactID }
func (e FormSubmitted) Person() string  { return e.ContactID }
func (e BookingCreated) Person() string { return e.ContactID }
func (e CheckoutPurchased) Person() string {
	return e.Sale.buyer()
}
func (e CheckoutRebilled) Person() string            { return e.Sale.buyer() }
func (e CheckoutRefunded) Person() string            { return e.Sale.buyer() }
func (e SubscriptionStarted) Person() string         { return e.Sale.buyer() }
func (e SubscriptionRenewed) Person() string         { return e.Sale.buyer() }
func (e SubscriptionCancelScheduled) Person() string { return e.Sale.buyer() }
func (e SubscriptionCancelled) Person() string       { return e.Sale.buyer() }
func (e CustomerCreated) Person() string             { return e.ContactID }
func (e CustomerRenamed) Person() string             { return e.ContactID }
func (e ActivationIssued) Person() string            { return e.ContactID }
func (e ActivationCompleted) Person() string         { return e.ContactID }
func (e LeadCreated) Person() string                 { return e.ContactID }
func (e LeadUpdated) Person() string                 { return e.ContactID }

// buyer is the contact a sale's personal values belong to.
func (s Sale) buyer() string {
	if s.Contact.ContactID != "" {
		return s.Contact.ContactID
	}
	return s.Customer.ContactID
}
