package domain

import "time"

// ContactCreated is the first event of a contact's stream.
type ContactCreated struct {
	ContactID    string            `json:"contactId"`
	AccountID    string            `json:"accountId"`
	Email        string            `json:"email"`
	FirstName    string            `json:"firstName"`
	LastName     string            `json:"lastName"`
	Phone        string            `json:"phone"`
	CustomFields map[string]string `json:"customFields"`
}

// ContactUpdated carries only the fields that changed; an empty string is a cleared field.
type ContactUpdated struct {
	ContactID    string            `json:"contactId"`
	FirstName    *string           `json:"firstName,omitempty"`
	LastName     *string           `json:"lastName,omitempty"`
	Phone        *string           `json:"phone,omitempty"`
	CustomFields map[string]string `json:"customFields,omitempty"`
}

// TagApplied puts a tag on a contact.
type TagApplied struct {
	ContactID string `json:"contactId"`
	TagID     string `json:"tagId"`
	TagName   string `json:"tagName"`
}

// TagRemoved takes a tag off a contact.
type TagRemoved struct {
	ContactID string `json:"contactId"`
	TagID     string `json:"tagId"`
	TagName   string `json:"tagName"`
}

// EmailQueued records that a tag's email.send automation queued an email to the contact.
type EmailQueued struct {
	ContactID string `json:"contactId"`
	TagID     string `json:"tagId"`
	Subject   string `json:"subject"`
	Body      string `json:"body"`
}

// CampaignEnrolled records that a tag's campaign.enroll automation enrolled the contact.
type CampaignEnrolled struct {
	ContactID  string `json:"contactId"`
	TagID      string `json:"tagId"`
	CampaignID string `json:"campaignId"`
}

// LeadAssigned records on the contact that a lead was opened for it.
type LeadAssigned struct {
	ContactID string `json:"contactId"`
	LeadID    string `json:"leadId"`
	CRMID     string `json:"crmId"`
}

// ContactErased records that a contact was erased (the right to be forgotten, decisions.md
// "Erasure"): appending it destroys the contact's key, so every personal value sealed under it
// reads as null from then on. The contact's events stay in the log, in order.
type ContactErased struct {
	ContactID string    `json:"contactId"`
	AccountID string    `json:"accountId"`
	ErasedAt  time.Time `json:"erasedAt"`
}

func (ContactErased) EventType() string { return "ContactErased" }

// ContactRef puts the erasure in the contact's history.
func (e ContactErased) ContactRef() string { return e.ContactID }

// ErasedPerson is the contact whose key the erasure destroys (ErasingEvent).
func (e ContactErased) ErasedPerson() string { return e.ContactID }

func (ContactCreated) EventType() string   { return "ContactCreated" }
func (LeadAssigned) EventType() string     { return "LeadAssigned" }
func (ContactUpdated) EventType() string   { return "ContactUpdated" }
func (TagApplied) EventType() string       { return "TagApplied" }
func (TagRemoved) EventType() string       { return "TagRemoved" }
func (EmailQueued) EventType() string      { return "EmailQueued" }
func (CampaignEnrolled) EventType() string { return "CampaignEnrolled" }

// Every contact event indexes the contact's history (domain.ContactEvent).
func (e ContactCreated) ContactRef() string   { return e.ContactID }
func (e ContactUpdated) ContactRef() string   { return e.ContactID }
func (e TagApplied) ContactRef() string       { return e.ContactID }
func (e TagRemoved) ContactRef() string       { return e.ContactID }
func (e EmailQueued) ContactRef() string      { return e.ContactID }
func (e CampaignEnrolled) ContactRef() string { return e.ContactID }
func (e LeadAssigned) ContactRef() string     { return e.ContactID }

func init() {
	register(ContactCreated{}, 1, nil)
	personal(ContactCreated{}, "email", "firstName", "lastName", "phone", "customFields")
	register(ContactUpdated{}, 1, nil)
	personal(ContactUpdated{}, "firstName", "lastName", "phone", "customFields")
	register(TagApplied{}, 1, nil)
	register(TagRemoved{}, 1, nil)
	register(EmailQueued{}, 1, nil)
	register(CampaignEnrolled{}, 1, nil)
	register(LeadAssigned{}, 1, nil)
	register(ContactErased{}, 1, nil)
}
