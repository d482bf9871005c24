package service

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/funnelhq/funnel/commands"
	"github.com/funnelhq/funnel/domain"
	"github.com/funnelhq/funnel/infra/idempotency"
	"github.com/funnelhq/funnel/infra/pipeline"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// finishedErasures wraps the erasure command so that it returns once nothing of the person is
// left to read (decisions.md "Erasure"): every read model that holds personal data, the webhook
// outbox included, has applied the ContactErased (they delete or blank the person's rows), the
// kept Idempotency-Key answers that showed the person are rewritten, and the database's files no
// longer hold what they deleted (sqldb.ScrubErased), and no delivery a dispatcher claimed before
// the erasure is still being sent with the person's data (webhooks.Dispatcher.WaitErasedSends).
// Both APIs answer after it.
//
// An erasure whose ContactErased was recorded but whose process died before this finished (a
// kill -9) is finished by its retry: that retry is answered 404, as for any contact already
// erased, but only after the same steps.
type finishedErasures struct {
	next        commands.EraseContactHandler
	readModels  *pipeline.Tracker
	keptAnswers *idempotency.Store
	db          *sqldb.DB
	sends       erasedSends
}

// erasedSends waits for the webhook attempts in flight for an erased contact
// (webhooks.Dispatcher).
type erasedSends interface {
	WaitErasedSends(ctx context.Context, accountID, contactID string) error
}

// Handle erases the contact, then waits for the read models and scrubs the files.
func (f finishedErasures) Handle(ctx context.Context, cmd commands.EraseContact) (commands.EraseContactResult, error) {
	res, err := f.next.Handle(ctx, cmd)
	if err != nil {
		if domain.KindOf(err) == domain.KindNotFound {
			if finishErr := f.finishRecorded(ctx, cmd); finishErr != nil {
				return res, finishErr
			}
		}
		return res, err
	}
	return res, f.finish(ctx, cmd, res.Position, res.Types)
}

// finish waits for the read models to apply the ContactErased at position, rewrites the kept
// answers and scrubs the files.
func (f finishedErasures) finish(ctx context.Context, cmd commands.EraseContact, position int64, types []string) error {
	if err := f.readModels.WaitWrite(ctx, position, types); err != nil {
		return fmt.Errorf("app: erasure of %s recorded, read models not yet done: %w", cmd.ContactID, err)
	}
	if err := f.sends.WaitErasedSends(ctx, cmd.Meta.AccountID, cmd.ContactID); err != nil {
		return fmt.Errorf("app: erasure of %s recorded: %w", cmd.ContactID, err)
	}
	if _, err := f.keptAnswers.ForgetContact(ctx, cmd.Meta.AccountID, cmd.ContactID); err != nil {
		return fmt.Errorf("app: erasure of %s recorded: %w", cmd.ContactID, err)
	}
	if err := f.db.ScrubErased(ctx); err != nil {
		return fmt.Errorf("app: erasure of %s recorded: %w", cmd.ContactID, err)
	}
	return nil
}

// finishRecorded finishes the erasure of a contact of the caller's account whose ContactErased
// is in the log, when the erasure is asked again (its first answer may have been lost to a
// crash before it finished). Anything else not found is left as it is.
func (f finishedErasures) finishRecorded(ctx context.Context, cmd commands.EraseContact) error {
	if !domain.IsContactID(cmd.ContactID) {
		return nil
	}
	var position int64
	err := f.db.Read.QueryRowContext(ctx, `SELECT position FROM events WHERE stream_id = $1 AND type = $2 AND account_id = $3`,
		cmd.ContactID, domain.ContactErased{}.EventType(), cmd.Meta.AccountID).Scan(&position)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("app: erasure of %s: %w", cmd.ContactID, err)
	}
	return f.finish(ctx, cmd, position, []string{domain.ContactErased{}.EventType()})
}
