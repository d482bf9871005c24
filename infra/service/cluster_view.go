package service

import (
	"context"

	"github.com/funnelhq/funnel/api/operator"
	"github.com/funnelhq/funnel/infra/cluster"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// clusterView answers GET /admin/v1/cluster from the processes' heartbeats.
type clusterView struct{ db *sqldb.DB }

// Processes lists the live processes (operator.Cluster).
func (v clusterView) Processes(ctx context.Context) ([]operator.ClusterProcess, error) {
	list, err := cluster.List(ctx, v.db)
	if err != nil {
		return nil, err
	}
	out := make([]operator.ClusterProcess, len(list))
	for i, p := range list {
		out[i] = operator.ClusterProcess{ID: p.ID, Role: string(p.Role), Host: p.Host, PID: p.PID, StartedAt: p.StartedAt, LastSeenAt: p.LastSeenAt, Runs: p.Runs}
	}
	return out, nil
}
