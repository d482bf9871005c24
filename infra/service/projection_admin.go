package service

import (
	"context"
	"errors"
	"sync"

	"github.com/funnelhq/funnel/api/operator"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/pipeline"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// projectionAdmin is what the operator API's projection endpoints use: ProjectionStatus and
// Rebuild on the service's database, with one rebuild of a read model at a time in this process
// (two at once would race to swap their tables in).
type projectionAdmin struct {
	db         *sqldb.DB
	secretKey  string // opens the personal values the log keeps sealed (Rebuild)
	mu         sync.Mutex
	rebuilding map[string]bool
}

func newProjectionAdmin(db *sqldb.DB, secretKey string) *projectionAdmin {
	return &projectionAdmin{db: db, secretKey: secretKey, rebuilding: map[string]bool{}}
}

// Statuses returns the log's head and how far each projection is.
func (p *projectionAdmin) Statuses(ctx context.Context) (int64, []operator.ProjectionStatus, error) {
	head, statuses, err := ProjectionStatus(ctx, p.db)
	if err != nil {
		return 0, nil, err
	}
	rebuildable := map[string]bool{}
	for _, r := range newReadModels(p.db, nil, nil, nil, nil).registry() {
		_, ok := r.projection.(pipeline.Rebuildable)
		rebuildable[r.projection.Name()] = ok
	}
	out := make([]operator.ProjectionStatus, len(statuses))
	for i, s := range statuses {
		out[i] = operator.ProjectionStatus{Name: s.Name, Position: s.Position, Behind: s.Behind, Rebuildable: rebuildable[s.Name]}
	}
	return head, out, nil
}

// Rebuild rebuilds one read model (Rebuild), refusing an unknown name (NotFound), the webhook
// outbox, a read model this process is rebuilding already, and a schema that is not this
// process's binary's (Conflict).
func (p *projectionAdmin) Rebuild(ctx context.Context, name string) (int64, error) {
	_, statuses, err := p.Statuses(ctx)
	if err != nil {
		return 0, err
	}
	known := false
	for _, s := range statuses {
		if s.Name == name {
			known = true
			if !s.Rebuildable {
				return 0, domain.Conflict("%s cannot be rebuilt: rebuilding it would send every delivery again", name)
			}
		}
	}
	if !known {
		return 0, domain.NotFound("no projection %q", name)
	}
	p.mu.Lock()
	if p.rebuilding[name] {
		p.mu.Unlock()
		return 0, domain.Conflict("%s is being rebuilt already", name)
	}
	p.rebuilding[name] = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.rebuilding, name)
		p.mu.Unlock()
	}()
	rebuiltTo, err := Rebuild(ctx, p.db, p.secretKey, name, nil)
	if errors.Is(err, sqldb.ErrSchemaNotCurrent) {
		// A process of an older release, still serving during an upgrade.
		return 0, domain.Conflict("%s cannot be rebuilt by this process: %v", name, err)
	}
	return rebuiltTo, err
}
