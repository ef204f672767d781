// Keys limited to one sub-entity (shared/sub-entities/limit.ts): a table over the list and id routes of numbers, calls,
// contacts and SMS (the limited key sees its own; not the other sub-entity's, not the organization's); creation lands
// in its sub-entity; placement from a number outside it is refused; what needs the whole organization is refused; and
// contact_replied of a HIPAA sub-entity's message carries no body.
import t from 'tap';
import { DEFAULT_ALL_SCOPES } from '../../shared/scopes.ts';
import { eventually } from '../helpers/env.ts';
import { callEnv, callOrg, startRx } from '../calls/helpers.ts';

const { env } = await callEnv(t);

async function setup() {
  const org = await callOrg(env, {}, { numbers: 3 });
  const [mine, theirs, orgLevel] = org.phone_numbers;
  const key = org.api_key;
  const subA = (await env.request('POST', '/v1/sub-entities', { key, body: { name: 'Clinic A' } })).body.data;
  const subB = (await env.request('POST', '/v1/sub-entities', { key, body: { name: 'Clinic B' } })).body.data;
  const phoneId = async (n: string) => (await env.db.one('SELECT id FROM phone_numbers WHERE organization_id = $1 AND phone_number = $2', [org.organization_id, n])).id;
  const ids = { mine: await phoneId(mine), theirs: await phoneId(theirs), orgLevel: await phoneId(orgLevel) };
  for (const [id, sub] of [[ids.mine, subA.id], [ids.theirs, subB.id]]) {
    const r = await env.request('PATCH', `/v1/phone-numbers/${id}`, { key, body: { sub_entity_id: sub } });
    if (r.status !== 200) throw new Error(`PATCH number: ${r.status} ${r.text}`);
  }
  const made = await env.request('POST', '/v1/api-keys', { key, body: { name: 'Clinic A only', scopes: [...DEFAULT_ALL_SCOPES], sub_entity_id: subA.id } });
  if (made.status !== 201) throw new Error(`POST /v1/api-keys: ${made.status} ${made.text}`);
  return { org, key, limited: made.body.data.key as string, made: made.body.data, subA, subB, numbers: { mine, theirs, orgLevel }, ids };
}

const aiCall = (key: string, from: string, to = '+14155550001') =>
  env.request('POST', '/v1/calls', { key, body: { from_number: from, to_number: to, agent: { name: 'Ava', greeting: 'Hi.' } } });

