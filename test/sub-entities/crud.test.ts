// /v1/sub-entities: create, list (cursor paging, filter), read, update, delete only when nothing belongs to it;
// tenant isolation, scopes and bad input with fields.
import t from 'tap';
import { testEnv } from '../helpers/env.ts';

const env = await testEnv(t);
const org = await env.bootstrap({ org: 'Dental Group' });
const other = await env.bootstrap({ org: 'Other Group' });
const key = org.api_key;

t.test('create, read, update, list and delete', async (t) => {
  const c = await env.request('POST', '/v1/sub-entities', { key, body: { name: 'Downtown clinic', external_ref: 'c-1', metadata: { region: 'west' } } });
  t.equal(c.status, 201);
  const s = c.body.data;
  t.match(s, { name: 'Downtown clinic', external_ref: 'c-1', metadata: { region: 'west' }, hipaa_mode: false });
  t.same((await env.request('GET', `/v1/sub-entities/${s.id}`, { key })).body.data, s);

  const p = await env.request('PATCH', `/v1/sub-entities/${s.id}`, { key, body: { name: 'Downtown', external_ref: null } });
  t.equal(p.status, 200);
  t.match(p.body.data, { name: 'Downtown', external_ref: null, metadata: { region: 'west' } }, 'omitted fields stay');

  const ids = [s.id];
  for (let i = 0; i < 4; i++) ids.push((await env.request('POST', '/v1/sub-entities', { key, body: { name: `Branch ${i}` } })).body.data.id);
  const first = await env.request('GET', '/v1/sub-entities?limit=2&order=asc', { key });
  t.same(first.body.data.map((x: any) => x.id), ids.slice(0, 2));
  const second = await env.request('GET', `/v1/sub-entities?limit=2&cursor=${first.body.meta.cursor}`, { key });
  t.same(second.body.data.map((x: any) => x.id), ids.slice(2, 4));
  const all = await env.request('GET', '/v1/sub-entities', { key });
  t.same(all.body.data.map((x: any) => x.id), [...ids].reverse(), 'newest first');
  t.same((await env.request('GET', '/v1/sub-entities?hipaa_mode=true', { key })).body.data, []);

  const d = await env.request('DELETE', `/v1/sub-entities/${ids[4]}`, { key });
  t.equal(d.status, 204);
  t.equal((await env.request('GET', `/v1/sub-entities/${ids[4]}`, { key })).status, 404);
  t.equal((await env.request('DELETE', `/v1/sub-entities/${ids[4]}`, { key })).status, 404);
});

t.test('delete refuses while something belongs to it', async (t) => {
  const s = (await env.request('POST', '/v1/sub-entities', { key, body: { name: 'Busy' } })).body.data;
  const phone = (await env.db.one('SELECT id FROM phone_numbers WHERE organization_id = $1 ORDER BY id LIMIT 1', [org.organization_id])).id;
  t.equal((await env.request('PATCH', `/v1/phone-numbers/${phone}`, { key, body: { sub_entity_id: s.id } })).status, 200);
  const d = await env.request('DELETE', `/v1/sub-entities/${s.id}`, { key });
  t.equal(d.status, 409);
  t.equal(d.body.error.code, 'state_conflict');
  t.same(d.body.error.fields, { entity: 'sub_entity', status: 'in_use' });
  t.match(d.body.error.message, /1 phone_numbers/);
  t.equal((await env.request('PATCH', `/v1/phone-numbers/${phone}`, { key, body: { sub_entity_id: null } })).status, 200);
  t.equal((await env.request('DELETE', `/v1/sub-entities/${s.id}`, { key })).status, 204, 'deletable once nothing belongs to it');
});

t.test('another organization sees nothing', async (t) => {
  const s = (await env.request('POST', '/v1/sub-entities', { key, body: { name: 'Mine' } })).body.data;
  const k = other.api_key;
  t.equal((await env.request('GET', `/v1/sub-entities/${s.id}`, { key: k })).status, 404);
  t.equal((await env.request('PATCH', `/v1/sub-entities/${s.id}`, { key: k, body: { name: 'x' } })).status, 404);
  t.equal((await env.request('DELETE', `/v1/sub-entities/${s.id}`, { key: k })).status, 404);
  t.equal((await env.request('GET', `/v1/sub-entities/${s.id}/hipaa-audit`, { key: k })).status, 404);
  t.same((await env.request('GET', '/v1/sub-entities', { key: k })).body.data, []);
  t.equal((await env.request('GET', '/v1/sub-entities/not-a-uuid', { key })).status, 404);
  t.equal((await env.db.one('SELECT name FROM sub_entities WHERE id = $1', [s.id])).name, 'Mine', 'unchanged');
});

t.test('scopes', async (t) => {
  const s = (await env.request('POST', '/v1/sub-entities', { key, body: { name: 'Scoped' } })).body.data;
  const ro = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['sub_entities:read'] });
  const none = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['calls:read'] });
  for (const [m, p, body] of [['POST', '/v1/sub-entities', { name: 'x' }], ['PATCH', `/v1/sub-entities/${s.id}`, { name: 'x' }],
    ['DELETE', `/v1/sub-entities/${s.id}`, undefined]] as const) {
    const r = await env.request(m, p, { key: ro.apiKey, body });
    t.equal(r.status, 403, `${m} ${p}`);
    t.equal(r.body.error.code, 'scope_missing');
  }
  t.equal((await env.request('GET', '/v1/sub-entities', { key: ro.apiKey })).status, 200);
  for (const p of ['/v1/sub-entities', `/v1/sub-entities/${s.id}`, `/v1/sub-entities/${s.id}/hipaa-audit`]) {
    const r = await env.request('GET', p, { key: none.apiKey });
    t.equal(r.status, 403, p);
    t.equal(r.body.error.code, 'scope_missing');
  }
});

t.test('bad input names each field; nothing written', async (t) => {
  const before = (await env.db.one('SELECT count(*)::int AS n FROM sub_entities')).n;
  const r = await env.request('POST', '/v1/sub-entities', { key, body: { name: '', colour: 'blue', metadata: { a: 7 } } });
  t.equal(r.status, 400);
  t.equal(r.body.error.code, 'validation_error');
  t.match(r.body.error.fields, { name: String, colour: 'is not a recognized field' });
  t.ok(Object.keys(r.body.error.fields).some((f) => f.startsWith('metadata')), 'metadata named');
  const missing = await env.request('POST', '/v1/sub-entities', { key, body: {} });
  t.match(missing.body.error.fields, { name: 'is required' });
  const s = (await env.request('POST', '/v1/sub-entities', { key, body: { name: 'Ok' } })).body.data;
  t.equal((await env.request('PATCH', `/v1/sub-entities/${s.id}`, { key, body: {} })).status, 400);
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM sub_entities')).n, before + 1);
});
