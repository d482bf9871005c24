package domain

import (
	"fmt"
	"math"
	"strings"
)

// Automation types a tag can run when it is applied to a contact.
const (
	AutomationEmailSend      = "email.send"
	AutomationCampaignEnroll = "campaign.enroll"
	AutomationCRMMove        = "crm.move"
)

// Automation is one action a tag runs when it is newly applied to a contact.
type Automation struct {
	Type       string `json:"type"`
	Subject    string `json:"subject,omitempty"`
	Body       string `json:"body,omitempty"`
	CampaignID string `json:"campaignId,omitempty"`
	CRMID      string `json:"crmId,omitempty"`
	StageID    string `json:"stageId,omitempty"`
}

// Validate checks that the automation names what its type needs.
func (a Automation) Validate() error {
	switch a.Type {
	case AutomationEmailSend:
		if strings.TrimSpace(a.Subject) == "" || strings.TrimSpace(a.Body) == "" {
			return Invalid("automation email.send needs subject and body")
		}
		if err := checkLength("automation subject", a.Subject, MaxNameLength); err != nil {
			return AtParam(err, "subject")
		}
		return AtParam(checkLength("automation body", a.Body, MaxTextLength), "body")
	case AutomationCampaignEnroll:
		if strings.TrimSpace(a.CampaignID) == "" {
			return InvalidField("campaignId", "automation campaign.enroll needs campaignId")
		}
		return AtParam(checkLength("automation campaignId", a.CampaignID, MaxNameLength), "campaignId")
	case AutomationCRMMove:
		if a.CRMID == "" || a.StageID == "" {
			return Invalid("automation crm.move needs crmId and stageId")
		}
		return nil
	case "":
		return InvalidField("type", "automation type is required")
	default:
		return InvalidField("type", "unknown automation type %q", a.Type)
	}
}

// Tag labels contacts; applying it runs its automations.
type Tag struct {
	id          string
	exists      bool
	name        string
	automations []Automation
	changes
}

// TagStream returns an empty tag to load stream id into.
func TagStream(id string) *Tag { return &Tag{id: id} }

// StreamID is the tag id.
func (t *Tag) StreamID() string { return t.id }

// Exists tells whether the tag was created.
func (t *Tag) Exists() bool { return t.exists }

// Create defines the tag. Its id derives from its name (TagIDFor), so a second tag with the same
// name lands on the same stream and is refused here.
func (t *Tag) Create(accountID, name string, order int, automations []Automation) error {
	name = strings.TrimSpace(name)
	if err := requireName("name", name); err != nil {
		return err
	}
	if t.exists {
		return Conflict("a tag named %q already exists", name)
	}
	if order < math.MinInt32 || order > math.MaxInt32 {
		return InvalidField("order", "order must be between %d and %d", math.MinInt32, math.MaxInt32)
	}
	if len(automations) > maxAutomationsPerTag {
		return InvalidField("automations", "a tag can have at most %d automations", maxAutomationsPerTag)
	}
	for i, a := range automations {
		if err := a.Validate(); err != nil {
			return UnderParam(err, fmt.Sprintf("automations[%d]", i))
		}
	}
	if automations == nil {
		automations = []Automation{}
	}
	t.record(TagCreated{TagID: t.id, AccountID: accountID, Name: name, Order: order, Automations: automations})
	return nil
}

// Replay applies one event of the tag's stream.
func (t *Tag) Replay(e Event) { t.when(e) }

func (t *Tag) record(e Event) {
	t.when(e)
	t.pending = append(t.pending, e)
}

func (t *Tag) when(e Event) {
	if e, ok := e.(TagCreated); ok {
		t.exists = true
		t.name = e.Name
		t.automations = e.Automations
	}
}

// TagRef is what applying a tag needs to know of it.
type TagRef struct {
	ID          string
	Name        string
	Automations []Automation
}

// TagCreated defines a tag and its automations.
type TagCreated struct {
	TagID       string       `json:"tagId"`
	AccountID   string       `json:"accountId"`
	Name        string       `json:"name"`
	Order       int          `json:"order"`
	Automations []Automation `json:"automations"`
}

func (TagCreated) EventType() string { return "TagCreated" }

func init() { register(TagCreated{}, 1, nil) }
