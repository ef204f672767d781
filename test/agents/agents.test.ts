import t from 'tap';
import { testEnv } from '../helpers/env.ts';

const env = await testEnv(t);
const org = await env.bootstrap({ org: 'Agents Co' });
const other = await env.bootstrap({ org: 'Other Co' });
const key = org.api_key;

t.test('create, read, update, list and delete an agent', async (t) => {
  const c = await env.request('POST', '/v1/agents', { key, body: { name: 'Reminder bot', greeting: 'Hi there', voice: 'warm' } });
  t.equal(c.status, 201);
  const a = c.body.data;
  t.match(a, { name: 'Reminder bot', greeting: 'Hi there', prompt: '', voice: 'warm' });
  t.match(a.id, /^[0-9a-f-]{36}$/);

  const g = await env.request('GET', `/v1/agents/${a.id}`, { key });
  t.same(g.body.data, a);

  const p = await env.request('PATCH', `/v1/agents/${a.id}`, { key, body: { prompt: 'Remind about the appointment.' } });
  t.equal(p.status, 200);
  t.equal(p.body.data.prompt, 'Remind about the appointment.');
  t.equal(p.body.data.name, 'Reminder bot', 'omitted fields stay');

  const l = await env.request('GET', '/v1/agents', { key });
  t.equal(l.status, 200);
  t.same(l.body.data.map((x: { id: string }) => x.id), [a.id]);

  const d = await env.request('DELETE', `/v1/agents/${a.id}`, { key });
  t.equal(d.status, 204);
  t.equal(d.text, '');
  t.equal((await env.request('GET', `/v1/agents/${a.id}`, { key })).status, 404);
  t.equal((await env.request('DELETE', `/v1/agents/${a.id}`, { key })).status, 404);
  t.same((await env.request('GET', '/v1/agents', { key })).body.data, []);
  const row = await env.db.one('SELECT deleted_at FROM agents WHERE id = $1', [a.id]);
  t.ok(row.deleted_at, 'history kept');
});

t.test('validation names each bad field', async (t) => {
  const before = (await env.db.one('SELECT count(*)::int AS n FROM agents')).n;
  const r = await env.request('POST', '/v1/agents', { key, body: { greeting: '', colour: 'blue', voice: 7 } });
  t.equal(r.status, 400);
  t.equal(r.body.error.code, 'validation_error');
  t.match(r.body.error.fields, { name: 'is required', colour: 'is not a recognized field', greeting: String, voice: String });
  t.equal((await env.request('PATCH', '/v1/agents/00000000-0000-7000-8000-000000000000', { key, body: {} })).status, 400);
  const n = await env.db.one('SELECT count(*)::int AS n FROM agents');
  t.equal(n.n, before, 'nothing written');
});

t.test('scopes and organizations', async (t) => {
  const a = (await env.request('POST', '/v1/agents', { key, body: { name: 'Mine' } })).body.data;
  t.equal((await env.request('GET', `/v1/agents/${a.id}`, { key: other.api_key })).status, 404, 'another org sees not_found');
  t.equal((await env.request('PATCH', `/v1/agents/${a.id}`, { key: other.api_key, body: { name: 'x' } })).status, 404);
  t.same((await env.request('GET', '/v1/agents', { key: other.api_key })).body.data, []);
  t.equal((await env.request('GET', '/v1/agents/not-a-uuid', { key })).status, 404);
  const ro = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['agents:read'] });
  const w = await env.request('POST', '/v1/agents', { key: ro.apiKey, body: { name: 'x' } });
  t.equal(w.status, 403);
  t.equal(w.body.error.code, 'scope_missing');
  t.equal((await env.request('GET', '/v1/agents', { key: ro.apiKey })).status, 200);
});
