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

// minorDigits are the ISO 4217 exponents other than 2: how many digits of an amount in the
// currency's minor unit (as the API keeps every amount) come after the decimal point, so that
// 5000 JPY is ¥5,000 and 5000 KWD is 5.000 KWD. Every other currency has 2. A table rather than
// Intl's digits: CLDR shows some currencies with fewer digits than their minor unit (HUF, IQD,
// …), which would round the amount shown.
const minorDigits = {
  BIF: 0, CLP: 0, DJF: 0, GNF: 0, ISK: 0, JPY: 0, KMF: 0, KRW: 0, PYG: 0, RWF: 0, UGX: 0, UYI: 0, VND: 0, VUV: 0, XAF: 0, XOF: 0, XPF: 0,
  BHD: 3, IQD: 3, JOD: 3, KWD: 3, LYD: 3, OMR: 3, TND: 3,
  CLF: 4, UYW: 4,
};

// money shows an amount in the currency's minor unit as the currency's amount, to the minor unit.
export function money(amount, currency) {
  const digits = Object.hasOwn(minorDigits, currency) ? minorDigits[currency] : 2;
  const major = amount / 10 ** digits;
  try {
    return new Intl.NumberFormat(undefined, { style: 'currency', currency, minimumFractionDigits: digits, maximumFractionDigits: digits }).format(major);
  } catch {
    return major.toFixed(digits) + ' ' + currency;
  }
}
