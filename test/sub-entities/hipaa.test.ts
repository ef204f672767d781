// Sub-entities with calls, contacts and SMS: inheritance, filters, foreign ids; HIPAA mode (compliance:write only,
// audited) and, table-driven, every content-bearing route for a HIPAA sub-entity's call; webhooks of such a call.
import t from 'tap';
import { DEFAULT_ALL_SCOPES } from '../../shared/scopes.ts';
import { CALL_CONTENT_FIELDS } from '../../shared/sub-entities/content-policy.ts';
import { eventually } from '../helpers/env.ts';
import { aiCall, callEnv, callOrg, dial, settled, startRx, subscribeCalls, type CallOrg } from '../calls/helpers.ts';

const { env } = await callEnv(t);

async function setup() {
  const org = await callOrg(env);
  const comp = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: [...DEFAULT_ALL_SCOPES, 'compliance:write'] });
  const sub = (await env.request('POST', '/v1/sub-entities', { key: org.api_key, body: { name: 'Clinic' } })).body.data;
  const phone = (await env.db.one('SELECT id FROM phone_numbers WHERE organization_id = $1 AND phone_number = $2', [org.organization_id, org.from])).id;
  const r = await env.request('PATCH', `/v1/phone-numbers/${phone}`, { key: org.api_key, body: { sub_entity_id: sub.id } });
  if (r.status !== 200) throw new Error(`PATCH number: ${r.status} ${r.text}`);
  return { org, comp: comp.apiKey as string, compId: comp.apiKeyId, sub, phone };
}

const hipaaOn = (org: CallOrg, key: string, subId: string, on: boolean) =>
  env.request('PATCH', `/v1/sub-entities/${subId}`, { key, body: { hipaa_mode: on } });

t.test('a call takes its number\'s sub-entity; filters; a foreign or mismatching sub_entity_id is refused', async (t) => {
  const { org, sub, phone } = await setup();
  const other = await callOrg(env);
  const foreign = (await env.request('POST', '/v1/sub-entities', { key: other.api_key, body: { name: 'Theirs' } })).body.data;
  const n = await env.request('GET', `/v1/phone-numbers/${phone}`, { key: org.api_key });
  t.equal(n.body.data.sub_entity_id, sub.id);
  t.same((await env.request('GET', `/v1/phone-numbers?sub_entity_id=${sub.id}`, { key: org.api_key })).body.data.map((x: any) => x.id), [phone]);
  t.equal((await env.request('PATCH', `/v1/phone-numbers/${phone}`, { key: org.api_key, body: { sub_entity_id: foreign.id } })).body.error.fields.sub_entity_id,
    'is not a sub-entity of your organization');

  const id = (await aiCall(env, org, '+14155550001')).body.data.call_id;
  const c = await env.request('GET', `/v1/calls/${id}`, { key: org.api_key });
  t.equal(c.body.data.sub_entity_id, sub.id, 'inherited from from_number');
  t.same((await env.request('GET', `/v1/calls?sub_entity_id=${sub.id}`, { key: org.api_key })).body.data.map((x: any) => x.id), [id]);
  const other2 = (await env.request('POST', '/v1/sub-entities', { key: org.api_key, body: { name: 'Other clinic' } })).body.data;
  t.same((await env.request('GET', `/v1/calls?sub_entity_id=${other2.id}`, { key: org.api_key })).body.data, []);
  t.equal((await env.request('GET', '/v1/calls?sub_entity_id=nope', { key: org.api_key })).status, 400);

  const mismatch = await aiCall(env, org, '+14155550001', { sub_entity_id: other2.id });
  t.equal(mismatch.status, 400);
  t.match(mismatch.body.error.fields.sub_entity_id, /must be/);
  const foreignCall = await dial(env, org, '+14155550001', '+14155550199', { sub_entity_id: foreign.id });
  t.equal(foreignCall.status, 400);

  // Contacts: set, filter, foreign refused.
  const ct = await env.request('POST', '/v1/contacts', { key: org.api_key, body: { phone_number: '+14155550177', sub_entity_id: sub.id } });
  t.equal(ct.status, 201);
  t.equal(ct.body.data.sub_entity_id, sub.id);
  t.same((await env.request('GET', `/v1/contacts?sub_entity_id=${sub.id}`, { key: org.api_key })).body.data.map((x: any) => x.id), [ct.body.data.id]);
  const bad = await env.request('POST', '/v1/contacts', { key: org.api_key, body: { phone_number: '+14155550178', sub_entity_id: foreign.id } });
  t.equal(bad.status, 400);
  t.same(bad.body.error.fields, { sub_entity_id: 'is not a sub-entity of your organization' });
  t.equal((await env.request('PATCH', `/v1/contacts/${ct.body.data.id}`, { key: org.api_key, body: { sub_entity_id: null } })).body.data.sub_entity_id, null);

  // SMS received on the number takes its sub-entity.
  const sms = await env.request('POST', '/v1/sandbox/sms/inbound', { key: org.api_key, body: { from_number: '+12125550187', to_number: org.from, body: 'See you Tuesday' } });
  t.equal(sms.status, 201, sms.text);
  const msgs = await env.request('GET', `/v1/sms/messages?sub_entity_id=${sub.id}`, { key: org.api_key });
  t.equal(msgs.body.data.length, 1);
  t.equal(msgs.body.data[0].sub_entity_id, sub.id);
  t.equal(msgs.body.data[0].body, 'See you Tuesday', 'shown while HIPAA mode is off');
});

