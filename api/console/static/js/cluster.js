import { get, APIError } from './api.js';
import { h, when, errorBox } from './dom.js';

// clusterPage shows the live processes and what each runs (GET /admin/v1/cluster). That endpoint
// arrives with issue 23: until this build's operator API has it (404), the page says so.
export async function clusterPage(main) {
  main.append(h('h1', {}, 'Cluster'));
  let res;
  try {
    res = await get('/cluster');
  } catch (err) {
    if (err instanceof APIError && (err.status === 404 || err.status === 405)) {
      main.append(h('section', { class: 'hook', 'data-hook': 'cluster' },
        h('p', { class: 'muted' }, 'Not available yet: this build\'s operator API has no cluster view (GET /admin/v1/cluster). The page shows the processes once it does.')));
      return;
    }
    main.append(errorBox(err));
    return;
  }
  const processes = res.processes || [];
  main.append(h('div', { class: 'table-wrap' }, h('table', {},
    h('thead', {}, h('tr', {}, ['Process', 'Role', 'Host', 'PID', 'Started', 'Last seen', 'Runs'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, processes.map((p) => h('tr', {},
      h('td', { class: 'mono' }, p.id), h('td', {}, p.role), h('td', {}, p.host), h('td', {}, String(p.pid)),
      h('td', {}, when(p.startedAt)), h('td', {}, when(p.lastSeenAt)),
      h('td', {}, (p.runs || []).map((r) => h('span', { class: 'chip' }, r)))))))),
  h('p', { class: 'muted' }, processes.length + ' live process' + (processes.length === 1 ? '' : 'es') + '.'));
}