t.test('a limited key sees only its sub-entity: lists and ids of numbers, calls, contacts, SMS', async (t) => {
  const s = await setup();
  t.equal(s.made.sub_entity_id, s.subA.id, 'the key says what it is limited to');
  // One resource of each kind in A (mine), in B (theirs) and of the organization (none), made with the org key.
  const calls = {
    mine: (await aiCall(s.key, s.numbers.mine)).body.data.call_id,
    theirs: (await aiCall(s.key, s.numbers.theirs)).body.data.call_id,
    orgLevel: (await aiCall(s.key, s.numbers.orgLevel)).body.data.call_id,
  };
  const contact = async (n: string, sub: string | null) =>
    (await env.request('POST', '/v1/contacts', { key: s.key, body: { phone_number: n, sub_entity_id: sub } })).body.data.id;
  const contacts = { mine: await contact('+14155550301', s.subA.id), theirs: await contact('+14155550302', s.subB.id), orgLevel: await contact('+14155550303', null) };
  const inbound = async (to: string, from: string) =>
    (await env.request('POST', '/v1/sandbox/sms/inbound', { key: s.key, body: { from_number: from, to_number: to, body: 'hello' } })).body.data.message.id;
  const sms = { mine: await inbound(s.numbers.mine, '+12125550401'), theirs: await inbound(s.numbers.theirs, '+12125550402'), orgLevel: await inbound(s.numbers.orgLevel, '+12125550403') };

  const table: { kind: string; list: string; id: (x: string | number) => string; ids: Record<'mine' | 'theirs' | 'orgLevel', string | number> }[] = [
    { kind: 'phone number', list: '/v1/phone-numbers', id: (x) => `/v1/phone-numbers/${x}`, ids: s.ids },
    { kind: 'call', list: '/v1/calls', id: (x) => `/v1/calls/${x}`, ids: calls },
    { kind: 'call transcript', list: '/v1/calls', id: (x) => `/v1/calls/${x}/transcript`, ids: calls },
    { kind: 'contact', list: '/v1/contacts', id: (x) => `/v1/contacts/${x}`, ids: contacts },
    { kind: 'contact consents', list: '/v1/contacts', id: (x) => `/v1/contacts/${x}/consents`, ids: contacts },
    { kind: 'contact opt-outs', list: '/v1/contacts', id: (x) => `/v1/contacts/${x}/opt-outs`, ids: contacts },
    { kind: 'SMS message', list: '/v1/sms/messages', id: (x) => `/v1/sms/messages/${x}`, ids: sms },
  ];
  for (const row of table) {
    const list = await env.request('GET', row.list, { key: s.limited });
    t.equal(list.status, 200, `${row.kind}: list`);
    const seen = list.body.data.map((x: any) => x.id);
    t.ok(seen.includes(row.ids.mine), `${row.kind}: the list shows its own`);
    t.notOk(seen.includes(row.ids.theirs), `${row.kind}: not the other sub-entity's`);
    t.notOk(seen.includes(row.ids.orgLevel), `${row.kind}: not the organization's`);
    t.ok(list.body.data.every((x: any) => x.sub_entity_id === s.subA.id), `${row.kind}: every row is of its sub-entity`);
    const other = await env.request('GET', `${row.list}?sub_entity_id=${s.subB.id}`, { key: s.limited });
    t.same(other.body.data, [], `${row.kind}: filtering by another sub-entity shows nothing`);
    const own = await env.request('GET', row.id(row.ids.mine), { key: s.limited });
    t.not(own.status, 404, `${row.kind}: its own by id`);
    for (const which of ['theirs', 'orgLevel'] as const) {
      const r = await env.request('GET', row.id(row.ids[which]), { key: s.limited });
      t.equal(r.status, 404, `${row.kind}: ${which} by id is 404`);
      t.equal(r.body.error.code, 'not_found');
      t.notOk(JSON.stringify(r.body).includes('Clinic B'), 'nothing leaks');
      t.not((await env.request('GET', row.id(row.ids[which]), { key: s.key })).status, 404, `${row.kind}: the org key reads ${which}`);
    }
  }
  // Writes by id on another sub-entity's resources are 404 too.
  t.equal((await env.request('PATCH', `/v1/contacts/${contacts.theirs}`, { key: s.limited, body: { name: 'x' } })).status, 404);
  t.equal((await env.request('DELETE', `/v1/contacts/${contacts.orgLevel}`, { key: s.limited })).status, 404);
  t.equal((await env.request('PATCH', `/v1/phone-numbers/${s.ids.theirs}`, { key: s.limited, body: { sub_entity_id: s.subA.id } })).status, 404);
  t.equal((await env.request('DELETE', `/v1/phone-numbers/${s.ids.orgLevel}`, { key: s.limited })).status, 404);
  t.equal((await env.request('POST', `/v1/calls/${calls.theirs}/hangup`, { key: s.limited })).status, 404);
  // Sub-entity routes: only its own.
  const subs = await env.request('GET', '/v1/sub-entities', { key: s.limited });
  t.same(subs.body.data.map((x: any) => x.id), [s.subA.id]);
  t.equal((await env.request('GET', `/v1/sub-entities/${s.subB.id}`, { key: s.limited })).status, 404);
  t.equal((await env.request('GET', `/v1/sub-entities/${s.subA.id}`, { key: s.limited })).status, 200);
});

