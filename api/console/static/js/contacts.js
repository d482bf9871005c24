import { get, enc, APIError } from './api.js';
import { h, when, money, badge, replace } from './dom.js';
import { pager } from './pager.js';
import { accountHeader } from './accounts.js';
import { catalog } from './catalog.js';
import { timeline } from './timeline.js';

// contactsPage lists an account's contacts, newest first, or finds one by its email.
export async function contactsPage(main, accountId, query) {
  await accountHeader(main, accountId, 'contacts');
  const email = query.get('email') || '';
  const input = h('input', { id: 'email-search', type: 'search', name: 'email', value: email, placeholder: 'ada@example.com', autocomplete: 'off', spellcheck: 'false' });
  const form = h('form', { class: 'search', role: 'search', onsubmit: (ev) => {
    ev.preventDefault();
    const v = input.value.trim();
    location.hash = '#/accounts/' + enc(accountId) + '/contacts' + (v ? '?email=' + encodeURIComponent(v) : '');
  } }, h('label', { for: 'email-search' }, 'Find a contact by email'), h('div', { class: 'row' }, input, h('button', { type: 'submit' }, 'Search'),
    email ? h('a', { class: 'button quiet', href: '#/accounts/' + enc(accountId) + '/contacts' }, 'Show all') : null));
  const body = h('tbody');
  const section = h('section', {}, h('div', { class: 'table-wrap' }, h('table', { class: 'contacts', 'data-search': email || null },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Email'), h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Tags'), h('th', { scope: 'col' }, 'Created'))),
    body)));
  main.append(form, email ? h('h2', {}, 'Contacts with the email ' + email) : h('h2', {}, 'Contacts, newest first'), section);
  // The search field has the focus, on the page of a search too, with what was searched selected:
  // the next search is typed straight over it.
  input.focus();
  input.select();
  const names = await catalog(accountId);
  pager(section, body, async (cursor, limit) => {
    const page = await get('/accounts/' + enc(accountId) + '/contacts', { email, limit, cursor });
    await names.know(page.contacts.flatMap((c) => c.tagIds));
    return { items: page.contacts, next: page.nextCursor };
  }, (c) => h('tr', {},
    h('td', {}, h('a', { href: '#/accounts/' + enc(accountId) + '/contacts/' + enc(c.id) }, c.email)),
    h('td', {}, [c.firstName, c.lastName].filter(Boolean).join(' ')),
    h('td', {}, c.tagIds.map((t) => h('span', { class: 'chip' }, names.name(t)))),
    h('td', {}, when(c.createdAt))), { empty: email ? 'No contact has that email.' : 'No contacts yet.' });
}

// contactPage shows one contact: its timeline from the event log, and beside it what the read
// models hold now (tags, fields, leads, purchases). An erased contact (404 while its history
// stays) shows its history with the erased values marked.
export async function contactPage(main, accountId, contactId) {
  const crumb = h('span', {}, ' › ', h('a', { href: '#/accounts/' + enc(accountId) + '/contacts' }, 'Contacts'), ' › ', h('span', { class: 'mono' }, contactId));
  await accountHeader(main, accountId, 'contacts', crumb);
  const aside = h('aside', { class: 'facts', 'aria-label': 'Contact' }, h('p', { class: 'muted' }, 'Loading…'));
  const layout = h('div', { class: 'split' });
  main.append(layout);
  let contact = null;
  let erased = false;
  try {
    contact = (await get('/accounts/' + enc(accountId) + '/contacts/' + enc(contactId))).contact;
  } catch (err) {
    if (!(err instanceof APIError) || err.status !== 404) {
      throw err;
    }
    erased = true;
  }
  const names = await catalog(accountId);
  if (contact) {
    await names.know(namedIds(contact));
  }
  main.querySelector('h1').textContent = contact ? contact.email : 'Contact ' + contactId;
  layout.append(h('div', { class: 'main-col' }, h('h2', {}, 'Timeline'), timeline(accountId, { contactId }, { erased })), aside);
  if (!contact) {
    replace(aside, h('h2', {}, 'Contact'), h('p', { class: 'notice' }, 'No such contact in the read models: it was erased (or never existed). Its history, if any, is shown with the erased values marked as erased.'));
    return;
  }
  replace(aside, facts(accountId, contact, names));
}

// namedIds are the ids of a contact that its page shows by name: tags, custom fields, CRMs and
// stages of its leads, products and tiers of its purchases and subscriptions.
function namedIds(c) {
  const ids = [...c.tagIds, ...Object.keys(c.customFields || {})];
  for (const l of c.leads) {
    ids.push(l.crmId, l.stageId);
  }
  for (const customer of c.customers) {
    for (const t of customer.transactions) {
      ids.push(t.productId, t.pricingTierId);
    }
    for (const s of customer.subscriptions) {
      ids.push(s.productId);
    }
  }
  return ids;
}