t.test('HIPAA mode needs compliance:write and is audited', async (t) => {
  const { org, comp, compId, sub } = await setup();
  const refused = await hipaaOn(org, org.api_key, sub.id, true);
  t.equal(refused.status, 403, 'a key with every default scope is refused');
  t.equal(refused.body.error.code, 'scope_missing');
  const put = await env.request('PUT', `/v1/sub-entities/${sub.id}/hipaa`, { key: org.api_key, body: { hipaa_mode: true } });
  t.equal(put.status, 403);
  t.equal(put.body.error.code, 'scope_missing');
  t.equal((await env.request('GET', `/v1/sub-entities/${sub.id}`, { key: org.api_key })).body.data.hipaa_mode, false, 'unchanged');

  const on = await hipaaOn(org, comp, sub.id, true);
  t.equal(on.status, 200);
  t.equal(on.body.data.hipaa_mode, true);
  t.equal((await hipaaOn(org, comp, sub.id, true)).status, 200, 'same value again: no audit row');
  const off = await env.request('PUT', `/v1/sub-entities/${sub.id}/hipaa`, { key: comp, body: { hipaa_mode: false, reason: 'Clinic closed; records moved.' } });
  t.equal(off.body.data.hipaa_mode, false);
  const audit = await env.request('GET', `/v1/sub-entities/${sub.id}/hipaa-audit`, { key: org.api_key });
  t.equal(audit.status, 200);
  t.equal(audit.body.data.length, 2);
  t.match(audit.body.data[0], { old_value: true, new_value: false, credential_kind: 'api_key', api_key_id: compId, user_id: org.user_id,
    client_address: /127\.0\.0\.1|::1/, reason: 'Clinic closed; records moved.' });
  t.match(audit.body.data[1], { old_value: false, new_value: true, api_key_id: compId, reason: null });
  const other = await callOrg(env);
  t.equal((await hipaaOn(other, other.api_key, sub.id, true)).status, 403, 'scope checked first');
  const otherComp = await env.createKey({ organizationId: other.organization_id, userId: null, scopes: ['compliance:write', 'sub_entities:write'] });
  t.equal((await hipaaOn(other, otherComp.apiKey, sub.id, true)).status, 404, 'another organization: not found');
});

