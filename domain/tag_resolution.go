package domain

import "fmt"

// TagRequest is the set of tags one request names, by id and by name.
type TagRequest struct {
	IDs   []string
	Names []string
}

// Empty tells whether the request names no tag at all.
func (r TagRequest) Empty() bool { return len(r.IDs) == 0 && len(r.Names) == 0 }

// Validate enforces the per-request limit on tag ids and names together.
func (r TagRequest) Validate() error {
	if len(r.IDs)+len(r.Names) > MaxTagsPerRequest {
		return Invalid("at most %d tagIds and tagNames together", MaxTagsPerRequest)
	}
	for i, n := range r.Names {
		if err := checkLength("tagNames", n, MaxNameLength); err != nil {
			return AtParam(err, fmt.Sprintf("tagNames[%d]", i))
		}
	}
	return nil
}

// TagResolution is the outcome of matching a TagRequest against the account's tags.
type TagResolution struct {
	// Tags resolved, without duplicates, ids first then names, in request order.
	Tags []TagRef
	// UnmatchedNames are requested names no tag has.
	UnmatchedNames []string
	// SkippedIDs are requested ids that are not tags of this account.
	SkippedIDs []string
}

// ResolveTags matches requested ids exactly and names case-insensitively after trimming.
// Unknown names are ignored and unknown ids skipped (integration-api.md section 4, rule 3).
func ResolveTags(catalogue []TagRef, req TagRequest) TagResolution {
	byID := make(map[string]TagRef, len(catalogue))
	byName := make(map[string]TagRef, len(catalogue))
	for _, t := range catalogue {
		byID[t.ID] = t
		byName[NameKey(t.Name)] = t
	}
	var res TagResolution
	seen := map[string]bool{}
	add := func(t TagRef) {
		if !seen[t.ID] {
			seen[t.ID] = true
			res.Tags = append(res.Tags, t)
		}
	}
	for _, id := range req.IDs {
		if t, ok := byID[id]; ok {
			add(t)
		} else {
			res.SkippedIDs = append(res.SkippedIDs, id)
		}
	}
	for _, name := range req.Names {
		if t, ok := byName[NameKey(name)]; ok {
			add(t)
		} else {
			res.UnmatchedNames = append(res.UnmatchedNames, name)
		}
	}
	return res
}
