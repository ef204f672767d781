import t from 'tap';
import { FRESH_CHECK_PRICE_CENTS, REMEDIATION_PRICE_CENTS } from '../../shared/caller-trust/prices.ts';
import { testEnv } from '../helpers/env.ts';
import { allLow, nhOrg, setReputation } from './helpers.ts';

const env = await testEnv(t, { env: { SANDBOX_TIME_SCALE: '0.01' } });
const org = await nhOrg(env, 8, 'Sets Co');
const other = await nhOrg(env, 2, 'Other Co');
const key = org.api_key;
const [p1, p2, p3, p4, p5, p6, p7, p8] = org.phones;

t.test('policy: the Limits thresholds, the UTC-day dedup, freshness and the prices of prices.ts', async (t) => {
  const r = await env.request('GET', '/v1/number-health/policy', { key });
  t.equal(r.status, 200);
  t.same(r.body.data.thresholds, {
    qualifying_human_calls: 8, consented_testers: 5, active_days: 4, conversational_duration_seconds: 60,
    clean_observation_carriers: ['ATT', 'TMOBILE', 'VERIZON'], verified_callback: true, provider_risk: 'LOW', no_recent_negative_display: true,
  });
  t.equal(r.body.data.dedup.rule, 'utc_calendar_day');
  t.match(r.body.data.dedup.description, /one qualifying number\/tester interaction per UTC calendar day/);
  t.same(r.body.data.counted_modes, ['HUMAN_READINESS']);
  t.same(r.body.data.prices, { currency: 'USD', fresh_check_cents: FRESH_CHECK_PRICE_CENTS, remediation_cents: REMEDIATION_PRICE_CENTS });
  t.ok(r.body.data.freshness.provider_check_days > 0 && r.body.data.freshness.handset_evidence_days > 0);
});

let setId = '';
t.test('create (201), read, list with total_results; validation writes nothing', async (t) => {
  const c = await env.request('POST', '/v1/number-health/sets', { key, body: {
    name: 'Reminders', use_case: 'appointment reminders', identification_guidance: 'Shows as Sets Co',
    members: [{ phone_id: p1.id, role: 'PRIMARY', priority: 10 }, { phone_id: p2.id, role: 'ALTERNATE' }],
  } });
  t.equal(c.status, 201);
  setId = c.body.data.id;
  t.equal(c.body.data.created_by_user_id, org.user_id, 'attributed to the key\'s user');
  t.same(c.body.data.members.map((m: any) => [m.phone_id, m.role, m.state, m.outbound_enabled, m.priority]),
    [[p1.id, 'PRIMARY', 'ACTIVE', true, 10], [p2.id, 'ALTERNATE', 'ACTIVE', true, 100]]);
  t.same((await env.request('GET', `/v1/number-health/sets/${setId}`, { key })).body.data, c.body.data);

  const before = (await env.db.one('SELECT count(*)::int AS n FROM number_sets')).n;
  const bad = await env.request('POST', '/v1/number-health/sets', { key, body: {
    name: 'Bad', members: [{ phone_id: other.phones[0].id }, { phone_id: p1.id }, { phone_id: p1.id }, { phone_id: p2.id, state: 'GONE' }],
  } });
  t.equal(bad.status, 400);
  t.equal(bad.body.error.code, 'validation_error');
  t.ok(bad.body.error.fields['members/3/state'] ?? bad.body.error.fields['members[3].state'] ?? Object.keys(bad.body.error.fields).some((k) => /state/.test(k)), 'bad state named');
  const bad2 = await env.request('POST', '/v1/number-health/sets', { key, body: { name: 'Bad', members: [{ phone_id: other.phones[0].id }, { phone_id: p1.id }, { phone_id: p1.id }] } });
  t.equal(bad2.status, 400);
  t.match(bad2.body.error.fields, { 'members[0].phone_id': 'is not a number your organization holds', 'members[2].phone_id': 'repeats members[1]' });
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM number_sets')).n, before, 'nothing written');
  t.equal((await env.request('POST', '/v1/number-health/sets', { key, body: { members: [] } })).body.error.fields.name, 'is required');

  await env.request('POST', '/v1/number-health/sets', { key, body: { name: 'Second' } });
  const l = await env.request('GET', '/v1/number-health/sets?limit=1', { key });
  t.equal(l.status, 200);
  t.equal(l.body.meta.total_results, 2);
  t.equal(l.body.data.length, 1);
  t.ok(l.body.meta.cursor);
  const l2 = await env.request('GET', `/v1/number-health/sets?limit=1&cursor=${encodeURIComponent(l.body.meta.cursor)}`, { key });
  t.equal(l2.body.data[0].id, setId, 'the older set on the next page');
  t.ok(Array.isArray(l2.body.data[0].members) && l2.body.data[0].members.length === 2, 'sets come with members');
});

