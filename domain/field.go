package domain

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Contact fields a form field or a booking question can fill (integration-api.md section 2).
const (
	ContactFieldEmail     = "builtin:email"
	ContactFieldFirstName = "builtin:firstName"
	ContactFieldLastName  = "builtin:lastName"
	ContactFieldFullName  = "builtin:fullName"
	ContactFieldPhone     = "builtin:phone"
	customFieldPrefix     = "custom:"
)

// Field types of forms and booking questions.
var fieldTypes = map[string]bool{"text": true, "email": true, "phone": true, "textarea": true, "number": true, "checkbox": true, "select": true, "date": true}

// maxFields bounds the fields of a form or the questions of a calendar.
const maxFields = 100

// Field is a form field or a booking question: what a person answers, and where on the
// contact the answer goes.
type Field struct {
	ID           string `json:"id"`
	Label        string `json:"label"`
	Type         string `json:"type"`
	ContactField string `json:"contactField"`
	Required     bool   `json:"required"`
}

// FieldSpec is a field as the operator defines it, before it has an id.
type FieldSpec struct {
	Label        string
	Type         string
	ContactField string
	Required     bool
}

// defineFields validates field specs and gives each an id. Custom contact fields must be
// defined by the account.
func defineFields(what string, specs []FieldSpec, account *Account, newID func() string) ([]Field, error) {
	if len(specs) > maxFields {
		return nil, InvalidField(what, "%s: at most %d", what, maxFields)
	}
	fields := make([]Field, len(specs))
	filledBy := map[string]string{} // contact field -> label of the field that fills it
	for i, s := range specs {
		label := strings.TrimSpace(s.Label)
		at := fmt.Sprintf("%s[%d]", what, i)
		if err := requireName(what+".label", label); err != nil {
			return nil, AtParam(err, at+".label")
		}
		if !fieldTypes[s.Type] {
			return nil, InvalidField(at+".type", "%s.type %q must be one of text, email, phone, textarea, number, checkbox, select, date", what, s.Type)
		}
		if err := checkContactField(what, s.ContactField, account); err != nil {
			return nil, AtParam(err, at+".contactField")
		}
		if s.ContactField == ContactFieldEmail && !holdsText(s.Type) {
			return nil, InvalidField(at+".contactField", "%s: a %s field cannot hold an email; map builtin:email to a text or email field", at, s.Type)
		}
		for _, target := range contactTargets(s.ContactField) {
			if other, taken := filledBy[target]; taken {
				return nil, InvalidField(at+".contactField", "%s: %q and %q both fill %s; map each contact field once", what, other, label, target)
			}
			filledBy[target] = label
		}
		fields[i] = Field{ID: newID(), Label: label, Type: s.Type, ContactField: s.ContactField, Required: s.Required}
	}
	return fields, nil
}

// holdsText tells whether a field of a type answers with text: a checkbox answers true, a number
// field a number, neither of which is an email.
func holdsText(fieldType string) bool { return fieldType != "checkbox" && fieldType != "number" }

// contactTargets are the contact fields a mapping writes: builtin:fullName writes first and last
// name.
func contactTargets(cf string) []string {
	switch cf {
	case "":
		return nil
	case ContactFieldFullName:
		return []string{ContactFieldFirstName, ContactFieldLastName}
	}
	return []string{cf}
}

func checkContactField(what, cf string, account *Account) error {
	switch cf {
	case "", ContactFieldEmail, ContactFieldFirstName, ContactFieldLastName, ContactFieldFullName, ContactFieldPhone:
		return nil
	}
	if id, ok := strings.CutPrefix(cf, customFieldPrefix); ok {
		if !account.HasCustomField(id) {
			return Invalid("%s.contactField %q names an unknown custom field", what, cf)
		}
		return nil
	}
	return Invalid("%s.contactField %q must be builtin:email, builtin:firstName, builtin:lastName, builtin:fullName, builtin:phone or custom:{id}", what, cf)
}

// Answers are the values given for fields, by field id: strings, numbers (float64) or booleans.
type Answers map[string]any

