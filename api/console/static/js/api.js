// The operator API, as the console calls it. The token lives in sessionStorage only: it is gone
// when the tab closes, it is never put in a URL, a cookie or localStorage, and it goes to the
// service in the Authorization header of each fetch. A page of another site cannot make the
// browser send it (no cookie carries it), which is what protects the state-changing calls
// against cross-site requests.

const tokenKey = 'funnel.operatorToken';

export function token() {
  return sessionStorage.getItem(tokenKey);
}

export function setToken(value) {
  sessionStorage.setItem(tokenKey, value);
}

export function forgetToken() {
  sessionStorage.removeItem(tokenKey);
}

// APIError is an answer of the API that is not a success, with its status and {error} message.
export class APIError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

let unauthorized = () => {};

// onUnauthorized sets what happens when the service refuses the token (401): the app forgets it
// and asks again, with the reason.
export function onUnauthorized(handler) {
  unauthorized = handler;
}

// idempotencyKey is a random key for a POST, so that a request sent twice (a double click, a
// retried network call) is performed once (operator-api.md, Idempotency-Key). Built from
// getRandomValues, which works on plain http too.
function idempotencyKey() {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return 'console-' + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

// call sends one request to /admin/v1 and answers its JSON body, or throws an APIError.
export async function call(method, path, body) {
  const t = token();
  if (!t) {
    const err = new APIError(401, 'Enter the operator token.');
    unauthorized(err);
    throw err;
  }
  const headers = { Authorization: 'Bearer ' + t, Accept: 'application/json' };
  const init = { method, headers, credentials: 'omit', cache: 'no-store', redirect: 'error' };
  if (method !== 'GET') {
    headers['Idempotency-Key'] = idempotencyKey();
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
  }
  let res;
  try {
    res = await fetch('/admin/v1' + path, init);
  } catch (e) {
    throw new APIError(0, 'The service did not answer (' + e.message + ').');
  }
  let data = null;
  try {
    data = await res.json();
  } catch {
    data = null;
  }
  if (!res.ok) {
    const err = new APIError(res.status, (data && data.error) || 'The service answered ' + res.status + '.');
    if (res.status === 401) {
      unauthorized(err);
    }
    throw err;
  }
  return data;
}

// get reads a path with query parameters (empty ones left out).
export function get(path, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') {
      q.set(k, v);
    }
  }
  const qs = q.toString();
  return call('GET', qs ? path + '?' + qs : path);
}

// post sends a state-changing request.
export function post(path, body) {
  return call('POST', path, body);
}

// enc encodes one path segment.
export function enc(s) {
  return encodeURIComponent(s);
}
