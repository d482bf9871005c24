// Package cluster lets several serve processes share one PostgreSQL database without doing the
// same work twice (operator-api.md "Several processes (PostgreSQL)"): each process says it is
// alive in cluster_processes, and every piece of work that must run on one process at a time (a
// projection, the webhook projector, the timers) is a lease in the leases table, held by one
// worker, renewed every second, spread over the live workers, and taken over by another worker
// when its holder stops renewing it (killed, hung, cut off from the database). On SQLite one
// process serves the file (sqldb.DB.Claim) and holds every lease.
//
// Leases are rows with an expiry rather than PostgreSQL advisory locks on a session: a hung
// process keeps its session, and its locks, open; an expiry it cannot renew ends its hold all the
// same. Holding a lease is not what keeps a projection's batch from being applied twice: the
// checkpoint, moved in the batch's transaction from the value the projector last read, does that
// (infra/pipeline). The lease keeps the work from being done twice.
package cluster

import "fmt"

// Role is what a serve process does (FUNNEL_ROLE, serve --role).
type Role string

const (
	// RoleAll serves both listeners and runs the background work: the default.
	RoleAll Role = "all"
	// RoleAPI serves both listeners and runs no background work.
	RoleAPI Role = "api"
	// RoleWorker runs the background work and serves the operator listener only (health, metrics,
	// the cluster view).
	RoleWorker Role = "worker"
)

// ParseRole reads FUNNEL_ROLE.
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case RoleAll, RoleAPI, RoleWorker:
		return r, nil
	case "":
		return RoleAll, nil
	}
	return "", fmt.Errorf("cluster: FUNNEL_ROLE must be all, api or worker, not %q", s)
}

// Works tells whether the role runs background work (and so takes leases).
func (r Role) Works() bool { return r != RoleAPI }

// ServesAPI tells whether the role serves the integration API listener.
func (r Role) ServesAPI() bool { return r != RoleWorker }