// CheckAnswers validates answers against fields: every id must be a field, every required field
// answered, every value of its field's type. It returns the answers with values normalized
// (trimmed strings, numbers as float64).
func CheckAnswers(what string, fields []Field, answers map[string]any) (Answers, error) {
	byID := make(map[string]Field, len(fields))
	for _, f := range fields {
		byID[f.ID] = f
	}
	var unknown []string
	for id := range answers {
		if _, ok := byID[id]; !ok {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, InvalidField(oneOrList(what, unknown), "%s: unknown ids: %s", what, strings.Join(unknown, ", "))
	}
	out := Answers{}
	var missing []string
	for _, f := range fields {
		v, err := normalizeAnswer(what, f, answers[f.ID])
		if err != nil {
			return nil, err
		}
		if v == nil {
			if f.Required {
				missing = append(missing, f.ID)
			}
			continue
		}
		out[f.ID] = v
	}
	if len(missing) > 0 {
		return nil, InvalidField(oneOrList(what, missing), "%s: required fields missing: %s", what, strings.Join(missing, ", "))
	}
	return out, nil
}

// normalizeAnswer checks one value against its field; nil means "not answered".
func normalizeAnswer(what string, f Field, v any) (any, error) {
	name := fmt.Sprintf("%s.%s", what, f.ID)
	// A checkbox or number field mapped to builtin:email, defined before such a mapping was
	// refused (defineFields): an answer to it is no email. Unanswered stays unanswered.
	answered := func(normalized any) (any, error) {
		if f.ContactField == ContactFieldEmail {
			return nil, InvalidField(name, "%s must be an email address", name)
		}
		return normalized, nil
	}
	switch f.Type {
	case "checkbox":
		switch b := v.(type) {
		case nil:
			return nil, nil
		case bool:
			if !b {
				return nil, nil // an unticked box does not answer a required one
			}
			return answered(true)
		}
		return nil, InvalidField(name, "%s must be a boolean", name)
	case "number":
		switch n := v.(type) {
		case nil:
			return nil, nil
		case float64:
			return answered(n)
		case string:
			if strings.TrimSpace(n) == "" {
				return nil, nil
			}
			parsed, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
			if err != nil || math.IsNaN(parsed) || math.IsInf(parsed, 0) { // JSON has no NaN nor infinity
				return nil, InvalidField(name, "%s must be a number", name)
			}
			return answered(parsed)
		}
		return nil, InvalidField(name, "%s must be a number", name)
	}
	if v == nil {
		return nil, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, InvalidField(name, "%s must be a string", name)
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	if err := checkLength(name, s, MaxTextLength); err != nil {
		return nil, err
	}
	switch {
	case f.Type == "email" || f.ContactField == ContactFieldEmail:
		return NormalizeEmailField(name, s)
	case f.Type == "date":
		if _, err := time.Parse("2006-01-02", s); err != nil {
			if _, err := ParseTimestamp(s); err != nil {
				return nil, InvalidField(name, "%s must be a date (YYYY-MM-DD)", name)
			}
		}
	}
	return s, nil
}

// ContactMapping is what answers say about their contact.
type ContactMapping struct {
	Email   string // "" when no answer maps to builtin:email
	Profile ContactProfile
	// Values are the answers by contactField, as the scheduling.booked payload shows them.
	Values map[string]any
}

// Validate checks the contact fields the answers fill (their lengths), and names the answer at
// fault, what.<fieldId> as the request holds it, rather than the contact field, which the
// request does not have.
func (m ContactMapping) Validate(what string, fields []Field) error {
	err := m.Profile.Validate()
	var de *Error
	if err == nil || !errors.As(err, &de) {
		return err
	}
	for _, f := range fields {
		if slices.Contains(profileParams(f.ContactField), de.Param) {
			return AtParam(err, what+"."+f.ID)
		}
	}
	return err
}

// profileParams are the params ContactProfile.Validate names for the contact fields a mapping
// fills.
func profileParams(cf string) []string {
	switch cf {
	case ContactFieldFirstName:
		return []string{"firstName"}
	case ContactFieldLastName:
		return []string{"lastName"}
	case ContactFieldFullName:
		return []string{"firstName", "lastName"}
	case ContactFieldPhone:
		return []string{"phone"}
	}
	if id, ok := strings.CutPrefix(cf, customFieldPrefix); ok {
		return []string{"customFields." + id}
	}
	return nil
}

// MapToContact applies the field mapping: builtin fields to the contact's own fields,
// builtin:fullName split into first name (the first word) and last name (the rest), and
// custom:{id} to that custom field.
func MapToContact(fields []Field, answers Answers) ContactMapping {
	m := ContactMapping{Values: map[string]any{}}
	set := func(dst **string, v string) { *dst = &v }
	for _, f := range fields {
		v, ok := answers[f.ID]
		if !ok || f.ContactField == "" {
			continue
		}
		m.Values[f.ContactField] = v
		text := answerText(v)
		switch f.ContactField {
		case ContactFieldEmail:
			m.Email = text
		case ContactFieldFirstName:
			set(&m.Profile.FirstName, text)
		case ContactFieldLastName:
			set(&m.Profile.LastName, text)
		case ContactFieldPhone:
			set(&m.Profile.Phone, text)
		case ContactFieldFullName:
			first, rest := splitFullName(text)
			set(&m.Profile.FirstName, first)
			if rest != "" {
				set(&m.Profile.LastName, rest)
			}
		default:
			if id, ok := strings.CutPrefix(f.ContactField, customFieldPrefix); ok {
				if m.Profile.CustomFields == nil {
					m.Profile.CustomFields = map[string]string{}
				}
				m.Profile.CustomFields[id] = text
			}
		}
	}
	return m
}

// splitFullName splits a full name at its first space (any Unicode space: a tab or a no-break
// space pasted into a form counts too): the first word, and the rest, trimmed.
func splitFullName(name string) (first, rest string) {
	name = strings.TrimSpace(name)
	i := strings.IndexFunc(name, unicode.IsSpace)
	if i < 0 {
		return name, ""
	}
	return name[:i], strings.TrimSpace(name[i:])
}

// answerText is how an answer is stored on a contact field.
func answerText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	return fmt.Sprint(v)
}

// oneOrList is the param of an error about the ids of a map member (what): the one id's path
// when a single one is at fault, else the member itself.
func oneOrList(what string, ids []string) string {
	if len(ids) == 1 {
		return what + "." + ids[0]
	}
	return what
}
