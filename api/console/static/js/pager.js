import { h, errorBox } from './dom.js';

// pager shows a list a page at a time, as the API pages it: load(cursor) answers
// {items, next}; render(item) makes one row, appended to list (put in container unless it is in
// a table there already). "Load more" asks for the next
// page while there is one. It answers a function that reloads from the first page.
export function pager(container, list, load, render, { empty = 'Nothing here yet.', limit = 50 } = {}) {
  const status = h('p', { class: 'muted pager-status', 'aria-live': 'polite' });
  const more = h('button', { type: 'button', class: 'more', hidden: true }, 'Load more');
  const errors = h('div');
  container.append(list.parentNode ? '' : list, errors, h('div', { class: 'pager' }, more, status));
  let cursor = '';
  let shown = 0;
  let generation = 0;

  async function next() {
    const mine = generation;
    more.disabled = true;
    status.textContent = 'Loading…';
    errors.replaceChildren();
    try {
      const page = await load(cursor, limit);
      if (mine !== generation) {
        return;
      }
      for (const item of page.items) {
        const rows = render(item);
        list.append(...(Array.isArray(rows) ? rows : [rows]));
      }
      shown += page.items.length;
      cursor = page.next || '';
      more.hidden = !page.next;
      status.textContent = shown === 0 ? empty : shown + (page.next ? ' shown, more to load' : ' in all');
    } catch (err) {
      status.textContent = '';
      errors.append(errorBox(err));
    } finally {
      more.disabled = false;
    }
  }
  more.addEventListener('click', next);

  function reload() {
    generation++;
    cursor = '';
    shown = 0;
    list.replaceChildren();
    more.hidden = true;
    return next();
  }
  reload();
  return reload;
}
