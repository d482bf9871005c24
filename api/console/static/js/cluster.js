import { get } from './api.js';
import { h, when, errorBox } from './dom.js';

// clusterPage shows the live serve processes and what each runs (GET /admin/v1/cluster: the
// processes seen within the last 10 s, each with its role and the work whose lease it holds).
export async function clusterPage(main) {
  main.append(h('h1', {}, 'Cluster'));
  let res;
  try {
    res = await get('/cluster');
  } catch (err) {
    main.append(errorBox(err));
    return;
  }
  const processes = res.processes || [];
  main.append(h('div', { class: 'table-wrap' }, h('table', {},
    h('thead', {}, h('tr', {}, ['Process', 'Role', 'Host', 'PID', 'Started', 'Last seen', 'Runs'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, processes.map((p) => h('tr', { class: 'process', 'data-process': p.id, 'data-role': p.role },
      h('td', { class: 'mono' }, p.id), h('td', {}, p.role), h('td', {}, p.host), h('td', {}, String(p.pid)),
      h('td', {}, when(p.startedAt)), h('td', {}, when(p.lastSeenAt)),
      h('td', {}, (p.runs || []).map((r) => h('span', { class: 'chip run' }, r)))))))),
  h('p', { class: 'muted' }, processes.length + ' live process' + (processes.length === 1 ? '' : 'es') + '.'));
}
