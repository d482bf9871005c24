package operator

import (
	"context"
	"net/http"
	"time"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
	"github.com/funnelhq/funnel/api/wire/admin"
)

// Cluster lists the live serve processes that share the database (infra/cluster). An interface,
// so that this package imports no adapter.
type Cluster interface {
	Processes(ctx context.Context) ([]ClusterProcess, error)
}

// ClusterProcess is one live process and the work it runs now.
type ClusterProcess struct {
	ID, Role, Host        string
	PID                   int
	StartedAt, LastSeenAt time.Time
	Runs                  []string
}

// cluster serves GET /admin/v1/cluster: the processes seen within the last 10 s, and what each
// runs now (a name per projection, webhooks, dispatcher, timers, ...).
func (s *Server) cluster(w http.ResponseWriter, r *http.Request) {
	processes, err := s.deps.Cluster.Processes(r.Context())
	if err != nil {
		httpapi.Fail(w, r, err)
		return
	}
	out := make([]admin.ClusterProcess, 0, len(processes))
	for _, p := range processes {
		out = append(out, admin.ClusterProcess{Id: p.ID, Role: admin.ClusterProcessRole(p.Role), Host: p.Host, Pid: p.PID,
			StartedAt: wire.At(p.StartedAt), LastSeenAt: wire.At(p.LastSeenAt), Runs: wire.List(p.Runs)})
	}
	httpapi.Answer(w, http.StatusOK, admin.ClusterResponse{Success: true, Processes: out})
}
