// The rest of sub-entities (issue 23): usage per sub-entity (the sub_entity_id filter on GET /v1/usage and
// /v1/usage/summary, and a key limited to a sub-entity reading only its own), agents and documents with sub_entity_id
// (create, view, list filter, a limited key seeing only its own, another organization's sub-entity refused with
// fields), and a document's content refused (403 content_policy_forbidden) while its sub-entity is in HIPAA mode.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { DEFAULT_ALL_SCOPES } from '../../shared/scopes.ts';
import { keyer } from '../../shared/redis.ts';
import { SpendAccounts } from '../../shared/spend/spend-accounts.ts';
import { SpendCharges } from '../../shared/spend/charges.ts';
import { callEnv, callOrg, settled, type CallOrg } from '../calls/helpers.ts';

const dir = await mkdtemp(join(tmpdir(), 'olt-subentity-docs-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const { env } = await callEnv(t, { DOCUMENTS_DIR: dir });
const charges = new SpendCharges(env.db, new SpendAccounts(env.redis, keyer(env.config.redisPrefix), env.db));
const today = new Date().toISOString().slice(0, 10);

async function setup() {
  const org = await callOrg(env, {}, { numbers: 3 });
  const key = org.api_key;
  const sub = async (name: string) => (await env.request('POST', '/v1/sub-entities', { key, body: { name } })).body.data;
  const subA = await sub('Clinic A');
  const subB = await sub('Clinic B');
  const [mine, theirs, orgLevel] = org.phone_numbers;
  for (const [n, s] of [[mine, subA.id], [theirs, subB.id]]) {
    const { id } = await env.db.one('SELECT id FROM phone_numbers WHERE organization_id = $1 AND phone_number = $2', [org.organization_id, n]);
    const r = await env.request('PATCH', `/v1/phone-numbers/${id}`, { key, body: { sub_entity_id: s } });
    if (r.status !== 200) throw new Error(`PATCH number: ${r.status} ${r.text}`);
  }
  const made = await env.request('POST', '/v1/api-keys', { key, body: { name: 'Clinic A only', scopes: [...DEFAULT_ALL_SCOPES], sub_entity_id: subA.id } });
  if (made.status !== 201) throw new Error(`POST /v1/api-keys: ${made.status} ${made.text}`);
  const keyWith = async (...scopes: string[]) =>
    (await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: scopes as never })).apiKey;
  return { org, key, limited: made.body.data.key as string, subA, subB, numbers: { mine, theirs, orgLevel }, keyWith };
}

// Another organization, with a sub-entity of its own: its id is refused wherever a body names a sub-entity.
const stranger = await callOrg(env);
const strangerSub = (await env.request('POST', '/v1/sub-entities', { key: stranger.api_key, body: { name: 'Elsewhere' } })).body.data;

