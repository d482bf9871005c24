package httpapi

// IdempotentKeepingAfter is Idempotent with its own delay before the outcomes of a request that
// has not answered are kept (keepOutcomesAfter).
var IdempotentKeepingAfter = idempotentKeepingAfter