t.test('creation lands in its sub-entity; placement from outside numbers is refused; whole-organization acts are refused', async (t) => {
  const s = await setup();
  const c = await env.request('POST', '/v1/contacts', { key: s.limited, body: { phone_number: '+14155550311' } });
  t.equal(c.status, 201);
  t.equal(c.body.data.sub_entity_id, s.subA.id, 'a contact without sub_entity_id is assigned to the key\'s');
  const elsewhere = await env.request('POST', '/v1/contacts', { key: s.limited, body: { phone_number: '+14155550312', sub_entity_id: s.subB.id } });
  t.equal(elsewhere.status, 400);
  t.match(elsewhere.body.error.fields, { sub_entity_id: /limited to sub-entity/ });
  const detach = await env.request('PATCH', `/v1/contacts/${c.body.data.id}`, { key: s.limited, body: { sub_entity_id: null } });
  t.equal(detach.status, 400, 'cannot move its contact out');

  const call = await aiCall(s.limited, s.numbers.mine);
  t.equal(call.status, 202, call.text);
  t.equal((await env.request('GET', `/v1/calls/${call.body.data.call_id}`, { key: s.limited })).body.data.sub_entity_id, s.subA.id);
  for (const from of [s.numbers.theirs, s.numbers.orgLevel]) {
    const r = await aiCall(s.limited, from);
    t.equal(r.status, 403, `a call from ${from} is refused`);
    t.equal(r.body.error.code, 'forbidden');
    t.ok(r.body.error.fields.from_number);
    const d = await env.request('POST', '/v1/calls/dial', { key: s.limited, body: { from_number: from, to_number: '+14155550001', connect_number: '+14155550199' } });
    t.equal(d.status, 403);
    const m = await env.request('POST', '/v1/sms/send', { key: s.limited, body: { from_number: from, to_number: '+14155550001', body: 'hi' } });
    t.equal(m.status, 403, `an SMS from ${from} is refused`);
    t.ok(m.body.error.fields.from_number);
    const rx = await env.request('POST', '/v1/sandbox/sms/inbound', { key: s.limited, body: { from_number: '+12125550411', to_number: from, body: 'x' } });
    t.equal(rx.status, 403);
  }
  const before = await env.db.one('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1', [s.org.organization_id]);
  t.equal(before.n, 1, 'no refused call left a row');

  const key = await env.request('POST', '/v1/api-keys', { key: s.limited, body: { name: 'x', scopes: ['calls:read'] } });
  t.equal(key.status, 403, 'a limited key makes no keys');
  t.equal(key.body.error.code, 'forbidden');
  const foreign = await callOrg(env);
  const foreignSub = (await env.request('POST', '/v1/sub-entities', { key: foreign.api_key, body: { name: 'Theirs' } })).body.data;
  const bad = await env.request('POST', '/v1/api-keys', { key: s.key, body: { name: 'x', scopes: ['calls:read'], sub_entity_id: foreignSub.id } });
  t.equal(bad.status, 400, 'another organization\'s sub-entity is refused');
  t.same(bad.body.error.fields, { sub_entity_id: 'is not a sub-entity of your organization' });
  const comp = await env.createKey({ organizationId: s.org.organization_id, userId: s.org.user_id, scopes: [...DEFAULT_ALL_SCOPES, 'compliance:write'], subEntityId: s.subA.id });
  const hipaa = await env.request('PATCH', `/v1/sub-entities/${s.subA.id}`, { key: comp.apiKey, body: { hipaa_mode: true } });
  t.equal(hipaa.status, 403, 'a limited key cannot change HIPAA mode, even with compliance:write');
  t.equal(hipaa.body.error.code, 'forbidden');
  t.equal((await env.request('POST', '/v1/sub-entities', { key: s.limited, body: { name: 'New' } })).status, 403);
  t.equal((await env.request('DELETE', `/v1/sub-entities/${s.subA.id}`, { key: s.limited })).status, 403);
  t.equal((await env.request('GET', '/v1/appointments', { key: s.limited })).status, 403, 'appointments belong to the organization');
  t.equal((await env.request('GET', '/v1/calls/stream', { key: s.limited })).status, 403);

  // Another organization's key reads none of it; a limited key lacking a scope is refused with scope_missing.
  t.equal((await env.request('GET', `/v1/contacts/${c.body.data.id}`, { key: foreign.api_key })).status, 404);
  const narrow = await env.createKey({ organizationId: s.org.organization_id, userId: null, scopes: ['calls:read'], subEntityId: s.subA.id });
  const nope = await env.request('GET', '/v1/contacts', { key: narrow.apiKey });
  t.equal(nope.status, 403);
  t.equal(nope.body.error.code, 'scope_missing');
});

