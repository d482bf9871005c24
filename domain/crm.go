package domain

import (
	"fmt"
	"strings"
)

// maxStages bounds the stages of one CRM pipeline.
const maxStages = 50

// Stage is one step of a CRM pipeline.
type Stage struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Order int    `json:"order"`
}

// CRM is a pipeline of ordered stages that leads move through.
type CRM struct {
	id        string
	exists    bool
	accountID string
	stages    []Stage
	changes
}

// CRMStream returns an empty CRM to load stream id into.
func CRMStream(id string) *CRM { return &CRM{id: id} }

// StreamID is the CRM id.
func (c *CRM) StreamID() string { return c.id }

// Exists tells whether the CRM was created.
func (c *CRM) Exists() bool { return c.exists }

// AccountID is the account the CRM belongs to.
func (c *CRM) AccountID() string { return c.accountID }

// HasStage tells whether a stage belongs to this CRM.
func (c *CRM) HasStage(stageID string) bool {
	for _, s := range c.stages {
		if s.ID == stageID {
			return true
		}
	}
	return false
}

// FirstStage is where a lead starts when no stage is named.
func (c *CRM) FirstStage() string { return c.stages[0].ID }

// Create defines the pipeline; stage ids come from newID, in the order given.
func (c *CRM) Create(accountID, name string, stageNames []string, newID func() string) error {
	name = strings.TrimSpace(name)
	if err := requireName("name", name); err != nil {
		return err
	}
	if len(stageNames) == 0 {
		return InvalidField("stages", "stages: at least one stage is required")
	}
	if len(stageNames) > maxStages {
		return InvalidField("stages", "stages: at most %d stages", maxStages)
	}
	stages := make([]Stage, len(stageNames))
	for i, n := range stageNames {
		n = strings.TrimSpace(n)
		if err := requireName(fmt.Sprintf("stages[%d].name", i), n); err != nil {
			return err
		}
		stages[i] = Stage{ID: newID(), Name: n, Order: i + 1}
	}
	c.record(CRMCreated{CRMID: c.id, AccountID: accountID, Name: name, Stages: stages})
	return nil
}

// Replay applies one event of the CRM's stream.
func (c *CRM) Replay(e Event) { c.when(e) }

func (c *CRM) record(e Event) {
	c.when(e)
	c.pending = append(c.pending, e)
}

func (c *CRM) when(e Event) {
	if e, ok := e.(CRMCreated); ok {
		c.exists = true
		c.accountID = e.AccountID
		c.stages = e.Stages
	}
}

// CRMCreated defines a CRM pipeline and its stages.
type CRMCreated struct {
	CRMID     string  `json:"crmId"`
	AccountID string  `json:"accountId"`
	Name      string  `json:"name"`
	Stages    []Stage `json:"stages"`
}

func (CRMCreated) EventType() string { return "CRMCreated" }

func init() { register(CRMCreated{}, 1, nil) }
