import { token, setToken, forgetToken, onUnauthorized, get } from './api.js';
import { h, errorBox, replace } from './dom.js';
import { accountsPage } from './accounts.js';
import { contactsPage, contactPage, subscriptionPage } from './contacts.js';
import { webhooksPage, deliveriesPage } from './webhooks.js';
import { projectionsPage } from './projections.js';
import { clusterPage } from './cluster.js';

// The console's pages are addressed by the URL's fragment (#/accounts/…), which never reaches
// the service and never holds the token.
const main = document.getElementById('main');
const nav = document.getElementById('nav');
const forget = document.getElementById('forget');

// Each route renders into view, a fresh element of its own: a page still loading when the reader
// moves on fills a view that is no longer shown.
const routes = [
  [/^\/accounts$/, (view) => accountsPage(view)],
  [/^\/accounts\/([^/]+)$/, (view, a) => { location.replace('#/accounts/' + a + '/contacts'); }],
  [/^\/accounts\/([^/]+)\/contacts$/, (view, a, q) => contactsPage(view, dec(a), q)],
  [/^\/accounts\/([^/]+)\/contacts\/([^/]+)$/, (view, a, c) => contactPage(view, dec(a), dec(c))],
  [/^\/accounts\/([^/]+)\/subscriptions\/([^/]+)$/, (view, a, s) => subscriptionPage(view, dec(a), dec(s), 'billing')],
  [/^\/accounts\/([^/]+)\/webhooks$/, (view, a) => webhooksPage(view, dec(a))],
  [/^\/accounts\/([^/]+)\/webhooks\/([^/]+)$/, (view, a, w, q) => deliveriesPage(view, dec(a), dec(w), q)],
  [/^\/accounts\/([^/]+)\/webhooks\/([^/]+)\/timeline$/, (view, a, w) => subscriptionPage(view, dec(a), dec(w), 'webhook')],
  [/^\/projections$/, (view) => projectionsPage(view)],
  [/^\/cluster$/, (view) => clusterPage(view)],
];

function dec(s) {
  return decodeURIComponent(s);
}

let rendering = 0;

async function render() {
  const mine = ++rendering;
  if (!token()) {
    showLogin('');
    return;
  }
  nav.hidden = false;
  forget.hidden = false;
  const hash = location.hash.startsWith('#/') ? location.hash.slice(1) : '/accounts';
  const [path, qs] = hash.split('?');
  const query = new URLSearchParams(qs || '');
  for (const a of nav.querySelectorAll('a')) {
    a.toggleAttribute('aria-current', path.startsWith('/' + a.dataset.section));
  }
  const view = h('div', { class: 'view' });
  main.replaceChildren(view);
  for (const [pattern, page] of routes) {
    const m = path.match(pattern);
    if (m) {
      try {
        await page(view, ...m.slice(1), query);
      } catch (err) {
        if (mine === rendering && err.status !== 401) {
          view.append(errorBox(err));
        }
      }
      return;
    }
  }
  view.append(h('h1', {}, 'Not found'), h('p', {}, 'No console page at ', h('code', {}, path), '. ', h('a', { href: '#/accounts' }, 'Accounts')));
}

// showLogin asks for the operator token, with why when it was refused.
function showLogin(reason) {
  nav.hidden = true;
  forget.hidden = true;
  const input = h('input', { id: 'token', name: 'token', type: 'password', autocomplete: 'off', required: true, spellcheck: 'false' });
  const error = h('div', { id: 'login-error' }, reason ? h('p', { class: 'error', role: 'alert' }, reason) : null);
  const button = h('button', { type: 'submit' }, 'Open the console');
  const form = h('form', { class: 'login card', onsubmit: async (ev) => {
    ev.preventDefault();
    const value = input.value.trim();
    if (!value) {
      return;
    }
    button.disabled = true;
    setToken(value);
    try {
      await get('/accounts', { limit: 1 }); // the token is checked before any page shows
      render();
    } catch (err) {
      forgetToken();
      button.disabled = false;
      replace(error, h('p', { class: 'error', role: 'alert' }, err.status === 401
        ? 'The service refused this token: it is wrong or no longer valid (' + err.message + ').'
        : err.message));
      input.select();
    }
  } },
  h('h1', {}, 'Operator console'),
  h('p', {}, 'Enter the operator token (FUNNEL_ADMIN_TOKEN). It is kept for this browser tab only and sent to this service alone, in the Authorization header.'),
  h('label', { for: 'token' }, 'Operator token'), input, button, error);
  main.replaceChildren(form);
  input.focus();
}

onUnauthorized((err) => {
  forgetToken();
  showLogin('The service refused the token: it is wrong or no longer valid (' + err.message + '). Enter it again.');
});

forget.addEventListener('click', () => {
  forgetToken();
  showLogin('');
});

window.addEventListener('hashchange', render);
render();
