package service

import (
	"context"
	"fmt"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/infra/idempotency"
	"github.com/funnelhq/funnel/infra/pipeline"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// finishedErasures wraps the erasure command so that it returns once nothing of the person is
// left to read (decisions.md "Erasure"): every read model that holds personal data, the webhook
// outbox included, has applied the ContactErased (they delete or blank the person's rows), the
// kept Idempotency-Key answers that showed the person are rewritten, and the database's files no
// longer hold what they deleted (sqldb.ScrubErased). Both APIs answer after it.
type finishedErasures struct {
	next        commands.EraseContactHandler
	readModels  *pipeline.Tracker
	keptAnswers *idempotency.Store
	db          *sqldb.DB
}

// Handle erases the contact, then waits for the read models and scrubs the files.
func (f finishedErasures) Handle(ctx context.Context, cmd commands.EraseContact) (commands.EraseContactResult, error) {
	res, err := f.next.Handle(ctx, cmd)
	if err != nil {
		return res, err
	}
	if err := f.readModels.WaitWrite(ctx, res.Position, res.Types); err != nil {
		return res, fmt.Errorf("app: erasure of %s recorded, read models not yet done: %w", cmd.ContactID, err)
	}
	if _, err := f.keptAnswers.ForgetContact(ctx, cmd.Meta.AccountID, cmd.ContactID); err != nil {
		return res, fmt.Errorf("app: erasure of %s recorded: %w", cmd.ContactID, err)
	}
	if err := f.db.ScrubErased(ctx); err != nil {
		return res, fmt.Errorf("app: erasure of %s recorded: %w", cmd.ContactID, err)
	}
	return res, nil
}
