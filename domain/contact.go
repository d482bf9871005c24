package domain

import (
	"maps"
	"slices"
	"sort"
	"time"
)

// ContactProfile is the part of a contact a request may set. A nil field is left as it is;
// an empty string clears it (decisions.md "Contacts and tags").
type ContactProfile struct {
	FirstName    *string
	LastName     *string
	Phone        *string
	CustomFields map[string]string
}

// Validate enforces the field limits of decisions.md.
func (p ContactProfile) Validate() error {
	for _, f := range []struct {
		name  string
		value *string
		max   int
	}{{"firstName", p.FirstName, MaxNameLength}, {"lastName", p.LastName, MaxNameLength}, {"phone", p.Phone, MaxPhoneLength}} {
		if f.value != nil {
			if err := checkLength(f.name, *f.value, f.max); err != nil {
				return err
			}
		}
	}
	if len(p.CustomFields) > MaxFieldsPerRequest {
		return InvalidField("customFields", "at most %d customFields", MaxFieldsPerRequest)
	}
	for id, v := range p.CustomFields {
		if err := checkLength("customFields."+id, v, MaxCustomFieldValue); err != nil {
			return err
		}
	}
	return nil
}

// Contact is a person of an account, identified by email (ContactIDFor).
type Contact struct {
	id           string
	accountID    string
	email        string
	exists       bool
	erased       bool
	firstName    string
	lastName     string
	phone        string
	customFields map[string]string
	tags         map[string]bool
	leadByCRM    map[string]string // CRM id → the contact's latest lead there
	changes
}

// ContactStream returns an empty contact to load stream id into.
func ContactStream(id string) *Contact {
	return &Contact{id: id, customFields: map[string]string{}, tags: map[string]bool{}, leadByCRM: map[string]string{}}
}

// StreamID is the contact id.
func (c *Contact) StreamID() string { return c.id }

// Exists tells whether the contact was created.
func (c *Contact) Exists() bool { return c.exists }

// AccountID is the account the contact belongs to.
func (c *Contact) AccountID() string { return c.accountID }

// Email is the address the contact was created with, in the casing of its first write.
func (c *Contact) Email() string { return c.email }

// HasTag tells whether the tag is on the contact.
func (c *Contact) HasTag(tagID string) bool { return c.tags[tagID] }

// ErrContactErased is the answer to a write to an erased contact: to the client, the contact
// is not found; an upsert by email takes it as the sign to create a new contact under the next
// id of that email (commands.Repository.contactIDFor).
var ErrContactErased = NotFound("contact not found")

// Erased tells whether the contact was erased.
func (c *Contact) Erased() bool { return c.erased }

// Erase forgets the contact (ContactErased). A contact that does not exist, or no longer does,
// is not found.
func (c *Contact) Erase(now time.Time) error {
	if !c.exists {
		return NotFound("contact not found")
	}
	c.record(ContactErased{ContactID: c.id, AccountID: c.accountID, ErasedAt: now.UTC()})
	return nil
}

// Upsert creates the contact, or overwrites the fields present in p that differ.
// It reports whether the contact was created.
func (c *Contact) Upsert(accountID, email string, p ContactProfile) (created bool, err error) {
	if err := p.Validate(); err != nil {
		return false, err
	}
	if c.erased {
		return false, ErrContactErased
	}
	if !c.exists {
		c.record(ContactCreated{
			ContactID: c.id, AccountID: accountID, Email: email,
			FirstName: deref(p.FirstName), LastName: deref(p.LastName), Phone: deref(p.Phone),
			CustomFields: nonEmpty(p.CustomFields),
		})
		return true, nil
	}
	update := ContactUpdated{ContactID: c.id}
	changed := false
	for _, f := range []struct {
		next    *string
		current string
		out     **string
	}{{p.FirstName, c.firstName, &update.FirstName}, {p.LastName, c.lastName, &update.LastName}, {p.Phone, c.phone, &update.Phone}} {
		if f.next != nil && *f.next != f.current {
			*f.out = f.next
			changed = true
		}
	}
	for id, v := range p.CustomFields {
		if c.customFields[id] != v {
			if update.CustomFields == nil {
				update.CustomFields = map[string]string{}
			}
			update.CustomFields[id] = v
			changed = true
		}
	}
	if changed {
		c.record(update)
	}
	return false, nil
}

// AddTags applies every tag the contact does not have yet, each followed by the automations the
// contact itself records. It returns the newly applied tags, whose cross-aggregate automations
// (crm.move) the caller runs. A tag the contact already has runs nothing again.
func (c *Contact) AddTags(tags []TagRef) []TagRef {
	var applied []TagRef
	for _, t := range tags {
		if c.tags[t.ID] {
			continue
		}
		c.record(TagApplied{ContactID: c.id, TagID: t.ID, TagName: t.Name})
		for _, a := range t.Automations {
			switch a.Type {
			case AutomationEmailSend:
				c.record(EmailQueued{ContactID: c.id, TagID: t.ID, Subject: a.Subject, Body: a.Body})
			case AutomationCampaignEnroll:
				c.record(CampaignEnrolled{ContactID: c.id, TagID: t.ID, CampaignID: a.CampaignID})
			}
		}
		applied = append(applied, t)
	}
	return applied
}

// RemoveTags takes the tags off the contact; tags it does not have are ignored.
func (c *Contact) RemoveTags(tags []TagRef) {
	for _, t := range tags {
		if c.tags[t.ID] {
			c.record(TagRemoved{ContactID: c.id, TagID: t.ID, TagName: t.Name})
		}
	}
}