t.test('usage per sub-entity: the filter counts its calls and SMS with their spend; a limited key reads only its own', async (t) => {
  const s = await setup();
  const ai = async (from: string, to: string) => {
    const r = await env.request('POST', '/v1/calls', { key: s.key, body: { from_number: from, to_number: to, agent: { name: 'Ava', greeting: 'Hi.' } } });
    if (r.status !== 202) throw new Error(`POST /v1/calls: ${r.status} ${r.text}`);
    return r.body.data.call_id as string;
  };
  const callA = await ai(s.numbers.mine, '+14155550611');
  const callB = await ai(s.numbers.theirs, '+14155550612');
  const callOrgLevel = await ai(s.numbers.orgLevel, '+14155550613');
  for (const id of [callA, callB, callOrgLevel]) await settled(env, s.org as CallOrg, id, 120_000);
  const cost = async (id: string) => (await env.db.one('SELECT cost_cents FROM calls WHERE id = $1', [id])).cost_cents as number;
  const costA = await cost(callA);
  t.ok(costA > 0, `A's call cost ${costA} cents`);

  // An SMS of sub-entity A (received on its number) charged as the hand-over charges one (kind sms, ref the message
  // id), one of B, and an organization-level reputation check.
  const inbound = async (to: string, from: string) => {
    const r = await env.request('POST', '/v1/sandbox/sms/inbound', { key: s.key, body: { from_number: from, to_number: to, body: 'hello' } });
    if (r.status >= 300) throw new Error(`inbound: ${r.status} ${r.text}`);
    return r.body.data.message as { id: string; sub_entity_id: string | null };
  };
  const smsA = await inbound(s.numbers.mine, '+12125550621');
  const smsB = await inbound(s.numbers.theirs, '+12125550622');
  t.equal(smsA.sub_entity_id, s.subA.id);
  const oid = s.org.organization_id;
  for (const c of [{ kind: 'sms' as const, ref: smsA.id, cents: 7, quantity: 2 }, { kind: 'sms' as const, ref: smsB.id, cents: 11, quantity: 3 },
    { kind: 'reputation_check' as const, ref: `rep-${oid}`, cents: 5, quantity: 1 }]) {
    const r = await charges.charge({ organizationId: oid, ...c, capCents: 100_000_000 });
    t.ok(r.charged, `${c.kind} ${c.ref} charged`);
  }

  const usage = async (query: string, key = s.key) => env.request('GET', `/v1/usage?from=${today}&to=${today}${query}`, { key });
  const a = await usage(`&sub_entity_id=${s.subA.id}`);
  t.equal(a.status, 200, a.text);
  const dayA = a.body.data[0];
  t.same(dayA.calls, { total: 1, bridge: 0, ai: 1, webrtc: 0, room: 0, inbound: 0 }, 'only A\'s call');
  t.same(dayA.minutes, { total: 1, bridge: 0, ai: 1, webrtc: 0, room: 0, inbound: 0 });
  t.equal(dayA.sms_segments, 2, 'only A\'s SMS segments');
  t.equal(dayA.reputation_checks, 0, 'reputation checks are the organization\'s');
  t.same(dayA.spend_cents, { total: costA + 7, calls: costA, sms: 7, reputation_checks: 0, remediation: 0 });

  const all = (await usage('')).body.data[0];
  t.equal(all.calls.total, 3, 'the organization counts every call');
  t.equal(all.sms_segments, 5);
  t.equal(all.reputation_checks, 1);
  t.ok(all.spend_cents.total > dayA.spend_cents.total);
  const b = (await usage(`&sub_entity_id=${s.subB.id}`)).body.data[0];
  t.equal(b.calls.total, 1);
  t.equal(b.sms_segments, 3);
  t.equal(b.spend_cents.sms, 11);

  // The limited key: its own without asking; naming another sub-entity counts nothing.
  const lim = await usage('', s.limited);
  t.equal(lim.status, 200, lim.text);
  t.same(lim.body.data[0], dayA, 'a limited key reads its sub-entity\'s usage');
  const limOther = (await usage(`&sub_entity_id=${s.subB.id}`, s.limited)).body.data[0];
  t.equal(limOther.calls.total, 0, 'naming another sub-entity counts nothing');
  t.equal(limOther.spend_cents.total, 0);

  // The summary: today and month are the sub-entity's; the plan stays the organization's.
  const sumA = await env.request('GET', `/v1/usage/summary?sub_entity_id=${s.subA.id}`, { key: s.key });
  t.equal(sumA.status, 200, sumA.text);
  t.same(sumA.body.data.today, dayA);
  t.same({ ...sumA.body.data.month, period: today }, dayA, 'the month so far is that one day');
  t.equal(sumA.body.data.plan.used_voice_minutes, 3, 'the plan counts the organization\'s minutes');
  const sumLim = (await env.request('GET', '/v1/usage/summary', { key: s.limited })).body.data;
  t.same(sumLim.today, dayA, 'the limited key\'s summary is its sub-entity\'s');

  // Bad input, another organization's sub-entity, scopes, tenancy.
  for (const path of ['/v1/usage', '/v1/usage/summary']) {
    const bad = await env.request('GET', `${path}?sub_entity_id=not-a-uuid`, { key: s.key });
    t.equal(bad.status, 400, `${path}: malformed filter`);
    t.equal(bad.body.error.code, 'validation_error');
    t.ok(bad.body.error.fields.sub_entity_id, 'names the field');
    const noScope = await env.request('GET', `${path}?sub_entity_id=${s.subA.id}`, { key: await s.keyWith('calls:read') });
    t.equal(noScope.status, 403);
    t.equal(noScope.body.error.code, 'scope_missing');
  }
  const foreign = (await usage(`&sub_entity_id=${strangerSub.id}`)).body.data[0];
  t.equal(foreign.calls.total, 0, 'another organization\'s sub-entity counts nothing');
  const theirs = (await env.request('GET', `/v1/usage?from=${today}&to=${today}&sub_entity_id=${s.subA.id}`, { key: stranger.api_key })).body.data[0];
  t.equal(theirs.calls.total, 0, 'another organization naming our sub-entity sees none of its usage');
  t.equal(theirs.sms_segments, 0);
});

