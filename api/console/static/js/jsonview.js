import { h } from './dom.js';

// jsonView shows a JSON value as indented text. A null is shown as "erased" when the entity was
// erased (decisions.md "Erasure": the log keeps every event, with the person's values set to
// null), and as null otherwise.
export function jsonView(value, { erased = false } = {}) {
  return h('pre', { class: 'json' }, render(value, '', erased));
}

function render(v, indent, erased) {
  if (v === null) {
    return erased ? h('span', { class: 'erased', title: 'erased: the value was removed by an erasure' }, 'erased') : h('span', { class: 'j-null' }, 'null');
  }
  if (Array.isArray(v)) {
    if (v.length === 0) {
      return '[]';
    }
    const inner = indent + '  ';
    const parts = ['[\n'];
    v.forEach((x, i) => {
      parts.push(inner, render(x, inner, erased), i < v.length - 1 ? ',\n' : '\n');
    });
    parts.push(indent, ']');
    return parts;
  }
  if (typeof v === 'object') {
    const keys = Object.keys(v);
    if (keys.length === 0) {
      return '{}';
    }
    const inner = indent + '  ';
    const parts = ['{\n'];
    keys.forEach((k, i) => {
      parts.push(inner, h('span', { class: 'j-key' }, JSON.stringify(k)), ': ', render(v[k], inner, erased), i < keys.length - 1 ? ',\n' : '\n');
    });
    parts.push(indent, '}');
    return parts;
  }
  if (typeof v === 'string') {
    return h('span', { class: 'j-str' }, JSON.stringify(v));
  }
  return h('span', { class: 'j-lit' }, String(v));
}

// summary picks the few scalar members of an event's data that say what happened, for the
// one-line view; the whole data is one click away.
// The account, and the entity whose timeline it is (streamId), go without saying.
export function summary(data, { erased = false, streamId = '' } = {}) {
  if (!data || typeof data !== 'object') {
    return [];
  }
  const out = [];
  for (const [k, v] of Object.entries(data)) {
    if (out.length >= 4) {
      break;
    }
    if (k === 'accountId' || (streamId && v === streamId)) {
      continue;
    }
    if (v === null) {
      if (erased) {
        out.push(h('span', { class: 'kv' }, k + ': ', h('span', { class: 'erased' }, 'erased')));
      }
      continue;
    }
    if (typeof v === 'object' || v === '') {
      continue;
    }
    let text = String(v);
    if (text.length > 60) {
      text = text.slice(0, 57) + '…';
    }
    out.push(h('span', { class: 'kv' }, k + ': ', h('b', {}, text)));
  }
  return out;
}