t.test('PATCH upserts members, keeps omitted ones; RETIRED changes selection only', async (t) => {
  const r = await env.request('PATCH', `/v1/number-health/sets/${setId}`, { key, body: {
    use_case: 'reminders v2', members: [{ phone_id: p2.id, state: 'RETIRED' }, { phone_id: p3.id, priority: 5 }],
  } });
  t.equal(r.status, 200);
  t.equal(r.body.data.name, 'Reminders', 'omitted fields kept');
  t.equal(r.body.data.use_case, 'reminders v2');
  const by = Object.fromEntries(r.body.data.members.map((m: any) => [m.phone_id, m]));
  t.same(Object.keys(by).map(Number).sort((a, b) => a - b), [p1.id, p2.id, p3.id], 'p1 omitted but kept');
  t.match(by[p2.id], { role: 'ALTERNATE', state: 'RETIRED', priority: 100 }, 'only the given field changed');
  t.match(by[p3.id], { role: 'PRIMARY', state: 'ACTIVE', outbound_enabled: true, priority: 5 }, 'new member with defaults');
  const phone = await env.db.one('SELECT status, released_at FROM phone_numbers WHERE id = $1', [p2.id]);
  t.same(phone, { status: 'ACTIVE', released_at: null }, 'retiring does not release the number');
  t.equal((await env.request('PATCH', `/v1/number-health/sets/${setId}`, { key, body: {} })).status, 400, 'an empty PATCH is invalid');
});

t.test('rule 9: a credential without an associated user gets 403 user_required on writes', async (t) => {
  const k = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['phone_numbers:write', 'caller_trust:read', 'caller_trust:write'] });
  const c = await env.request('POST', '/v1/number-health/sets', { key: k.apiKey, body: { name: 'No user' } });
  t.equal(c.status, 403);
  t.equal(c.body.error.code, 'user_required');
  t.match(c.body.error.message, /no associated user/);
  t.equal((await env.request('PATCH', `/v1/number-health/sets/${setId}`, { key: k.apiKey, body: { name: 'x' } })).body.error.code, 'user_required');
  const s = await env.request('POST', '/v1/number-health/sessions', { key: k.apiKey, body: {
    tester: { alias: 't', phone_number: '+12125550187', carrier: 'ATT', consented: true }, mode: 'HUMAN_READINESS', scope: { kind: 'ALL' } } });
  t.equal(s.body.error.code, 'user_required');
  t.equal((await env.request('GET', '/v1/number-health/sets', { key: k.apiKey })).status, 200, 'reads need no user');
  t.equal((await env.request('POST', `/v1/number-health/sets/${setId}/resolve`, { key: k.apiKey, body: { destination_number: '+12125550187' } })).status, 200);
});

t.test('scopes and tenant isolation', async (t) => {
  const ro = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['caller_trust:read'] });
  const w = await env.request('POST', '/v1/number-health/sets', { key: ro.apiKey, body: { name: 'x' } });
  t.equal(w.status, 403);
  t.equal(w.body.error.code, 'scope_missing');
  t.equal((await env.request('PATCH', `/v1/number-health/sets/${setId}`, { key: ro.apiKey, body: { name: 'x' } })).body.error.code, 'scope_missing');
  const pw = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['phone_numbers:write'] });
  for (const [m, p, body] of [['GET', '/v1/number-health/policy'], ['GET', '/v1/number-health/numbers'], ['GET', '/v1/number-health/sets'],
    ['GET', `/v1/number-health/sets/${setId}`], ['POST', `/v1/number-health/sets/${setId}/resolve`, { destination_number: '+12125550187' }]] as const) {
    const r = await env.request(m, p, { key: pw.apiKey, body });
    t.equal(r.body.error?.code, 'scope_missing', `${m} ${p} needs caller_trust:read`);
  }
  const ok = await env.request('POST', '/v1/number-health/sets', { key: pw.apiKey, body: { name: 'writer' } });
  t.equal(ok.status, 201, 'phone_numbers:write creates sets');
  for (const [m, p, body] of [['GET', `/v1/number-health/sets/${setId}`], ['PATCH', `/v1/number-health/sets/${setId}`, { name: 'x' }],
    ['POST', `/v1/number-health/sets/${setId}/resolve`, { destination_number: '+12125550187' }]] as const) {
    const r = await env.request(m, p, { key: other.api_key, body });
    t.equal(r.status, 404, `${m} ${p}: another organization's set is not found`);
  }
  t.equal((await env.request('GET', '/v1/number-health/sets', { key: other.api_key })).body.meta.total_results, 0);
  const mine = (await env.request('GET', `/v1/number-health/numbers?number_set_id=${setId}`, { key: other.api_key })).body.data;
  t.same(mine, [], 'another organization\'s set filters to nothing');
  const foreign = await env.request('PATCH', `/v1/number-health/sets/${setId}`, { key, body: { members: [{ phone_id: other.phones[0].id }] } });
  t.equal(foreign.status, 400, 'another organization\'s number cannot join');
});

