package operator

import (
	"context"
	"net/http"
	"time"

	"github.com/funnelhq/funnel/api/httpapi"
	"github.com/funnelhq/funnel/api/wire"
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
	out := make([]httpapi.Object, 0, len(processes))
	for _, p := range processes {
		runs := p.Runs
		if runs == nil {
			runs = []string{}
		}
		out = append(out, httpapi.Object{"id": p.ID, "role": p.Role, "host": p.Host, "pid": p.PID,
			"startedAt": wire.Time(p.StartedAt), "lastSeenAt": wire.Time(p.LastSeenAt), "runs": runs})
	}
	httpapi.WriteJSON(w, http.StatusOK, httpapi.Object{"processes": out})
}
