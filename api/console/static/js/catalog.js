import { get, enc } from './api.js';

// catalog reads the names an account gives its ids (tags, custom fields, CRMs and their stages,
// products with their tiers and bumps), so that pages show "Customer" rather than tag_…: every
// page of each list, as the API pages it. The names are kept for the tab, and read again when a
// page meets an id they lack (a tag made since they were read): at most once per page shown, so
// that an id nobody names any more (a deleted tag) is shown as it is, not read for again and
// again.
const cache = new Map();

// catalog answers the account's names for one page: name(id) is the id's name, or the id itself
// when the account has none; know(ids) reads the names again when one of ids is not among them,
// the first time it is so on this page.
export async function catalog(accountId) {
  let names = await kept(accountId);
  let again = null;
  return {
    name: (id) => names.get(id) || id,
    async know(ids) {
      if (!again && ids.some((id) => id && !names.has(id))) {
        cache.delete(accountId);
        // Names that cannot be read again leave the page with those it has (an id shows as
        // itself), rather than fail the page or every "Load more" of it.
        again = kept(accountId).then(
          (fresh) => {
            names = fresh;
          },
          () => {},
        );
      }
      await again;
    },
  };
}

function kept(accountId) {
  if (!cache.has(accountId)) {
    cache.set(accountId, load(accountId).catch((err) => {
      cache.delete(accountId);
      throw err;
    }));
  }
  return cache.get(accountId);
}

async function load(accountId) {
  const base = '/accounts/' + enc(accountId);
  const [tags, fields, crms, products] = await Promise.all([
    every(base + '/tags', 'tags'),
    every(base + '/custom-fields', 'customFields'),
    every(base + '/crms', 'crms'),
    every(base + '/products', 'products'),
  ]);
  const names = new Map();
  for (const t of tags) names.set(t.id, t.name);
  for (const f of fields) names.set(f.id, f.name);
  for (const c of crms) {
    names.set(c.id, c.name);
    for (const s of c.stages) names.set(s.id, s.name);
  }
  for (const p of products) {
    names.set(p.id, p.name);
    for (const t of p.pricingTiers) names.set(t.id, t.name);
    for (const b of p.bumps || []) names.set(b.id, b.name);
  }
  return names;
}

// every reads a whole list, following nextCursor to its end.
async function every(path, member) {
  const items = [];
  let cursor = '';
  do {
    const page = await get(path, { limit: 200, cursor });
    items.push(...page[member]);
    cursor = page.nextCursor || '';
  } while (cursor);
  return items;
}
