package domain

import "strings"

// Lead is a deal of one contact in one CRM pipeline, at one stage.
type Lead struct {
	id        string
	exists    bool
	accountID string
	crmID     string
	stageID   string
	contactID string
	title     string
	amount    int64
	changes
}

// LeadStream returns an empty lead to load stream id into.
func LeadStream(id string) *Lead { return &Lead{id: id} }

// StreamID is the lead id.
func (l *Lead) StreamID() string { return l.id }

// Exists tells whether the lead was created.
func (l *Lead) Exists() bool { return l.exists }

// AccountID is the account the lead belongs to.
func (l *Lead) AccountID() string { return l.accountID }

// CRMID is the pipeline the lead is in.
func (l *Lead) CRMID() string { return l.crmID }

// Create opens the lead at a stage of crm for a contact.
func (l *Lead) Create(accountID string, crm *CRM, stageID, contactID, title string) error {
	title = strings.TrimSpace(title)
	if err := checkLength("title", title, MaxNameLength); err != nil {
		return err
	}
	if !crm.HasStage(stageID) {
		return InvalidField("stageId", "stageId is not a stage of this CRM")
	}
	l.record(LeadCreated{LeadID: l.id, AccountID: accountID, CRMID: crm.StreamID(), StageID: stageID, ContactID: contactID, Title: title})
	return nil
}

// MoveTo puts the lead at another stage of its CRM; moving it where it is records nothing.
func (l *Lead) MoveTo(crm *CRM, stageID string) error {
	if !crm.HasStage(stageID) {
		return InvalidField("stageId", "stageId is not a stage of this CRM")
	}
	if stageID != l.stageID {
		l.record(LeadMoved{LeadID: l.id, ContactID: l.contactID, CRMID: l.crmID, FromStageID: l.stageID, ToStageID: stageID})
	}
	return nil
}

// Update changes the title and the amount (minor units of the account's currency) when given
// and different.
func (l *Lead) Update(title *string, amount *int64) error {
	update := LeadUpdated{LeadID: l.id, ContactID: l.contactID}
	if title != nil {
		t := strings.TrimSpace(*title)
		if err := checkLength("title", t, MaxNameLength); err != nil {
			return err
		}
		if t != l.title {
			update.Title = &t
		}
	}
	if amount != nil {
		if *amount < 0 {
			return InvalidField("amount", "amount must not be negative")
		}
		if *amount != l.amount {
			update.Amount = amount
		}
	}
	if update.Title != nil || update.Amount != nil {
		l.record(update)
	}
	return nil
}

// Replay applies one event of the lead's stream.
func (l *Lead) Replay(e Event) { l.when(e) }

func (l *Lead) record(e Event) {
	l.when(e)
	l.pending = append(l.pending, e)
}

func (l *Lead) when(e Event) {
	switch e := e.(type) {
	case LeadCreated:
		l.exists = true
		l.accountID, l.crmID, l.stageID, l.contactID, l.title = e.AccountID, e.CRMID, e.StageID, e.ContactID, e.Title
	case LeadMoved:
		l.stageID = e.ToStageID
	case LeadUpdated:
		if e.Title != nil {
			l.title = *e.Title
		}
		if e.Amount != nil {
			l.amount = *e.Amount
		}
	}
}

// LeadCreated opens a lead. Its title is a personal value of the lead's contact: it defaults to
// the contact's email, and a title given routinely names the person (decisions.md "Erasure").
type LeadCreated struct {
	LeadID    string `json:"leadId"`
	AccountID string `json:"accountId"`
	CRMID     string `json:"crmId"`
	StageID   string `json:"stageId"`
	ContactID string `json:"contactId"`
	Title     string `json:"title"`
}

// LeadMoved puts a lead at another stage.
type LeadMoved struct {
	LeadID      string `json:"leadId"`
	ContactID   string `json:"contactId"`
	CRMID       string `json:"crmId"`
	FromStageID string `json:"fromStageId"`
	ToStageID   string `json:"toStageId"`
}

// LeadUpdated changes a lead's title or amount; absent members did not change. A new title is a
// personal value of the lead's contact, as LeadCreated's is; every LeadUpdated ever recorded
// names that contact (contactId), so its title is sealed under the contact's key.
type LeadUpdated struct {
	LeadID    string  `json:"leadId"`
	ContactID string  `json:"contactId"`
	Title     *string `json:"title,omitempty"`
	Amount    *int64  `json:"amount,omitempty"`
}

func (LeadCreated) EventType() string { return "LeadCreated" }
func (LeadMoved) EventType() string   { return "LeadMoved" }
func (LeadUpdated) EventType() string { return "LeadUpdated" }

// Lead events show in their contact's history.
func (e LeadCreated) ContactRef() string { return e.ContactID }
func (e LeadMoved) ContactRef() string   { return e.ContactID }
func (e LeadUpdated) ContactRef() string { return e.ContactID }

func init() {
	register(LeadCreated{}, 1, nil)
	personal(LeadCreated{}, "title")
	register(LeadMoved{}, 1, nil)
	register(LeadUpdated{}, 1, nil)
	personal(LeadUpdated{}, "title")
}

// leadStateFormat numbers the layout of leadState: change it with the struct.
const leadStateFormat = 1

// leadState is a Lead's state as Restorable encodes it.
type leadState struct {
	Exists    bool   `json:"exists"`
	AccountID string `json:"accountId"`
	CRMID     string `json:"crmId"`
	StageID   string `json:"stageId"`
	ContactID string `json:"contactId"`
	Title     string `json:"title"`
	Amount    int64  `json:"amount"`
}

// EncodeState returns the lead's state (Restorable).
func (l *Lead) EncodeState() ([]byte, error) {
	return encodeState(leadStateFormat, leadState{
		Exists: l.exists, AccountID: l.accountID, CRMID: l.crmID, StageID: l.stageID,
		ContactID: l.contactID, Title: l.title, Amount: l.amount,
	})
}

// RestoreState sets the state of an empty lead (Restorable).
func (l *Lead) RestoreState(data []byte) error {
	s, err := decodeState[leadState](data, leadStateFormat)
	if err != nil {
		return err
	}
	l.exists, l.accountID, l.crmID, l.stageID = s.Exists, s.AccountID, s.CRMID, s.StageID
	l.contactID, l.title, l.amount = s.ContactID, s.Title, s.Amount
	return nil
}