t.test('resolve: healthiest tier, then priority, then sticky; flagged; 409; dial through the set', async (t) => {
  // p4 WATCH (MEDIUM) priority 1; p5 NEEDS_DATA priority 50; p6 NEEDS_DATA priority 200; p7 FLAGGED priority 0;
  // p8 NEEDS_DATA priority 0 but STANDBY and outbound disabled (not eligible).
  await setReputation(env, org.organization_id, p4.id, { ...allLow, VERIZON: 'MEDIUM' });
  await setReputation(env, org.organization_id, p5.id, allLow);
  await setReputation(env, org.organization_id, p6.id, allLow);
  await setReputation(env, org.organization_id, p7.id, { ...allLow, ATT: 'HIGH' });
  await setReputation(env, org.organization_id, p8.id, allLow);
  const c = await env.request('POST', '/v1/number-health/sets', { key, body: { name: 'Tiers', members: [
    { phone_id: p4.id, priority: 1 }, { phone_id: p5.id, priority: 50 }, { phone_id: p6.id, priority: 200 },
    { phone_id: p7.id, priority: 0 }, { phone_id: p8.id, priority: 0, state: 'STANDBY', outbound_enabled: false }] } });
  const id = c.body.data.id;
  const resolve = (dest = '+12125550187', sid = id) => env.request('POST', `/v1/number-health/sets/${sid}/resolve`, { key, body: { destination_number: dest } });
  let r = await resolve();
  t.equal(r.status, 200);
  t.match(r.body.data, { phone_id: p5.id, from_number: p5.phone_number, evidence_state: 'NEEDS_DATA', selection_source: 'number_set_sticky_health',
    recommended_action: 'RUN_SPAM_TEST', eligible_members: 4 }, 'NEEDS_DATA beats WATCH and FLAGGED; priority 50 beats 200; p8 not eligible');
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1', [org.organization_id])).n, 0, 'a preview places and reserves nothing');

  await env.request('PATCH', `/v1/number-health/sets/${id}`, { key, body: { members: [{ phone_id: p5.id, state: 'RETIRED' }, { phone_id: p6.id, state: 'PREPARING' }] } });
  r = await resolve();
  t.match(r.body.data, { phone_id: p4.id, evidence_state: 'WATCH' }, 'retired and preparing members leave selection; WATCH next');
  await env.request('PATCH', `/v1/number-health/sets/${id}`, { key, body: { members: [{ phone_id: p4.id, outbound_enabled: false }] } });
  r = await resolve();
  t.equal(r.status, 200, 'all eligible members flagged still succeeds');
  t.match(r.body.data, { phone_id: p7.id, evidence_state: 'FLAGGED', recommended_action: 'REQUEST_REMEDIATION' });
  t.match(r.body.data.health_warning, /Every eligible member of the set is flagged.*HIGH provider risk on ATT/);
  await env.request('PATCH', `/v1/number-health/sets/${id}`, { key, body: { members: [{ phone_id: p7.id, state: 'RETIRED' }] } });
  r = await resolve();
  t.equal(r.status, 409, 'no eligible member');
  t.equal(r.body.error.code, 'no_active_number');
  const dialNone = await env.request('POST', '/v1/calls/dial', { key, body: { number_set_id: id, to_number: '+12125550187', connect_number: '+13125550142' } });
  t.equal(dialNone.status, 409, 'dial through a set without eligible members');
  t.equal(dialNone.body.error.code, 'no_active_number');
  const empty = (await env.request('POST', '/v1/number-health/sets', { key, body: { name: 'Empty' } })).body.data.id;
  t.equal((await resolve('+12125550187', empty)).status, 409);
  t.equal((await resolve('12125550187')).status, 400, 'destination must be E.164');
  t.equal((await resolve('+12125550187', '00000000-0000-7000-8000-000000000000')).status, 404);
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1', [org.organization_id])).n, 0, 'refused dials leave no call');
});