// Every route that returns call content, once each: `leaks` says whether its answer carries content of the call.
// scope: what the route needs (the org key holds every default scope, which includes these).
const CONTENT_ROUTES: { name: string; path: (id: string) => string; leaks: (r: { status: number; body: any }) => boolean }[] = [
  { name: 'GET /v1/calls/{id}/transcript', path: (id) => `/v1/calls/${id}/transcript`,
    leaks: (r) => r.status !== 403 || r.body?.error?.code !== 'content_policy_forbidden' },
  { name: 'GET /v1/calls/{id}/recording', path: (id) => `/v1/calls/${id}/recording`,
    leaks: (r) => r.status !== 403 || r.body?.error?.code !== 'content_policy_forbidden' },
  { name: 'GET /v1/calls/{id} (recording_url)', path: (id) => `/v1/calls/${id}`,
    leaks: (r) => r.status === 200 && r.body.data.recording_url !== null },
  { name: 'GET /v1/calls (recording_url)', path: () => '/v1/calls?limit=100',
    leaks: (r) => r.status === 200 && r.body.data.some((c: any) => c.recording_url !== null) },
];

t.test('table: no content-bearing route returns content of a HIPAA sub-entity\'s call', async (t) => {
  const { org, comp, sub } = await setup();
  const id = (await dial(env, org, '+14155554567', '+14155550199', { record: true })).body.data.call_id;
  await settled(env, org, id);
  for (const route of CONTENT_ROUTES) {
    const r = await env.request('GET', route.path(id), { key: org.api_key });
    t.ok(route.leaks(r), `${route.name}: content is returned while HIPAA mode is off (the table can fail)`);
  }
  t.equal((await hipaaOn(org, comp, sub.id, true)).status, 200);
  for (const route of CONTENT_ROUTES) {
    const r = await env.request('GET', route.path(id), { key: org.api_key });
    t.notOk(route.leaks(r), `${route.name}: nothing returned under HIPAA mode`);
  }
  // A call of the same organization outside the sub-entity keeps its content.
  await env.request('PATCH', `/v1/phone-numbers/${(await env.db.one('SELECT id FROM phone_numbers WHERE phone_number = $1', [org.from])).id}`,
    { key: org.api_key, body: { sub_entity_id: null } });
  const free = (await dial(env, org, '+14155554567', '+14155550199', { record: true })).body.data.call_id;
  await settled(env, org, free);
  t.equal((await env.request('GET', `/v1/calls/${free}/transcript`, { key: org.api_key })).status, 200);
  t.ok((await env.request('GET', `/v1/calls/${free}`, { key: org.api_key })).body.data.recording_url);
});

t.test('SMS bodies of a HIPAA sub-entity are withheld once delivered', async (t) => {
  const { org, comp, sub } = await setup();
  await env.request('POST', '/v1/sandbox/sms/inbound', { key: org.api_key, body: { from_number: '+12125550187', to_number: org.from, body: 'My results?' } });
  await hipaaOn(org, comp, sub.id, true);
  const list = await env.request('GET', '/v1/sms/messages', { key: org.api_key });
  t.ok(list.body.data.length >= 1);
  for (const m of list.body.data) {
    t.equal(m.body, null);
    t.equal(m.body_withheld, true);
    const one = await env.request('GET', `/v1/sms/messages/${m.id}`, { key: org.api_key });
    t.equal(one.body.data.body, null);
  }
});

t.test('webhooks of a HIPAA sub-entity\'s call carry no content', async (t) => {
  const rx = await startRx(t);
  const { org, comp, sub } = await setup();
  await subscribeCalls(env, rx, org, ['new_call', 'call_completed', 'phone_call.ended']);
  await hipaaOn(org, comp, sub.id, true);
  const id = (await aiCall(env, org, '+14155550001', { record: true })).body.data.call_id;
  await settled(env, org, id);
  const got = await eventually(async () => {
    const mine = rx.unique().filter((r) => r.body?.data?.id === id);
    return mine.length >= 3 ? mine : null;
  }, 20_000);
  for (const d of got) {
    t.equal(d.body.data.sub_entity_id, sub.id, `${d.body.event_type ?? d.path}: names its sub-entity`);
    const text = JSON.stringify(d.body);
    for (const f of CALL_CONTENT_FIELDS) t.notOk(text.includes(`"${f}"`), `${d.path}: no ${f}`);
    t.notOk(text.includes('Ava from Acme'), 'no spoken words');
  }
});
