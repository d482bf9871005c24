// Package api holds the service's two HTTP APIs, one package each, over shared plumbing:
//
//   - integration: the integration API (/api/v1, for integrators, with API keys and their
//     scopes) and /llms-full.txt, on FUNNEL_ADDR for FUNNEL_API_HOST;
//   - operator: the operator API (/admin/v1, for the app side, with the operator token) and
//     /metrics, on FUNNEL_ADMIN_ADDR;
//   - httpapi: what both share: routers (JSON 404 and 405, HEAD, health endpoints), the
//     middleware every request passes through (request ids, URL guard, panics, access log and
//     metrics), JSON answers and errors, request bodies, list pages, read-your-writes, the
//     views of resources both show, and webhook subscription creation.
//
// Each API reads the read side as it is (projections.Queries, webhooks.Queries), whose look-ups
// take the account and answer 404 or 403 themselves; infra/service/app.go builds it once for both. The black-box tests of this folder speak HTTP to both listeners (infra/service/servicetest).
package api