// LeadIn returns the contact's latest lead in a CRM, or "".
func (c *Contact) LeadIn(crmID string) string { return c.leadByCRM[crmID] }

// AssignLead records that a lead was opened for the contact. It lives on the contact's stream so
// that two concurrent decisions to open the contact's lead in one CRM conflict, and only one wins.
func (c *Contact) AssignLead(leadID, crmID string) {
	c.record(LeadAssigned{ContactID: c.id, LeadID: leadID, CRMID: crmID})
}

// HasCustomFieldValues tells whether the contact holds a value of a custom field: whether its
// Snapshot needs the account's field names.
func (c *Contact) HasCustomFieldValues() bool {
	for _, v := range c.customFields {
		if v != "" {
			return true
		}
	}
	return false
}

// Snapshot is the contact as outbound events show it. fieldNames labels the custom fields.
func (c *Contact) Snapshot(fieldNames map[string]string) ContactSnapshot {
	snap := ContactSnapshot{
		ContactID: c.id, Email: c.email, FirstName: c.firstName, LastName: c.lastName, Phone: c.phone,
		CustomFields: map[string]string{}, CustomFieldsLabeled: []LabeledValue{},
	}
	ids := make([]string, 0, len(c.customFields))
	for id, v := range c.customFields {
		if v != "" {
			snap.CustomFields[id] = v
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		snap.CustomFieldsLabeled = append(snap.CustomFieldsLabeled, LabeledValue{ID: id, Label: fieldNames[id], Value: c.customFields[id]})
	}
	return snap
}

// ContactSnapshot is a contact at the moment of an event, carried by the events that outbound
// webhooks report, so that their payload depends on the event alone.
type ContactSnapshot struct {
	ContactID           string            `json:"contactId"`
	Email               string            `json:"email"`
	FirstName           string            `json:"firstName"`
	LastName            string            `json:"lastName"`
	Phone               string            `json:"phone"`
	CustomFields        map[string]string `json:"customFields"`
	CustomFieldsLabeled []LabeledValue    `json:"customFieldsLabeled"`
}

// LabeledValue is a custom field value with the field's name.
type LabeledValue struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	Value string `json:"value"`
}

// Replay applies one event of the contact's stream.
func (c *Contact) Replay(e Event) { c.when(e) }

func (c *Contact) record(e Event) {
	c.when(e)
	c.pending = append(c.pending, e)
}

func (c *Contact) when(e Event) {
	switch e := e.(type) {
	case ContactCreated:
		c.exists = true
		c.accountID = e.AccountID
		c.email = e.Email
		c.firstName, c.lastName, c.phone = e.FirstName, e.LastName, e.Phone
		for id, v := range e.CustomFields {
			c.customFields[id] = v
		}
	case ContactUpdated:
		setIf(&c.firstName, e.FirstName)
		setIf(&c.lastName, e.LastName)
		setIf(&c.phone, e.Phone)
		for id, v := range e.CustomFields {
			c.customFields[id] = v
		}
	case TagApplied:
		c.tags[e.TagID] = true
	case TagRemoved:
		delete(c.tags, e.TagID)
	case LeadAssigned:
		c.leadByCRM[e.CRMID] = e.LeadID
	case ContactErased:
		// Nothing of the person stays in memory either: only that the id is spent.
		*c = Contact{id: c.id, accountID: c.accountID, erased: true, customFields: map[string]string{},
			tags: map[string]bool{}, leadByCRM: map[string]string{}, changes: c.changes}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func setIf(dst *string, v *string) {
	if v != nil {
		*dst = *v
	}
}

func nonEmpty(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

// contactStateFormat numbers the layout of contactState: change it with the struct.
const contactStateFormat = 1

// contactState is a Contact's state as Restorable encodes it.
type contactState struct {
	Exists       bool              `json:"exists"`
	Erased       bool              `json:"erased,omitempty"`
	AccountID    string            `json:"accountId"`
	Email        string            `json:"email"`
	FirstName    string            `json:"firstName"`
	LastName     string            `json:"lastName"`
	Phone        string            `json:"phone"`
	CustomFields map[string]string `json:"customFields"`
	Tags         []string          `json:"tags"`
	LeadByCRM    map[string]string `json:"leadByCrm"`
}

// EncodeState returns the contact's state (Restorable).
func (c *Contact) EncodeState() ([]byte, error) {
	return encodeState(contactStateFormat, contactState{
		Exists: c.exists, Erased: c.erased, AccountID: c.accountID, Email: c.email,
		FirstName: c.firstName, LastName: c.lastName, Phone: c.phone,
		CustomFields: c.customFields, Tags: slices.Sorted(maps.Keys(c.tags)), LeadByCRM: c.leadByCRM,
	})
}

// RestoreState sets the state of an empty contact (Restorable).
func (c *Contact) RestoreState(data []byte) error {
	s, err := decodeState[contactState](data, contactStateFormat)
	if err != nil {
		return err
	}
	c.exists, c.erased, c.accountID, c.email = s.Exists, s.Erased, s.AccountID, s.Email
	c.firstName, c.lastName, c.phone = s.FirstName, s.LastName, s.Phone
	c.customFields, c.leadByCRM = s.CustomFields, s.LeadByCRM
	c.tags = make(map[string]bool, len(s.Tags))
	for _, id := range s.Tags {
		c.tags[id] = true
	}
	return nil
}
