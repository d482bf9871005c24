import { get, post, enc } from './api.js';
import { h, when, whenText, badge, errorBox, humanType } from './dom.js';
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
  const notice = h('div', { 'aria-live': 'polite' });
  main.append(h('h2', {}, 'Webhook subscriptions'), notice, section);
  const reload = pager(section, body, async (cursor, limit) => {
    const page = await get('/accounts/' + enc(accountId) + '/webhooks', { limit, cursor });
    return { items: page.webhooks, next: page.nextCursor };
  }, (w) => h('tr', { class: 'webhook', 'data-webhook': w.id, 'data-status': w.status },
    h('td', { class: 'url' }, h('a', { href: '#/accounts/' + enc(accountId) + '/webhooks/' + enc(w.id) }, w.url)),
    h('td', {}, w.kind),
    h('td', {}, w.events.map((e) => h('span', { class: 'chip' }, e))),
    h('td', {}, badge(w.status), w.statusReason ? ' ' + w.statusReason : '',
      w.status === 'disabled' ? [' ', enableButton(accountId, w, notice, () => reload())] : null),
    h('td', {}, when(w.createdAt))), { empty: 'No webhook subscriptions.' });
}

// enableButton enables a disabled webhook (POST /webhooks/{id}/enable) once the operator confirmed
// what follows: it receives the events from now on, and nothing it missed meanwhile (a replay of
// that window sends it). onEnabled gets the webhook as the API answers it; a refusal is shown in
// notice.
function enableButton(accountId, w, notice, onEnabled) {
  const button = h('button', { type: 'button', class: 'enable', 'data-webhook': w.id }, 'Enable');
  button.addEventListener('click', async () => {
    const ok = await confirmAction('Enable this webhook?', 'Events are sent to ' + w.url + ' again from now on. What happened while it was disabled is not sent: replay that window for it.', 'Enable');
    if (!ok) {
      return;
    }
    button.disabled = true;
    try {
      const res = await post('/accounts/' + enc(accountId) + '/webhooks/' + enc(w.id) + '/enable');
      notice.replaceChildren(h('p', { class: 'ok', role: 'status', 'data-enabled': w.id }, 'Webhook ' + w.id + ' is active again: it receives the events from now on.'));
      onEnabled(res.webhook);
    } catch (err) {
      notice.replaceChildren(errorBox(err));
      button.disabled = false;
    }
  });
  return button;
}

// deliveriesPage shows one subscription's delivery log, filtered by status: each delivery with
// its attempts (time, status code, error, duration), a retry of one delivery, and a replay of a
// time window.
export async function deliveriesPage(main, accountId, webhookId, query) {
  const base = '#/accounts/' + enc(accountId) + '/webhooks/' + enc(webhookId);
  const crumb = h('span', {}, ' › ', h('a', { href: '#/accounts/' + enc(accountId) + '/webhooks' }, 'Webhooks'), ' › ', h('span', { class: 'mono' }, webhookId));
  await accountHeader(main, accountId, 'webhooks', crumb);
  main.querySelector('h1').textContent = 'Deliveries of ' + webhookId;
  const webhook = await findWebhook(accountId, webhookId);
  const status = query.get('status') || '';
  const filter = h('nav', { class: 'filters', 'aria-label': 'Delivery status' },
    ['', 'pending', 'succeeded', 'failed'].map((s) => h('a', { href: base + (s ? '?status=' + s : ''), 'aria-current': s === status ? 'page' : null }, s || 'all')));
  const notice = h('div', { 'aria-live': 'polite' });
  const body = h('tbody');
  const section = h('section', { 'aria-labelledby': 'log-title' }, h('div', { class: 'table-wrap' }, h('table', { class: 'deliveries' },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Event'), h('th', { scope: 'col' }, 'Status'), h('th', { scope: 'col' }, 'Attempts'),
      h('th', { scope: 'col' }, 'Last answer'), h('th', { scope: 'col' }, 'Next attempt'), h('th', { scope: 'col' }, 'Actions'))),
    body)));
  const refresh = h('button', { type: 'button', class: 'quiet', id: 'refresh-deliveries' }, 'Refresh');
  const enabled = h('div', { 'aria-live': 'polite' });
  main.append(
    webhookSummary(accountId, webhook, enabled), enabled,
    h('p', { class: 'links' }, h('a', { href: base + '/timeline' }, 'Timeline of this subscription')),
    replayForm(accountId, webhookId, webhook, () => follow(nothingDue)),
    h('h2', { id: 'log-title' }, 'Delivery log'),
    h('div', { class: 'row between' }, filter, refresh), notice, section);
  const shown = new Map(); // the deliveries of the log as last read, by id
  const reload = pager(section, body, async (cursor, limit) => {
    const page = await get('/accounts/' + enc(accountId) + '/webhook-deliveries', { webhookId, status, limit, cursor });
    if (!cursor) {
      shown.clear();
    }
    for (const d of page.deliveries) {
      shown.set(d.id, d);
    }
    return { items: page.deliveries, next: page.nextCursor };
  }, (d) => deliveryRows(accountId, d, notice, (retried) => follow(attempted(retried))), { empty: 'No deliveries' + (status ? ' with that status' : '') + '.' });
  refresh.addEventListener('click', () => reload());

  // After a retry or a replay the attempts happen in the background, as soon as the dispatcher
  // takes them, and a receiver may take up to 10 s to answer: the page reads the log again every
  // 1.5 s until each action's attempts are done (done(shown) says so) or 15 s have passed since
  // the action, and stops as soon as the reader leaves the page.
  const watches = [];
  let polling = false;
  function follow(done) {
    watches.push({ done, until: Date.now() + 15000 });
    if (!polling) {
      poll();
    }
  }
  async function poll() {
    polling = true;
    try {
      while (watches.length && body.isConnected) {
        await reload();
        for (let i = watches.length - 1; i >= 0; i--) {
          if (watches[i].done(shown) || Date.now() >= watches[i].until) {
            watches.splice(i, 1);
          }
        }
        if (watches.length) {
          await new Promise((resolve) => setTimeout(resolve, 1500));
        }
      }
    } finally {
      watches.length = 0;
      polling = false;
    }
  }
}

