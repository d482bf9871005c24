// Building the pages: every text goes in as text (never as HTML), so data from the API cannot
// become markup or script.

// h makes an element: props sets attributes (class, href, …), on* listeners, and `text`;
// children are nodes, strings, numbers or arrays of them (null and false are skipped).
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false) {
      continue;
    }
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2).toLowerCase(), v);
    } else if (k === 'text') {
      el.textContent = v;
    } else if (v === true) {
      el.setAttribute(k, '');
    } else {
      el.setAttribute(k, String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) {
      continue;
    }
    if (Array.isArray(c)) {
      append(el, c);
    } else if (c instanceof Node) {
      el.appendChild(c);
    } else {
      el.appendChild(document.createTextNode(String(c)));
    }
  }
}

// replace empties el and puts children in.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

// when shows an RFC 3339 time in the reader's time zone, with the exact UTC time as its
// datetime (and tooltip).
export function when(iso) {
  if (!iso) {
    return h('span', { class: 'muted', text: '—' });
  }
  const d = new Date(iso);
  return h('time', { datetime: iso, title: iso }, isNaN(d) ? iso : dateTime.format(d));
}

// whenText is an RFC 3339 time as words in the reader's time zone, for a sentence.
export function whenText(iso) {
  const d = new Date(iso);
  return isNaN(d) ? String(iso) : dateTime.format(d);
}

// errorBox shows an error where the page would be, readable by screen readers at once.
export function errorBox(err) {
  const status = err && err.status ? ' (' + err.status + ')' : '';
  return h('p', { class: 'error', role: 'alert' }, (err && err.message ? err.message : String(err)) + status);
}

// badge is a short coloured word: a status.
export function badge(word, kind = word) {
  return h('span', { class: 'badge badge-' + String(kind).replace(/[^a-z0-9_-]/gi, '') }, word);
}

// humanType turns an event type into words: "TagApplied" → "Tag applied",
// "checkout.purchased" → "checkout purchased".
export function humanType(type) {
  const words = String(type).replace(/[._]/g, ' ').replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

// actor says who caused an event: the operator, an API key, or the service itself.
export function actor(metadata) {
  const a = metadata && metadata.actor;
  if (!a) {
    return 'by the service';
  }
  if (a === 'operator') {
    return 'by the operator';
  }
  if (a.startsWith('key:')) {
    return 'by API key ' + a.slice(4);
  }
  return 'by ' + a;
}

// money shows minor units in a currency.
export function money(amount, currency) {
  try {
    return new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(amount / 100);
  } catch {
    return (amount / 100).toFixed(2) + ' ' + currency;
  }
}