t.test('client tokens minted from a limited key inherit its limit', async (t) => {
  const s = await setup();
  const minted = await env.request('POST', '/v1/client-tokens', { key: s.limited, body: { from_numbers: [s.numbers.theirs], scopes: ['calls:read', 'calls:write'] } });
  t.equal(minted.status, 201, minted.text);
  const token = minted.body.data.token;
  const r = await aiCall(token, s.numbers.theirs);
  t.equal(r.status, 403, 'a token of the limited key places no call from the other sub-entity\'s number');
  t.same((await env.request('GET', '/v1/calls', { key: token })).body.data, []);
});

t.test('contact_replied of a HIPAA sub-entity\'s message carries no body', async (t) => {
  const rx = await startRx(t);
  const s = await setup();
  const comp = await env.createKey({ organizationId: s.org.organization_id, userId: s.org.user_id, scopes: [...DEFAULT_ALL_SCOPES, 'compliance:write'] });
  t.equal((await env.request('PATCH', `/v1/sub-entities/${s.subA.id}`, { key: comp.apiKey, body: { hipaa_mode: true } })).status, 200);
  const sub = await env.request('POST', '/api/v1/webhook_subscriptions', { key: s.key, body: { webhook_url: rx.url(`/${s.org.organization_id}/replied`), event_type: 'contact_replied' } });
  t.equal(sub.status, 201, sub.text);
  const send = (to: string, body: string) => env.request('POST', '/v1/sandbox/sms/inbound', { key: s.key, body: { from_number: '+12125550501', to_number: to, body } });
  const pinned = (await send(s.numbers.mine, 'my secret diagnosis')).body.data.message.id;
  const open = (await send(s.numbers.theirs, 'see you Tuesday')).body.data.message.id;
  const got = await eventually(async () => {
    const all = rx.unique().filter((r) => r.path === `/${s.org.organization_id}/replied`);
    const p = all.find((r) => r.body?.data?.id === pinned);
    const o = all.find((r) => r.body?.data?.id === open);
    return p && o ? { p, o } : null;
  }, 20_000);
  t.equal(got.p.body.data.body, null, 'the HIPAA sub-entity\'s reply carries no body');
  t.equal(got.p.body.data.body_withheld, true);
  t.notOk(JSON.stringify(got.p.body).includes('diagnosis'), 'the words appear nowhere in the payload');
  t.equal(got.o.body.data.body, 'see you Tuesday', 'another sub-entity\'s reply carries its body');
});

// Routes of the whole organization refuse a limited key in the pipeline (gateway/http/stages/scope.ts): deny unless
// the route narrows to the sub-entity. Each is readable with the organization's key.
const WHOLE_ORGANIZATION = [
  '/v1/number-health/numbers', '/v1/number-health/policy', '/v1/number-registration', '/v1/caller-trust/enterprise',
  '/v1/caller-trust/reputation/numbers', '/v1/caller-ids', '/v1/tasks', '/api/v1/webhook_subscriptions', '/v1/optimize/properties',
  '/v1/compliance/dnc', '/v1/compliance/policy', '/v1/sms/registration', '/v1/members', '/v1/api-keys', '/v1/sandbox/inbox',
  '/v1/appointments',
];
t.test('a limited key is refused on every route of the whole organization', async (t) => {
  const s = await setup();
  const members = await env.createKey({ organizationId: s.org.organization_id, userId: s.org.user_id, scopes: [...DEFAULT_ALL_SCOPES, 'members:read' as never], subEntityId: s.subA.id });
  for (const path of WHOLE_ORGANIZATION) {
    const r = await env.request('GET', path, { key: path === '/v1/members' ? members.apiKey : s.limited });
    t.equal(r.status, 403, `${path}: refused`);
    t.equal(r.body.error?.code, 'forbidden', `${path}: forbidden, naming the limit`);
    t.match(r.body.error?.message ?? '', /limited to sub-entity/);
  }
  const ok = await env.request('GET', '/v1/tasks', { key: s.key });
  t.equal(ok.status, 200, 'the organization\'s key reads them');
  t.equal((await env.request('GET', '/v1/account', { key: s.limited })).status, 200, 'its own identity stays readable');
});
