import { get, enc } from './api.js';
import { h, when, humanType, actor } from './dom.js';
import { pager } from './pager.js';
import { jsonView, summary } from './jsonview.js';

// timeline shows an entity's history from the operator API (the event log itself, a page at a
// time), oldest first or newest first: each event as a line saying what happened, when and by
// whom, with its data and metadata one click away. query names the entity: {contactId} or
// {subscriptionId}.
export function timeline(accountId, query, { erased = false } = {}) {
  const section = h('section', { class: 'timeline', 'aria-label': 'Timeline' });
  const body = h('div');
  const buttons = ['oldest', 'newest'].map((order) => h('button', { type: 'button', class: 'quiet', 'data-order': order, 'aria-pressed': 'false' },
    order === 'oldest' ? 'Oldest first' : 'Newest first'));
  const show = (order) => {
    for (const b of buttons) {
      b.setAttribute('aria-pressed', String(b.dataset.order === order));
    }
    const list = h('ol', { class: 'events', 'data-order': order });
    body.replaceChildren();
    pager(body, list, async (cursor, limit) => {
      const page = await get('/accounts/' + enc(accountId) + '/history', { ...query, order, limit, cursor });
      return { items: page.events, next: page.nextCursor };
    }, (e) => eventRow(e, erased), { empty: 'No events.' });
  };
  for (const b of buttons) {
    b.addEventListener('click', () => show(b.dataset.order));
  }
  section.append(h('div', { class: 'order', role: 'group', 'aria-label': 'Order of the events' }, buttons), body);
  show('oldest');
  return section;
}

function eventRow(e, erased) {
  return h('li', { class: 'event', 'data-type': e.type },
    h('div', { class: 'event-head' },
      h('span', { class: 'event-type' }, humanType(e.type)),
      when(e.occurredAt),
      h('span', { class: 'event-actor' }, actor(e.metadata)),
      h('span', { class: 'event-pos muted', title: 'log position · stream and version' }, '#' + e.position + ' · ' + e.streamId + ' v' + e.version)),
    h('div', { class: 'event-summary' }, summary(e.data, { erased, streamId: e.streamId })),
    h('details', { class: 'event-data' },
      h('summary', {}, 'Data'),
      jsonView(e.data, { erased }),
      h('p', { class: 'muted small' }, 'Metadata (event ' + e.eventId + ', schema version ' + e.schemaVersion + ')'),
      jsonView(e.metadata)));
}