t.test('agents: sub_entity_id on create, update, view and list; a limited key sees only its own', async (t) => {
  const s = await setup();
  const create = (key: string, body: Record<string, unknown>) => env.request('POST', '/v1/agents', { key, body });
  const a = await create(s.key, { name: 'A agent', sub_entity_id: s.subA.id });
  t.equal(a.status, 201, a.text);
  t.equal(a.body.data.sub_entity_id, s.subA.id);
  const b = (await create(s.key, { name: 'B agent', sub_entity_id: s.subB.id })).body.data;
  const none = (await create(s.key, { name: 'Org agent' })).body.data;
  t.equal(none.sub_entity_id, null, 'none by default');

  const foreign = await create(s.key, { name: 'x', sub_entity_id: strangerSub.id });
  t.equal(foreign.status, 400, 'another organization\'s sub-entity');
  t.equal(foreign.body.error.code, 'validation_error');
  t.equal(foreign.body.error.fields.sub_entity_id, 'is not a sub-entity of your organization');
  const malformed = await create(s.key, { name: 'x', sub_entity_id: 'nope' });
  t.equal(malformed.status, 400);
  t.ok(malformed.body.error.fields.sub_entity_id);
  const patchForeign = await env.request('PATCH', `/v1/agents/${none.id}`, { key: s.key, body: { sub_entity_id: strangerSub.id } });
  t.equal(patchForeign.status, 400);
  t.equal(patchForeign.body.error.fields.sub_entity_id, 'is not a sub-entity of your organization');

  const list = async (key: string, q = '') => (await env.request('GET', `/v1/agents${q}`, { key })).body.data.map((x: any) => x.id);
  t.same(await list(s.key, `?sub_entity_id=${s.subB.id}`), [b.id], 'the filter');
  t.same((await list(s.key)).sort(), [a.body.data.id, b.id, none.id].sort(), 'the organization sees all');
  t.equal((await env.request('GET', '/v1/agents?sub_entity_id=nope', { key: s.key })).status, 400, 'malformed filter');

  // The limited key.
  t.same(await list(s.limited), [a.body.data.id], 'a limited key lists only its own');
  t.same(await list(s.limited, `?sub_entity_id=${s.subB.id}`), [], 'naming another lists nothing');
  t.equal((await env.request('GET', `/v1/agents/${a.body.data.id}`, { key: s.limited })).status, 200);
  for (const id of [b.id, none.id]) {
    const r = await env.request('GET', `/v1/agents/${id}`, { key: s.limited });
    t.equal(r.status, 404, 'another sub-entity\'s (or the organization\'s) agent is not_found');
    t.equal(r.body.error.code, 'not_found');
    t.equal((await env.request('PATCH', `/v1/agents/${id}`, { key: s.limited, body: { name: 'mine now' } })).status, 404);
    t.equal((await env.request('DELETE', `/v1/agents/${id}`, { key: s.limited })).status, 404);
  }
  t.equal((await env.request('GET', `/v1/agents/${b.id}`, { key: s.key })).body.data.name, 'B agent', 'unchanged');
  // An AI call from the limited key's own number with another sub-entity's agent is refused, nothing placed.
  const callsBefore = (await env.db.one('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1', [s.org.organization_id])).n;
  const ai = await env.request('POST', '/v1/calls', { key: s.limited, body: { from_number: s.numbers.mine, to_number: '+14155554567', agent_id: b.id } });
  t.equal(ai.status, 400, ai.text);
  t.ok(ai.body.error.fields?.agent_id, 'the agent is named');
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1', [s.org.organization_id])).n, callsBefore, 'no call row');
  const own = await create(s.limited, { name: 'Made by A' });
  t.equal(own.status, 201);
  t.equal(own.body.data.sub_entity_id, s.subA.id, 'what it creates lands in its sub-entity');
  const elsewhere = await create(s.limited, { name: 'x', sub_entity_id: s.subB.id });
  t.equal(elsewhere.status, 400);
  t.ok(elsewhere.body.error.fields.sub_entity_id);

  // Tenancy and scope; PATCH null detaches; a sub-entity with a live agent is in use.
  t.equal((await env.request('GET', `/v1/agents/${a.body.data.id}`, { key: stranger.api_key })).status, 404, 'another organization: 404');
  const noScope = await env.request('GET', '/v1/agents', { key: await s.keyWith('calls:read') });
  t.equal(noScope.status, 403);
  t.equal(noScope.body.error.code, 'scope_missing');
  const del = await env.request('DELETE', `/v1/sub-entities/${s.subB.id}`, { key: s.key });
  t.equal(del.status, 409, 'a sub-entity with an agent is in use');
  t.match(del.body.error.message, /1 agents/);
  const detached = await env.request('PATCH', `/v1/agents/${b.id}`, { key: s.key, body: { sub_entity_id: null } });
  t.equal(detached.body.data.sub_entity_id, null);
  const again = await env.request('DELETE', `/v1/sub-entities/${s.subB.id}`, { key: s.key });
  t.equal(again.status, 409, 'still in use (its phone number)');
  t.notMatch(again.body.error.message, /agents/, 'but no longer for an agent');
});