// attempted says when the attempt a retry asked for is done: the delivery (as the retry answered
// it) has one attempt more in the log, or is no longer pending.
function attempted(retried) {
  return (shown) => {
    const now = shown.get(retried.id);
    return Boolean(now) && (now.attempts.length > retried.attempts.length || now.status !== 'pending');
  };
}

// nothingDue says when the deliveries a replay recorded are sent: no delivery in the log is
// pending and due (never attempted, or its next attempt within a few seconds, which allows for
// the reader's clock being behind the service's); one waiting for a later retry is done for now.
function nothingDue(shown) {
  const soon = Date.now() + 5000;
  for (const d of shown.values()) {
    if (d.status === 'pending' && (d.attempts.length === 0 || !d.nextAttemptAt || Date.parse(d.nextAttemptAt) <= soon)) {
      return false;
    }
  }
  return true;
}

// findWebhook reads the account's webhooks a page at a time until it finds this one, for its URL,
// events and status (the operator API reads webhooks as a list only); null when it is not listed
// (deleted, or not of this account: the API says which when asked to act on it).
async function findWebhook(accountId, webhookId) {
  let cursor = '';
  for (;;) {
    const page = await get('/accounts/' + enc(accountId) + '/webhooks', { limit: 200, cursor });
    const found = page.webhooks.find((w) => w.id === webhookId);
    if (found) {
      return found;
    }
    if (!page.nextCursor) {
      return null;
    }
    cursor = page.nextCursor;
  }
}

// webhookSummary shows the webhook's status, URL, kind and events, with Enable when it is
// disabled: once enabled, the summary shows the webhook as the API answered it.
function webhookSummary(accountId, w, notice) {
  if (!w) {
    return h('p', { class: 'notice' }, 'This webhook is not among the account\'s webhooks: it was deleted, or belongs to another account.');
  }
  const summary = h('p', { class: 'webhook-summary', 'data-status': w.status }, badge(w.status), ' ', w.statusReason ? h('span', { class: 'muted' }, w.statusReason + ' · ') : null,
    h('span', { class: 'url' }, w.url), ' · ', w.kind, ' · ', w.events.map((e) => h('span', { class: 'chip' }, e)),
    w.status === 'disabled' ? [' ', enableButton(accountId, w, notice, (now) => summary.replaceWith(webhookSummary(accountId, now, notice)))] : null);
  return summary;
}

