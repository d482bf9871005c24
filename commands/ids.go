package commands

import (
	"strings"

	"github.com/funnelhq/funnel/domain"
)

// Prefixes of the ids this package hands out (domain.NewID). Ids are opaque to integrators; the
// prefix lets a command refuse an id of the wrong kind as unknown before it reads any stream, so
// that a stream is never loaded as the wrong aggregate.
const (
	crmPrefix          = "crm"
	stagePrefix        = "stg"
	leadPrefix         = "lead"
	formPrefix         = "form"
	fieldPrefix        = "fld"
	submissionPrefix   = "fsub" // "sub_" is checkout subscriptions' (as in Stripe); submissions made before keep their "sub_" ids
	eventTypePrefix    = "evt"
	questionPrefix     = "q"
	bookingPrefix      = "bkg"
	transactionPrefix  = "txn"
	subscriptionPrefix = "sub"
)

// Prefixes of the checkout catalogue: products, and their pricing tiers and bumps, whose ids
// webhook payloads and filters carry.
const (
	productPrefix     = "prod"
	pricingTierPrefix = "tier"
	bumpPrefix        = "bump"
)

// isID tells whether id has the shape of an id with that prefix.
func isID(id, prefix string) bool { return strings.HasPrefix(id, prefix+"_") }

// newIDs returns a generator of ids with a prefix, for the parts a domain method names
// (stages, fields, questions).
func newIDs(prefix string) func() string {
	return func() string { return domain.NewID(prefix) }
}
