import { get, enc } from './api.js';

// catalog reads the names an account gives its ids (tags, custom fields, CRMs and their stages,
// products), so that pages show "Customer" rather than tag_…; the first 200 of each, which is
// what an account has. Unknown ids are shown as they are.
const cache = new Map();

export function catalog(accountId) {
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
    get(base + '/tags', { limit: 200 }),
    get(base + '/custom-fields', { limit: 200 }),
    get(base + '/crms', { limit: 200 }),
    get(base + '/products', { limit: 200 }),
  ]);
  const names = new Map();
  for (const t of tags.tags) names.set(t.id, t.name);
  for (const f of fields.customFields) names.set(f.id, f.name);
  for (const c of crms.crms) {
    names.set(c.id, c.name);
    for (const s of c.stages) names.set(s.id, s.name);
  }
  for (const p of products.products) {
    names.set(p.id, p.name);
    for (const t of p.pricingTiers) names.set(t.id, t.name);
    for (const b of p.bumps || []) names.set(b.id, b.name);
  }
  return { name: (id) => names.get(id) || id };
}

// forget drops an account's names (after a change the page made).
export function forget(accountId) {
  cache.delete(accountId);
}