// replayForm offers the replay of a time window (POST /webhooks/{id}/replay): every event of the
// window that the subscription's events and filters match is delivered again, with the same
// envelope ids and bodies and new delivery ids. From and To are in the reader's time zone, sent
// as UTC; an empty To is now; no type ticked is every type the subscription receives. The API
// judges the window (30 days at most, not in the future, To after From) and says what is wrong.
function replayForm(accountId, webhookId, webhook, afterReplay) {
  const from = h('input', { id: 'replay-from', name: 'since', type: 'datetime-local', step: '1', value: localInput(new Date(Date.now() - 24 * 3600 * 1000)) });
  const to = h('input', { id: 'replay-to', name: 'until', type: 'datetime-local', step: '1', 'aria-describedby': 'replay-to-hint' });
  const types = webhook ? webhook.events.map((e) => h('input', { type: 'checkbox', name: 'types', value: e, id: 'replay-type-' + e })) : [];
  const result = h('div', { id: 'replay-result', 'aria-live': 'polite' });
  const button = h('button', { type: 'submit', id: 'replay-submit' }, 'Replay…');
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const form = h('form', { class: 'replay card', novalidate: true, 'aria-labelledby': 'replay-title' },
    h('h2', { id: 'replay-title' }, 'Replay a time window'),
    h('p', { class: 'muted small' }, 'Every event of the window that this subscription receives (its events and filters as they are now) is delivered again: the same envelope id and body, a new delivery id, the usual retries. The window starts at most 30 days ago. Times are in ' + zone + '.'),
    h('div', { class: 'fields' },
      h('div', { class: 'field' }, h('label', { for: 'replay-from' }, 'From'), from),
      h('div', { class: 'field' }, h('label', { for: 'replay-to' }, 'To'), to, h('span', { id: 'replay-to-hint', class: 'muted small' }, 'Empty: up to now.')),
      types.length ? h('fieldset', { class: 'field' }, h('legend', {}, 'Event types'),
        h('div', { class: 'checks' }, types.map((box) => h('label', { class: 'check', for: box.id }, box, box.value))),
        h('span', { class: 'muted small' }, 'None ticked: every type it receives.')) : null,
      h('div', { class: 'field submit' }, button)),
    result);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (!from.value) {
      result.replaceChildren(h('p', { class: 'error', role: 'alert' }, 'Enter the start of the window (From).'));
      from.focus();
      return;
    }
    const since = isoOf(from.value);
    const until = to.value ? isoOf(to.value) : '';
    const chosen = types.filter((box) => box.checked).map((box) => box.value);
    const span = 'from ' + whenText(since) + ' to ' + (until ? whenText(until) : 'now');
    const what = chosen.length ? 'event of type ' + chosen.join(' or ') : 'event';
    const target = webhook ? webhook.url : webhookId;
    const ok = await confirmAction('Replay this window?', 'Every ' + what + ' ' + span + ' that this subscription receives is sent to ' + target + ' again, with the same envelope ids and bodies and new delivery ids.', 'Replay');
    if (!ok) {
      return;
    }
    const body = { since };
    if (until) {
      body.until = until;
    }
    if (chosen.length) {
      body.types = chosen;
    }
    button.disabled = true;
    result.replaceChildren(h('p', { class: 'muted', role: 'status' }, 'Recording the replay…'));
    try {
      const res = await post('/accounts/' + enc(accountId) + '/webhooks/' + enc(webhookId) + '/replay', body);
      const n = res.replay.count;
      result.replaceChildren(h('p', { class: 'ok', role: 'status', 'data-replayed': String(n), 'data-replay': res.replay.id },
        n === 0 ? 'Nothing to send: no event of that window matches this subscription (replay ' + res.replay.id + ').'
          : 'Replay ' + res.replay.id + ' recorded ' + n + (n === 1 ? ' delivery' : ' deliveries') + '; the log below shows them as they are sent.'));
      afterReplay();
    } catch (err) {
      result.replaceChildren(errorBox(err));
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

// localInput is a time as a datetime-local input holds it: the reader's local time, to the second.
function localInput(d) {
  const p = (n) => String(n).padStart(2, '0');
  return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + 'T' + p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds());
}

// isoOf turns a datetime-local value (local time) into the ISO 8601 UTC time the API takes.
function isoOf(value) {
  const d = new Date(value);
  return isNaN(d) ? value : d.toISOString();
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
      const res = await post('/accounts/' + enc(accountId) + '/webhook-deliveries/' + enc(d.id) + '/retry');
      notice.replaceChildren(h('p', { class: 'ok', role: 'status' }, 'Delivery ' + d.id + ' is being sent again; the log below shows how it goes.'));
      afterRetry(res.delivery || d);
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
