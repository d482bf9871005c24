import { get, post, enc } from './api.js';
import { h, when, badge, errorBox, humanType } from './dom.js';
import { pager } from './pager.js';
import { accountHeader } from './accounts.js';
import { confirmAction } from './confirm.js';

// webhooksPage lists an account's webhook subscriptions (custom, Zapier, Make and REST Hook).
export async function webhooksPage(main, accountId) {
  await accountHeader(main, accountId, 'webhooks');
  const body = h('tbody');
  const section = h('section', {}, h('div', { class: 'table-wrap' }, h('table', {},
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'URL'), h('th', { scope: 'col' }, 'Kind'), h('th', { scope: 'col' }, 'Events'), h('th', { scope: 'col' }, 'Status'), h('th', { scope: 'col' }, 'Created'))),
    body)));
  main.append(h('h2', {}, 'Webhook subscriptions'), section);
  pager(section, body, async (cursor, limit) => {
    const page = await get('/accounts/' + enc(accountId) + '/webhooks', { limit, cursor });
    return { items: page.webhooks, next: page.nextCursor };
  }, (w) => h('tr', {},
    h('td', { class: 'url' }, h('a', { href: '#/accounts/' + enc(accountId) + '/webhooks/' + enc(w.id) }, w.url)),
    h('td', {}, w.kind),
    h('td', {}, w.events.map((e) => h('span', { class: 'chip' }, e))),
    h('td', {}, badge(w.status), w.statusReason ? ' ' + w.statusReason : ''),
    h('td', {}, when(w.createdAt))), { empty: 'No webhook subscriptions.' });
}

// deliveriesPage shows one subscription's delivery log, filtered by status: each delivery with
// its attempts (time, status code, error, duration), and a retry of one delivery.
export async function deliveriesPage(main, accountId, webhookId, query) {
  const base = '#/accounts/' + enc(accountId) + '/webhooks/' + enc(webhookId);
  const crumb = h('span', {}, ' › ', h('a', { href: '#/accounts/' + enc(accountId) + '/webhooks' }, 'Webhooks'), ' › ', h('span', { class: 'mono' }, webhookId));
  await accountHeader(main, accountId, 'webhooks', crumb);
  main.querySelector('h1').textContent = 'Deliveries of ' + webhookId;
  const status = query.get('status') || '';
  const filter = h('nav', { class: 'filters', 'aria-label': 'Delivery status' },
    ['', 'pending', 'succeeded', 'failed'].map((s) => h('a', { href: base + (s ? '?status=' + s : ''), 'aria-current': s === status ? 'page' : null }, s || 'all')));
  const notice = h('div', { 'aria-live': 'polite' });
  const body = h('tbody');
  const section = h('section', {}, h('div', { class: 'table-wrap' }, h('table', { class: 'deliveries' },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Event'), h('th', { scope: 'col' }, 'Status'), h('th', { scope: 'col' }, 'Attempts'),
      h('th', { scope: 'col' }, 'Last answer'), h('th', { scope: 'col' }, 'Next attempt'), h('th', { scope: 'col' }, 'Actions'))),
    body)));
  const refresh = h('button', { type: 'button', class: 'quiet', id: 'refresh-deliveries' }, 'Refresh');
  main.append(
    h('p', { class: 'links' }, h('a', { href: base + '/timeline' }, 'Timeline of this subscription')),
    h('div', { class: 'row between' }, filter, refresh), notice, section, replayHook());
  const reload = pager(section, body, async (cursor, limit) => {
    const page = await get('/accounts/' + enc(accountId) + '/webhook-deliveries', { webhookId, status, limit, cursor });
    return { items: page.deliveries, next: page.nextCursor };
  }, (d) => deliveryRows(accountId, d, notice, () => reloadSoon()), { empty: 'No deliveries' + (status ? ' with that status' : '') + '.' });
  refresh.addEventListener('click', () => reload());
  // After a retry the attempt happens at once in the background: look again shortly after.
  function reloadSoon() {
    reload();
    setTimeout(() => { if (body.isConnected) reload(); }, 1000);
    setTimeout(() => { if (body.isConnected) reload(); }, 3000);
  }
}

function deliveryRows(accountId, d, notice, afterRetry) {
  const last = d.attempts.length ? d.attempts[d.attempts.length - 1] : null;
  const detailsId = 'attempts-' + d.id;
  const detail = h('tr', { class: 'attempts', id: detailsId, hidden: true }, h('td', { colspan: 6 }, attemptsTable(d)));
  const toggle = h('button', { type: 'button', class: 'quiet', 'aria-expanded': 'false', 'aria-controls': detailsId, 'data-delivery': d.id }, 'Attempts');
  toggle.addEventListener('click', () => {
    detail.hidden = !detail.hidden;
    toggle.setAttribute('aria-expanded', String(!detail.hidden));
  });
  const retry = h('button', { type: 'button', class: 'retry', 'data-delivery': d.id }, 'Retry');
  retry.addEventListener('click', async () => {
    const ok = await confirmAction('Retry this delivery?', 'The ' + d.eventType + ' event (delivery ' + d.id + ') is sent to the receiver again now, with the same ids and body.', 'Retry now');
    if (!ok) {
      return;
    }
    retry.disabled = true;
    try {
      await post('/accounts/' + enc(accountId) + '/webhook-deliveries/' + enc(d.id) + '/retry');
      notice.replaceChildren(h('p', { class: 'ok', role: 'status' }, 'Delivery ' + d.id + ' is being sent again; the log below shows how it went.'));
      afterRetry();
    } catch (err) {
      notice.replaceChildren(errorBox(err));
      retry.disabled = false;
    }
  });
  const row = h('tr', { class: 'delivery', 'data-delivery': d.id, 'data-status': d.status },
    h('td', {}, h('span', { title: d.eventId }, humanType(d.eventType)), h('div', { class: 'muted small mono' }, d.id)),
    h('td', {}, badge(d.status)),
    h('td', {}, String(d.attempts.length)),
    h('td', {}, last ? [answerOf(last), last.error ? h('div', { class: 'small error-text' }, last.error) : null] : h('span', { class: 'muted' }, 'none yet')),
    h('td', {}, d.nextAttemptAt ? when(d.nextAttemptAt) : h('span', { class: 'muted' }, '—')),
    h('td', { class: 'actions' }, toggle, ' ', retry));
  return [row, detail];
}

function answerOf(a) {
  return a.statusCode ? badge(String(a.statusCode), a.statusCode < 300 ? 'succeeded' : 'failed') : badge('no answer', 'failed');
}

function attemptsTable(d) {
  if (!d.attempts.length) {
    return h('p', { class: 'muted' }, 'Not attempted yet.' + (d.lastError ? ' ' + d.lastError : ''));
  }
  return h('table', { class: 'inner' },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'At'), h('th', { scope: 'col' }, 'Status code'), h('th', { scope: 'col' }, 'Error'), h('th', { scope: 'col' }, 'Duration'))),
    h('tbody', {}, d.attempts.map((a) => h('tr', {},
      h('td', {}, when(a.at)), h('td', {}, answerOf(a)), h('td', { class: 'error-text' }, a.error || ''), h('td', {}, a.durationMs + ' ms')))));
}

// replayHook marks where the replay of a time window goes. Issue 24 brings replay to the
// integration API; the operator API has no replay yet, and the console only offers what the
// operator API does.
function replayHook() {
  return h('section', { class: 'hook', 'data-hook': 'replay' },
    h('h2', {}, 'Replay a time window'),
    h('p', { class: 'muted' }, 'Not available yet: the operator API has no replay endpoint in this build. The console will offer it once the API does.'));
}
