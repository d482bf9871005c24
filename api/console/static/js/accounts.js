import { get, enc } from './api.js';
import { h, when } from './dom.js';
import { pager } from './pager.js';

// accountsPage lists every account, oldest first.
export function accountsPage(main) {
  const body = h('tbody');
  const table = h('div', { class: 'table-wrap' }, h('table', {},
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Account'), h('th', { scope: 'col' }, 'Id'), h('th', { scope: 'col' }, 'Created'))),
    body));
  const section = h('section', {}, table);
  main.append(h('h1', {}, 'Accounts'), section);
  pager(section, body, async (cursor, limit) => {
    const page = await get('/accounts', { limit, cursor });
    return { items: page.accounts, next: page.nextCursor };
  }, (a) => h('tr', {},
    h('td', {}, h('a', { href: '#/accounts/' + enc(a.id) + '/contacts' }, a.name || a.id)),
    h('td', { class: 'mono' }, a.id),
    h('td', {}, when(a.createdAt))), { empty: 'No accounts yet.' });
}

// accountHeader is the top of every page of one account: its name and its sections.
export async function accountHeader(main, accountId, current, trail = []) {
  const title = h('h1', {}, accountId);
  const tabs = h('nav', { class: 'tabs', 'aria-label': 'Account sections' },
    h('a', { href: '#/accounts/' + enc(accountId) + '/contacts', 'aria-current': current === 'contacts' ? 'page' : null }, 'Contacts'),
    h('a', { href: '#/accounts/' + enc(accountId) + '/webhooks', 'aria-current': current === 'webhooks' ? 'page' : null }, 'Webhooks'));
  main.append(h('p', { class: 'crumbs' }, h('a', { href: '#/accounts' }, 'Accounts'), ' › ', h('span', { class: 'account-name' }, accountId), trail), title, tabs);
  const { account } = await get('/accounts/' + enc(accountId));
  title.textContent = account.name;
  main.querySelector('.account-name').replaceChildren(h('a', { href: '#/accounts/' + enc(accountId) + '/contacts' }, account.name));
  return account;
}
