import { get, post, enc } from './api.js';
import { h, errorBox } from './dom.js';
import { pager } from './pager.js';
import { confirmAction } from './confirm.js';

// projectionsPage shows how far each read model is (position, events behind) and rebuilds one
// from the event log, as `funnel projections list` and `rebuild` do.
export function projectionsPage(main) {
  const notice = h('div', { 'aria-live': 'polite' });
  const body = h('tbody');
  const section = h('section', {}, h('div', { class: 'table-wrap' }, h('table', { class: 'projections' },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Projection'), h('th', { scope: 'col', class: 'num' }, 'Position'), h('th', { scope: 'col', class: 'num' }, 'Behind'), h('th', { scope: 'col' }, 'Rebuild'))),
    body)));
  const refresh = h('button', { type: 'button', class: 'quiet' }, 'Refresh');
  main.append(h('div', { class: 'row between' }, h('h1', {}, 'Projections'), refresh),
    h('p', { class: 'muted' }, 'Position: how far the read model reflects the event log. Behind: the events it has yet to apply. A rebuild replays the log into fresh tables while the old ones keep serving, then swaps them in.'),
    notice, section);
  const reload = pager(section, body, async (cursor, limit) => {
    const page = await get('/projections', { limit, cursor });
    return { items: page.projections, next: page.nextCursor };
  }, (p) => row(p, notice, () => reload()), { empty: 'No projections.', limit: 200 });
  refresh.addEventListener('click', () => reload());
}

function row(p, notice, reload) {
  const state = h('span', { class: 'state', 'aria-live': 'polite' });
  const button = h('button', { type: 'button', class: 'rebuild', 'data-projection': p.name, disabled: !p.rebuildable,
    title: p.rebuildable ? null : 'The webhook outbox cannot be rebuilt: every delivery would be sent again.' }, 'Rebuild');
  button.addEventListener('click', async () => {
    const ok = await confirmAction('Rebuild ' + p.name + '?', 'The ' + p.name + ' read model is rebuilt from the whole event log and swapped in; the current one keeps answering meanwhile.', 'Rebuild');
    if (!ok) {
      return;
    }
    button.disabled = true;
    state.textContent = 'Rebuilding…';
    try {
      const res = await post('/projections/' + enc(p.name) + '/rebuild');
      notice.replaceChildren(h('p', { class: 'ok', role: 'status', 'data-rebuilt': p.name }, p.name + ' rebuilt from the log up to position ' + res.rebuiltTo + ' and swapped in.'));
      reload();
    } catch (err) {
      state.textContent = '';
      notice.replaceChildren(errorBox(err));
      button.disabled = false;
    }
  });
  return h('tr', { 'data-projection': p.name },
    h('th', { scope: 'row', class: 'mono' }, p.name),
    h('td', { class: 'num' }, String(p.position)),
    h('td', { class: 'num' + (p.behind > 0 ? ' behind' : '') }, String(p.behind)),
    h('td', {}, button, ' ', state));
}