t.test('recipient stickiness: rendezvous over members of one tier and priority', async (t) => {
  const extra = await nhOrg(env, 6, 'Sticky Co');
  for (const p of extra.phones) await setReputation(env, extra.organization_id, p.id, allLow);
  const c = await env.request('POST', '/v1/number-health/sets', { key: extra.api_key, body: { name: 'Pool',
    members: extra.phones.map((p) => ({ phone_id: p.id })) } });
  const id = c.body.data.id;
  const dests = Array.from({ length: 30 }, (_, i) => `+1212555${String(1000 + i * 7).padStart(4, '0')}`);
  const pick = async (d: string) => (await env.request('POST', `/v1/number-health/sets/${id}/resolve`, { key: extra.api_key, body: { destination_number: d } })).body.data.phone_id;
  const first = new Map<string, number>();
  for (const d of dests) first.set(d, await pick(d));
  for (const d of dests.slice(0, 10)) t.equal(await pick(d), first.get(d), `${d} keeps its number`);
  t.ok(new Set(first.values()).size >= 3, `destinations spread over members (${new Set(first.values()).size} of 6)`);
  // Retire one member: only the destinations that had it move.
  const gone = [...first.values()][0];
  await env.request('PATCH', `/v1/number-health/sets/${id}`, { key: extra.api_key, body: { members: [{ phone_id: gone, state: 'RETIRED' }] } });
  for (const d of dests) {
    const now = await pick(d);
    if (first.get(d) === gone) t.not(now, gone, `${d} moves off the retired number`);
    else t.equal(now, first.get(d), `${d} keeps its number when another member retires`);
  }
  // A better tier wins over stickiness: flag the number a destination uses and it moves.
  const d0 = dests[1];
  const had = await pick(d0);
  await setReputation(env, extra.organization_id, had, { ATT: 'HIGH' });
  t.not(await pick(d0), had, 'a flagged number loses its destinations');

  // Dial through the set: the same resolution fills the dial response.
  const preview = (await env.request('POST', `/v1/number-health/sets/${id}/resolve`, { key: extra.api_key, body: { destination_number: d0 } })).body.data;
  const dial = await env.request('POST', '/v1/calls/dial', { key: extra.api_key, body: { number_set_id: id, to_number: d0, connect_number: '+13125550142' } });
  t.equal(dial.status, 202);
  t.match(dial.body.data, { status: 'QUEUED', from_number: preview.from_number, selection_source: 'number_set_sticky_health',
    evidence_state: 'NEEDS_DATA', health_warning: preview.health_warning, recommended_action: 'RUN_SPAM_TEST' });
  const row = await env.db.one('SELECT from_number, phone_number_id FROM calls WHERE id = $1', [dial.body.data.call_id]);
  t.same(row, { from_number: preview.from_number, phone_number_id: preview.phone_id });

  // from_number wins over number_set_id; a high-risk exact number is dialed with the warning.
  const exact = await env.request('POST', '/v1/calls/dial', { key: extra.api_key, body: { from_number: extra.phones.find((p) => p.id === had)!.phone_number,
    number_set_id: id, to_number: d0, connect_number: '+13125550142' } });
  t.equal(exact.status, 202, 'a high-risk exact from_number is not rejected');
  t.match(exact.body.data, { from_number: extra.phones.find((p) => p.id === had)!.phone_number, selection_source: 'exact_from_number', evidence_state: 'FLAGGED' });
  t.match(exact.body.data.health_warning, /HIGH provider risk on ATT/);
  // An inactive exact number fails normally, with no fallback to the set.
  await env.db.none(`UPDATE phone_numbers SET status = 'PROVISIONING' WHERE id = $1`, [extra.phones[5].id]);
  const inactive = await env.request('POST', '/v1/calls/dial', { key: extra.api_key, body: { from_number: extra.phones[5].phone_number,
    number_set_id: id, to_number: d0, connect_number: '+13125550142' } });
  t.equal(inactive.status, 409);
  t.equal(inactive.body.error.code, 'no_active_number');
  const foreign = await env.request('POST', '/v1/calls/dial', { key, body: { number_set_id: id, to_number: d0, connect_number: '+13125550142' } });
  t.equal(foreign.status, 400, 'another organization\'s set');
  t.match(foreign.body.error.fields, { number_set_id: /not a Number Set of your organization/ });
  const noDest = await env.request('POST', '/v1/calls/dial', { key: extra.api_key, body: { number_set_id: id, connect_number: '+13125550142' } });
  t.equal(noDest.body.error.code, 'destination_missing');
});