function facts(accountId, c, names) {
  const fields = Object.entries(c.customFields || {});
  const purchases = [];
  const subscriptions = [];
  for (const customer of c.customers) {
    purchases.push(...customer.transactions);
    subscriptions.push(...customer.subscriptions);
  }
  return [
    h('h2', {}, 'Contact'),
    h('dl', { class: 'kv-list' },
      h('dt', {}, 'Email'), h('dd', {}, c.email),
      h('dt', {}, 'Name'), h('dd', {}, [c.firstName, c.lastName].filter(Boolean).join(' ') || '—'),
      h('dt', {}, 'Phone'), h('dd', {}, c.phone || '—'),
      h('dt', {}, 'Created'), h('dd', {}, when(c.createdAt)),
      h('dt', {}, 'Id'), h('dd', { class: 'mono' }, c.id)),
    h('h3', {}, 'Tags'),
    c.tagIds.length ? h('p', { class: 'chips' }, c.tagIds.map((t) => h('span', { class: 'chip', title: t }, names.name(t)))) : h('p', { class: 'muted' }, 'None'),
    h('h3', {}, 'Fields'),
    fields.length ? h('dl', { class: 'kv-list' }, fields.map(([id, v]) => [h('dt', { title: id }, names.name(id)), h('dd', {}, v)])) : h('p', { class: 'muted' }, 'None'),
    h('h3', {}, 'Leads'),
    c.leads.length ? h('ul', { class: 'plain' }, c.leads.map((l) => h('li', {}, h('b', {}, names.name(l.crmId)), ' · ', badge(names.name(l.stageId), 'stage'), ' ', l.title))) : h('p', { class: 'muted' }, 'None'),
    h('h3', {}, 'Purchases'),
    purchases.length ? h('ul', { class: 'plain' }, purchases.map((t) => h('li', {},
      h('b', {}, names.name(t.productId)), ' ', names.name(t.pricingTierId), ' · ', money(t.amount, t.currency), ' ', badge(t.status), ' ', when(t.paidAt)))) : h('p', { class: 'muted' }, 'None'),
    h('h3', {}, 'Billing subscriptions'),
    subscriptions.length ? h('ul', { class: 'plain' }, subscriptions.map((s) => h('li', {},
      h('a', { href: '#/accounts/' + enc(accountId) + '/subscriptions/' + enc(s.id) }, names.name(s.productId) + ' · ' + s.interval), ' ', badge(s.status)))) : h('p', { class: 'muted' }, 'None'),
  ];
}

// subscriptionPage shows the timeline of a billing subscription (kind "billing") or of a webhook
// subscription (kind "webhook": its stream). A billing subscription whose buyer was erased shows
// the buyer's erased values marked as erased, as the buyer's own timeline does.
export async function subscriptionPage(main, accountId, subscriptionId, kind) {
  const crumb = h('span', {}, ' › ', h('span', { class: 'mono' }, subscriptionId));
  await accountHeader(main, accountId, kind === 'billing' ? 'contacts' : 'webhooks', crumb);
  main.querySelector('h1').textContent = (kind === 'billing' ? 'Billing subscription ' : 'Webhook subscription ') + subscriptionId;
  const erasedBuyer = kind === 'billing' ? await erasedBuyerOf(accountId, subscriptionId) : '';
  if (erasedBuyer) {
    main.append(h('p', { class: 'notice' }, 'The buyer (contact ', h('a', { class: 'mono', href: '#/accounts/' + enc(accountId) + '/contacts/' + enc(erasedBuyer) }, erasedBuyer),
      ') was erased: the buyer\'s values are shown as erased. Amounts, products and dates are kept.'));
  }
  main.append(h('h2', {}, 'Timeline'), timeline(accountId, { subscriptionId }, { erased: Boolean(erasedBuyer) }));
}

// erasedBuyerOf answers the contact id of a billing subscription's buyer when that contact was
// erased, and '' otherwise. The subscription's first event (its purchase) names the buyer; the
// buyer was erased when its contact is not found (404) while its history stays, as on the
// contact's page. A history the API refuses is left to the timeline, which shows the API's answer.
async function erasedBuyerOf(accountId, subscriptionId) {
  let first;
  try {
    first = (await get('/accounts/' + enc(accountId) + '/history', { subscriptionId, limit: 1 })).events[0];
  } catch (err) {
    if (err instanceof APIError && err.status !== 401) {
      return '';
    }
    throw err;
  }
  const buyer = first ? buyerOf(first.data) : '';
  if (!buyer) {
    return '';
  }
  try {
    await get('/accounts/' + enc(accountId) + '/contacts/' + enc(buyer));
    return '';
  } catch (err) {
    if (err instanceof APIError && err.status === 404) {
      return buyer;
    }
    throw err;
  }
}

// buyerOf is the contact a sale event's data names as its buyer (its contact, else its
// customer's), whether the sale is the data itself (CheckoutPurchased, …) or its member `sale`
// (SubscriptionStarted, …).
function buyerOf(data) {
  const sale = data && typeof data.sale === 'object' && data.sale ? data.sale : data;
  if (!sale || typeof sale !== 'object') {
    return '';
  }
  return (sale.contact && sale.contact.contactId) || (sale.customer && sale.customer.contactId) || '';
}
