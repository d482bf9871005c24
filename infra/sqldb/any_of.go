package sqldb

// AnyOf returns the condition that column holds one of values, and its arguments, its parameters
// numbered from from (the statement's earlier ones being exactly $1 to $from-1). On PostgreSQL it
// is one array parameter, `column = ANY($from)`, so that the statement's text is the same however
// many values it takes: pgx prepares every text it sees, in a cache of each connection that every
// other statement shares, and a list whose length varies (a rebuild's window of contacts, a claim's
// deliveries) filled it with texts used once. On SQLite it is an IN list of one parameter per value,
// which its planner reads as well.
func AnyOf(dialect Dialect, column string, from int, values []string) (string, []any) {
	if dialect == Postgres {
		return column + " = ANY(" + placeholder(dialect, from) + ")", []any{values}
	}
	args := make([]any, len(values))
	for i, v := range values {
		args[i] = v
	}
	return column + " IN (" + Placeholders(dialect, from, len(values)) + ")", args
}
