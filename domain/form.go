package domain

import (
	"strings"
	"time"
)

// Form collects answers on a page or an embed; each submission upserts its contact.
type Form struct {
	id        string
	exists    bool
	accountID string
	name      string
	fields    []Field
	tagIDs    []string
	changes
}

// FormStream returns an empty form to load stream id into.
func FormStream(id string) *Form { return &Form{id: id} }

// StreamID is the form id.
func (f *Form) StreamID() string { return f.id }

// Exists tells whether the form was created.
func (f *Form) Exists() bool { return f.exists }

// AccountID is the account the form belongs to.
func (f *Form) AccountID() string { return f.accountID }

// Fields are the form's fields, in order.
func (f *Form) Fields() []Field { return f.fields }

// Name is the form's name.
func (f *Form) Name() string { return f.name }

// TagIDs are the tags a submission applies to its contact.
func (f *Form) TagIDs() []string { return f.tagIDs }

// Create defines the form. tags are applied to the contact of every submission.
func (f *Form) Create(account *Account, name string, specs []FieldSpec, tags []TagRef, newID func() string) error {
	name = strings.TrimSpace(name)
	if err := requireName("name", name); err != nil {
		return err
	}
	if len(specs) == 0 {
		return InvalidField("fields", "fields: at least one field is required")
	}
	fields, err := defineFields("fields", specs, account, newID)
	if err != nil {
		return err
	}
	tagIDs := make([]string, len(tags))
	for i, t := range tags {
		tagIDs[i] = t.ID
	}
	f.record(FormCreated{FormID: f.id, AccountID: account.StreamID(), Name: name, Fields: fields, TagIDs: tagIDs})
	return nil
}

// Replay applies one event of the form's stream.
func (f *Form) Replay(e Event) { f.when(e) }

// Final tells that the form exists: its stream takes nothing after its FormCreated (Final).
func (f *Form) Final() bool { return f.exists }

// formStateFormat numbers the layout of formState: change it with the struct.
const formStateFormat = 1

// formState is the encoded state of a form (Restorable).
type formState struct {
	Exists    bool     `json:"exists"`
	AccountID string   `json:"accountId"`
	Name      string   `json:"name"`
	Fields    []Field  `json:"fields"`
	TagIDs    []string `json:"tagIds"`
}

// EncodeState returns the form's state (Restorable).
func (f *Form) EncodeState() ([]byte, error) {
	return encodeState(formStateFormat, formState{Exists: f.exists, AccountID: f.accountID, Name: f.name, Fields: f.fields, TagIDs: f.tagIDs})
}

// RestoreState sets the state of an empty form (Restorable).
func (f *Form) RestoreState(data []byte) error {
	st, err := decodeState[formState](data, formStateFormat)
	if err != nil {
		return err
	}
	f.exists, f.accountID, f.name, f.fields, f.tagIDs = st.Exists, st.AccountID, st.Name, st.Fields, st.TagIDs
	return nil
}

func (f *Form) record(e Event) {
	f.when(e)
	f.pending = append(f.pending, e)
}

func (f *Form) when(e Event) {
	if e, ok := e.(FormCreated); ok {
		f.exists, f.accountID, f.name, f.fields, f.tagIDs = true, e.AccountID, e.Name, e.Fields, e.TagIDs
	}
}

// Submission is one submission of a form: a stream of its own, since submissions of one form
// are independent facts.
type Submission struct {
	id string
	changes
}

// SubmissionStream returns a new submission.
func SubmissionStream(id string) *Submission { return &Submission{id: id} }

// StreamID is the submission id.
func (s *Submission) StreamID() string { return s.id }

// Replay applies one event of the submission's stream.
func (s *Submission) Replay(Event) {}

// Record records the submission, with the form and the contact as they were at that moment.
func (s *Submission) Record(form *Form, answers Answers, contact *ContactSnapshot, at time.Time) {
	fields := make([]SubmittedField, len(form.fields))
	for i, f := range form.fields {
		fields[i] = SubmittedField{Field: f, Value: answers[f.ID]} // nil: not answered
	}
	e := FormSubmitted{SubmissionID: s.id, FormID: form.id, FormName: form.name, AccountID: form.accountID, SubmittedAt: at.UTC(), Fields: fields, Contact: contact}
	if contact != nil {
		e.ContactID = contact.ContactID
	}
	s.pending = append(s.pending, e)
}

// FormCreated defines a form, its fields and the tags its submissions apply.
type FormCreated struct {
	FormID    string   `json:"formId"`
	AccountID string   `json:"accountId"`
	Name      string   `json:"name"`
	Fields    []Field  `json:"fields"`
	TagIDs    []string `json:"tagIds"`
}

// SubmittedField is a form field with the value submitted for it.
type SubmittedField struct {
	Field
	Value any `json:"value"`
}

// FormSubmitted records a submission with a snapshot of its form and contact, so that the
// form.submitted webhook depends on this event alone. Contact is nil (and ContactID empty)
// when no answer gave an email.
type FormSubmitted struct {
	SubmissionID string           `json:"submissionId"`
	FormID       string           `json:"formId"`
	FormName     string           `json:"formName"`
	AccountID    string           `json:"accountId"`
	ContactID    string           `json:"contactId"`
	SubmittedAt  time.Time        `json:"submittedAt"`
	Fields       []SubmittedField `json:"fields"`
	Contact      *ContactSnapshot `json:"contact"`
}

func (FormCreated) EventType() string   { return "FormCreated" }
func (FormSubmitted) EventType() string { return "FormSubmitted" }

// ContactRef puts a submission in its contact's history.
func (e FormSubmitted) ContactRef() string { return e.ContactID }

func init() {
	register(FormCreated{}, 1, nil)
	register(FormSubmitted{}, 1, nil)
	personal(FormSubmitted{}, append([]string{"fields.*.value"}, snapshotPaths("contact")...)...)
}