t.test('documents: sub_entity_id on upload, views and list; a limited key sees only its own; HIPAA refuses content', async (t) => {
  const s = await setup();
  const TEXT = Buffer.from('Opening hours: Mon-Fri 8:00-17:00.\n');
  const json = (key: string, extra: Record<string, unknown>) => env.request('POST', '/v1/documents',
    { key, body: { purpose: 'agent_knowledge', name: 'hours.txt', content_base64: TEXT.toString('base64'), ...extra } });
  const boundary = '----oltsub';
  const form = (fields: Record<string, string>) => Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="hours.txt"\r\nContent-Type: text/plain\r\n\r\n`), TEXT,
    Buffer.from('\r\n'),
    ...Object.entries(fields).map(([k, v]) => Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)),
    Buffer.from(`--${boundary}--\r\n`)]);
  const multipart = (key: string, fields: Record<string, string>) => env.request('POST', '/v1/documents',
    { key, rawBody: form(fields), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } });

  const docA = await json(s.key, { sub_entity_id: s.subA.id });
  t.equal(docA.status, 201, docA.text);
  t.equal(docA.body.data.sub_entity_id, s.subA.id, 'JSON member');
  const docB = await multipart(s.key, { purpose: 'agent_knowledge', sub_entity_id: s.subB.id });
  t.equal(docB.status, 201, docB.text);
  t.equal(docB.body.data.sub_entity_id, s.subB.id, 'multipart field');
  const docOrg = (await json(s.key, { sub_entity_id: null })).body.data;
  t.equal(docOrg.sub_entity_id, null);
  const before = (await env.db.one('SELECT count(*)::int AS n FROM documents WHERE organization_id = $1', [s.org.organization_id])).n;
  for (const [how, r] of [['JSON', await json(s.key, { sub_entity_id: strangerSub.id })],
    ['multipart', await multipart(s.key, { purpose: 'agent_knowledge', sub_entity_id: strangerSub.id })],
    ['malformed', await json(s.key, { sub_entity_id: 'nope' })]] as const) {
    t.equal(r.status, 400, `${how}: refused`);
    t.equal(r.body.error.code, 'validation_error');
    t.equal(r.body.error.fields.sub_entity_id, 'is not a sub-entity of your organization', `${how}: fields.sub_entity_id`);
  }
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM documents WHERE organization_id = $1', [s.org.organization_id])).n, before,
    'nothing written');

  const list = async (key: string, q = '') => {
    const r = await env.request('GET', `/v1/documents${q}`, { key });
    if (r.status !== 200) throw new Error(`list: ${r.status} ${r.text}`);
    return r.body.data.map((x: any) => x.id);
  };
  t.same(await list(s.key, `?sub_entity_id=${s.subA.id}`), [docA.body.data.id], 'the filter');
  t.equal((await list(s.key)).length, 3);
  t.equal((await env.request('GET', '/v1/documents?sub_entity_id=nope', { key: s.key })).status, 400, 'malformed filter');

  // The limited key: only its own, by list and id; uploads land in its sub-entity.
  t.same(await list(s.limited), [docA.body.data.id], 'a limited key lists its own');
  t.same(await list(s.limited, `?sub_entity_id=${s.subB.id}`), []);
  for (const id of [docB.body.data.id, docOrg.id]) {
    for (const path of [`/v1/documents/${id}`, `/v1/documents/${id}/content`]) {
      const r = await env.request('GET', path, { key: s.limited });
      t.equal(r.status, 404, `${path}: not_found for a limited key`);
      t.equal(r.body.error.code, 'not_found');
    }
    t.equal((await env.request('DELETE', `/v1/documents/${id}`, { key: s.limited })).status, 404);
  }
  t.equal((await env.request('GET', `/v1/documents/${docB.body.data.id}`, { key: s.key })).status, 200, 'still there');
  t.equal((await env.request('GET', `/v1/documents/${docA.body.data.id}/content`, { key: s.limited })).text, TEXT.toString());
  const made = await json(s.limited, {});
  t.equal(made.body.data.sub_entity_id, s.subA.id, 'a limited key uploads into its own');
  const elsewhere = await json(s.limited, { sub_entity_id: s.subB.id });
  t.equal(elsewhere.status, 400);
  t.ok(elsewhere.body.error.fields.sub_entity_id);
  const agentB = (await env.request('POST', '/v1/agents', { key: s.key, body: { name: 'B', sub_entity_id: s.subB.id } })).body.data;
  const attach = await json(s.limited, { agent_id: agentB.id });
  t.equal(attach.status, 400, 'a limited key attaches only its sub-entity\'s agents');
  t.ok(attach.body.error.fields.agent_id);

  // Tenancy and scopes.
  t.equal((await env.request('GET', `/v1/documents/${docA.body.data.id}`, { key: stranger.api_key })).status, 404);
  const noScope = await env.request('GET', `/v1/documents/${docA.body.data.id}`, { key: await s.keyWith('caller_trust:read') });
  t.equal(noScope.status, 403);
  t.equal(noScope.body.error.code, 'scope_missing');

  // HIPAA mode on A: its documents' content is refused, metadata stays; B's and the organization's are unaffected.
  const comp = (await env.createKey({ organizationId: s.org.organization_id, userId: s.org.user_id,
    scopes: [...DEFAULT_ALL_SCOPES, 'compliance:write'] })).apiKey;
  t.equal((await env.request('PUT', `/v1/sub-entities/${s.subA.id}/hipaa`, { key: comp, body: { hipaa_mode: true } })).status, 200);
  for (const key of [s.key, s.limited]) {
    const c = await env.request('GET', `/v1/documents/${docA.body.data.id}/content`, { key });
    t.equal(c.status, 403, 'content refused in HIPAA mode');
    t.equal(c.body.error.code, 'content_policy_forbidden');
    t.notOk(c.text.includes('Opening hours'), 'no bytes');
    const m = await env.request('GET', `/v1/documents/${docA.body.data.id}`, { key });
    t.equal(m.status, 200, 'metadata stays');
    t.equal(m.body.data.sub_entity_id, s.subA.id);
  }
  t.equal((await env.request('GET', `/v1/documents/${docB.body.data.id}/content`, { key: s.key })).status, 200, 'B is not pinned');
  t.equal((await env.request('GET', `/v1/documents/${docOrg.id}/content`, { key: s.key })).status, 200, 'nor the organization\'s');
  t.equal((await env.request('PUT', `/v1/sub-entities/${s.subA.id}/hipaa`, { key: comp, body: { hipaa_mode: false } })).status, 200);
  t.equal((await env.request('GET', `/v1/documents/${docA.body.data.id}/content`, { key: s.key })).status, 200, 'readable again when off');

  const del = await env.request('DELETE', `/v1/sub-entities/${s.subB.id}`, { key: s.key });
  t.equal(del.status, 409, 'a sub-entity with documents is in use');
  t.match(del.body.error.message, /documents/);
});
