package domain

import "testing"

// A checkbox or number field mapped to builtin:email, as a form defined before such a mapping was
// refused holds: unanswered (an unticked box, an empty number) stays unanswered, and an answer
// is refused, since it is no email.
func TestANonTextFieldMappedToTheEmailAnswersNothingOrIsRefused(t *testing.T) {
	fields := []Field{
		{ID: "fld_box", Label: "Box", Type: "checkbox", ContactField: ContactFieldEmail},
		{ID: "fld_num", Label: "Num", Type: "number", ContactField: ContactFieldEmail},
	}
	for _, answers := range []map[string]any{{"fld_box": false}, {"fld_num": ""}, {"fld_num": "  "}, {"fld_box": nil, "fld_num": nil}, {}} {
		if got, err := CheckAnswers("values", fields, answers); err != nil || len(got) != 0 {
			t.Errorf("%v: %v, %v; want unanswered", answers, got, err)
		}
	}
	for _, answers := range []map[string]any{{"fld_box": true}, {"fld_num": 42.0}, {"fld_num": "42"}} {
		if _, err := CheckAnswers("values", fields, answers); KindOf(err) != KindInvalid {
			t.Errorf("%v: %v, want refused", answers, err)
		}
	}
}