t.test('remove a member and delete a set: scopes, another organization, selection follows, the numbers stay', async (t) => {
  const c = await env.request('POST', '/v1/number-health/sets', { key, body: { name: 'Removable', members: [{ phone_id: p5.id, priority: 1 }, { phone_id: p6.id, priority: 2 }] } });
  t.equal(c.status, 201);
  const id = c.body.data.id;
  const resolve = async () => env.request('POST', `/v1/number-health/sets/${id}/resolve`, { key, body: { destination_number: '+12125550187' } });
  t.equal((await resolve()).body.data.phone_id, p5.id, 'the lower priority first');

  const ro = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['caller_trust:read'] });
  for (const p of [`/v1/number-health/sets/${id}/members/${p5.id}`, `/v1/number-health/sets/${id}`]) {
    const r = await env.request('DELETE', p, { key: ro.apiKey });
    t.equal(r.status, 403, `DELETE ${p} without phone_numbers:write`);
    t.equal(r.body.error.code, 'scope_missing');
    const o = await env.request('DELETE', p, { key: other.api_key });
    t.equal(o.status, 404, `DELETE ${p}: another organization's set is not found`);
    t.equal(o.body.error.code, 'not_found');
  }
  const noUser = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['phone_numbers:write'] });
  t.equal((await env.request('DELETE', `/v1/number-health/sets/${id}/members/${p5.id}`, { key: noUser.apiKey })).body.error?.code, 'user_required');
  t.equal((await env.request('GET', `/v1/number-health/sets/${id}`, { key })).body.data.members.length, 2, 'nothing removed by refused requests');

  const bad = await env.request('DELETE', `/v1/number-health/sets/${id}/members/abc`, { key });
  t.equal(bad.status, 400);
  t.equal(bad.body.error.code, 'validation_error');
  t.ok(bad.body.error.fields.phone_id, 'fields.phone_id');
  t.equal((await env.request('DELETE', `/v1/number-health/sets/${id}/members/${p1.id}`, { key })).status, 404, 'a number that is not a member');

  const r = await env.request('DELETE', `/v1/number-health/sets/${id}/members/${p5.id}`, { key });
  t.equal(r.status, 200);
  t.same(r.body.data.members.map((m: any) => m.phone_id), [p6.id], 'the member is gone');
  t.equal((await resolve()).body.data.phone_id, p6.id, 'selection no longer picks the removed number');
  const fleet = (await env.request('GET', `/v1/number-health/numbers?number_set_id=${id}`, { key })).body.data;
  t.same(fleet.map((f: any) => f.phone_id), [p6.id]);
  t.equal((await env.request('GET', `/v1/phone-numbers/${p5.id}`, { key })).status, 200, 'the number itself stays');

  const d = await env.request('DELETE', `/v1/number-health/sets/${id}`, { key });
  t.equal(d.status, 204);
  t.equal((await env.request('GET', `/v1/number-health/sets/${id}`, { key })).status, 404);
  t.equal((await resolve()).status, 404, 'a deleted set resolves nothing');
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM number_set_members WHERE set_id = $1', [id])).n, 0, 'its memberships are gone');
  t.equal((await env.request('DELETE', `/v1/number-health/sets/${id}`, { key })).status, 404, 'deleting twice: not found');
  const dial = await env.request('POST', '/v1/calls/dial', { key, body: { number_set_id: id, to_number: '+12125550187', connect_number: '+13125550142' } });
  t.equal(dial.status, 400);
  t.match(dial.body.error.fields, { number_set_id: /not a Number Set of your organization/ });
});
