package api_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/gorilla/mux"

	"github.com/funnelhq/funnel/app/apptest"
	"github.com/funnelhq/funnel/infra/sqldb"
)

// Every route of the integration API is in /llms-full.txt, with its method.
func TestLLMsReferenceListsEveryRoute(t *testing.T) {
	svc := apptest.Shared(t, sqldb.SQLite)
	text := string(svc.API.Do(t, apptest.Request{Method: http.MethodGet, Path: "/llms-full.txt"}).Expect(t, http.StatusOK).Raw)
	vars := regexp.MustCompile(`\{(\w+)\}`)
	routes := 0
	err := svc.App.APIRouter().Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		path, err := route.GetPathTemplate()
		methods, merr := route.GetMethods()
		if err != nil || merr != nil || !strings.HasPrefix(path, "/api/v1/") {
			return nil
		}
		documented := vars.ReplaceAllString(path, ":$1")
		for _, m := range methods {
			routes++
			if !strings.Contains(text, m+" "+documented+" ") && !strings.Contains(text, m+" "+documented+"\n") {
				t.Errorf("llms-full.txt does not document %s %s", m, documented)
			}
		}
		return nil
	})
	if err != nil || routes == 0 {
		t.Fatalf("walked %d routes: %v", routes, err)
	}
}
