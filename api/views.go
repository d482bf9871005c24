package api

import "funnel/projections"

// contactView is a contact as the integration API shows it.
func contactView(c projections.Contact) object {
	tagIDs := c.TagIDs
	if tagIDs == nil {
		tagIDs = []string{}
	}
	fields := c.CustomFields
	if fields == nil {
		fields = map[string]string{}
	}
	return object{
		"id":           c.ID,
		"email":        c.Email,
		"firstName":    c.FirstName,
		"lastName":     c.LastName,
		"phone":        c.Phone,
		"tagIds":       tagIDs,
		"customFields": fields,
		"createdAt":    formatTime(c.CreatedAt),
		"updatedAt":    formatTime(c.UpdatedAt),
	}
}

// tagView is a tag as GET /api/v1/tags shows it.
func tagView(t projections.Tag) object {
	return object{"id": t.ID, "name": t.Name, "order": t.Order, "createdAt": formatTime(t.CreatedAt)}
}

// nonNil turns a nil slice into an empty one, so that JSON shows [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
