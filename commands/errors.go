package commands

import (
	"context"
	"errors"

	"github.com/funnelhq/funnel/domain"
)

// isExpected tells refusals the caller caused (bad input, unknown ids, a cancelled request, a
// retry racing its own first attempt) from failures an operator should look at.
func isExpected(err error) bool {
	return domain.KindOf(err) != 0 || errors.Is(err, context.Canceled) || errors.Is(err, domain.ErrAlreadyPerformed)
}
