package projections

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/sqldb"
	"github.com/funnelhq/funnel/projections/paging"
)

// Tags is the read model of tags and their automations.
type Tags struct {
	readModel[writer]
	db        *sql.DB
	byAccount *cache[string, []domain.TagRef] // see CacheInvalidator
}

// NewTags reads the tags read model from db.
func NewTags(db *sql.DB) *Tags {
	return &Tags{
		readModel: eachEvent(db, "tags", []string{"tags"}, on(insertTag)),
		db:        db,
		byAccount: newCache[string, []domain.TagRef](1000),
	}
}

func insertTag(w writer, r domain.Recorded, e domain.TagCreated) error {
	automations, err := json.Marshal(e.Automations)
	if err != nil {
		return fmt.Errorf("tag automations: %w", err)
	}
	return w.exec(`INSERT INTO tags (id, account_id, name, name_key, sort_order, automations, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		e.TagID, e.AccountID, e.Name, domain.NameKey(e.Name), e.Order, string(automations), millis(r.OccurredAt))
}

// Tag is a tag as the APIs show it.
type Tag struct {
	ID          string
	AccountID   string
	Name        string
	Order       int
	Automations []domain.Automation
	CreatedAt   time.Time
}

const selectTags = `SELECT id, account_id, name, sort_order, automations, created_at FROM tags`

// AccountTags returns every tag of an account with its automations (commands.TagCatalogue).
// Every tagged write asks, so the answer is kept in memory until a tag event drops it.
func (t *Tags) AccountTags(ctx context.Context, accountID string) ([]domain.TagRef, error) {
	refs, ok, gen := t.byAccount.get(accountID)
	if ok {
		return refs, nil
	}
	tags, err := t.query(ctx, selectTags+` WHERE account_id = $1`, accountID)
	if err != nil {
		return nil, err
	}
	refs = make([]domain.TagRef, len(tags))
	for i, tag := range tags {
		refs[i] = domain.TagRef{ID: tag.ID, Name: tag.Name, Automations: tag.Automations}
	}
	t.byAccount.put(gen, accountID, refs)
	return refs, nil
}

// tagCursor is the sort key of a tag: order, then name.
type tagCursor struct {
	Order   int64  `json:"o"`
	NameKey string `json:"n"`
	ID      string `json:"i"`
}

// List returns one page of an account's tags, by order then name.
func (t *Tags) List(ctx context.Context, accountID string, page paging.Page) ([]Tag, string, error) {
	query := selectTags + ` WHERE account_id = $1`
	args := []any{accountID}
	if page.Cursor != "" {
		var c tagCursor
		if err := paging.DecodeCursor(page.Cursor, &c); err != nil {
			return nil, "", err
		}
		// Compared as BIGINT: a cursor's order may be any integer, whatever the column's width.
		query += ` AND (sort_order > CAST($2 AS BIGINT) OR (sort_order = CAST($2 AS BIGINT) AND (name_key > $3 OR (name_key = $3 AND id > $4))))`
		args = append(args, c.Order, c.NameKey, c.ID)
	}
	query += fmt.Sprintf(` ORDER BY sort_order, name_key, id LIMIT %d`, sqldb.TextLimit(page.Limit+1))
	tags, err := t.query(ctx, query, args...)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(tags) > page.Limit {
		tags = tags[:page.Limit]
		last := tags[len(tags)-1]
		next = paging.EncodeCursor(tagCursor{Order: int64(last.Order), NameKey: domain.NameKey(last.Name), ID: last.ID})
	}
	return tags, next, nil
}

// Get returns one tag of an account: a domain NotFound error when there is none, a domain
// Forbidden one when it belongs to another account (ofAccount).
func (t *Tags) Get(ctx context.Context, accountID, id string) (Tag, error) {
	row, err := t.byID(ctx, id)
	return ofAccount(row, err, row.AccountID, accountID, "tag")
}

// byID returns one tag of any account (ErrNotFound when there is none).
func (t *Tags) byID(ctx context.Context, id string) (Tag, error) {
	tags, err := t.query(ctx, selectTags+` WHERE id = $1`, id)
	if err != nil {
		return Tag{}, err
	}
	if len(tags) == 0 {
		return Tag{}, ErrNotFound
	}
	return tags[0], nil
}

func (t *Tags) query(ctx context.Context, query string, args ...any) ([]Tag, error) {
	tags, err := queryAll(ctx, t.db, scanTag, query, args...)
	if err != nil {
		return nil, fmt.Errorf("projections: query tags: %w", err)
	}
	return tags, nil
}

func scanTag(row interface{ Scan(...any) error }) (Tag, error) {
	var tag Tag
	var automations string
	var created int64
	if err := row.Scan(&tag.ID, &tag.AccountID, &tag.Name, &tag.Order, &automations, &created); err != nil {
		return Tag{}, err
	}
	if err := json.Unmarshal([]byte(automations), &tag.Automations); err != nil {
		return Tag{}, fmt.Errorf("tag automations: %w", err)
	}
	tag.CreatedAt = fromMillis(created)
	return tag, nil
}
