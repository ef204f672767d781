import t from 'tap';
import { testEnv } from '../helpers/env.ts';
import { allLow, nhOrg, setReputation } from './helpers.ts';

const env = await testEnv(t, { env: { SANDBOX_TIME_SCALE: '0.01' } });
const org = await nhOrg(env, 5, 'Sessions Co');
const other = await nhOrg(env, 1, 'Elsewhere Co');
const key = org.api_key;
const [p1, p2, p3, p4, p5] = org.phones;
const TESTER = '+12125550187';
const tester = { alias: 'tester-1', phone_number: TESTER, carrier: 'VERIZON', consented: true };
const HANDSET = { manufacturer: 'Apple', model: 'iPhone 15', os: 'iOS 18.1' };
const post = (path: string, body: unknown, k = key) => env.request('POST', path, { key: k, body });
const session = async (body: Record<string, unknown>, k = key) => post('/v1/number-health/sessions', { tester, mode: 'HUMAN_READINESS', scope: { kind: 'ALL' }, ...body }, k);
const inbound = (from: string, to: string, duration = 75, outcome = 'answered', k = key) =>
  post('/v1/sandbox/calls/inbound', { from_number: from, to_number: to, duration_seconds: duration, outcome }, k);
const dial = (from: string, to: string) => post('/v1/calls/dial', { from_number: from, to_number: to, connect_number: '+13125550142' });

t.test('sessions: queue from each scope kind, saved at creation; never a paid check', async (t) => {
  await env.db.none(`UPDATE phone_numbers SET team_id = 'sales' WHERE id = ANY($1::bigint[])`, [[p1.id, p2.id]]);
  await setReputation(env, org.organization_id, p3.id, { ...allLow, ATT: 'HIGH' });
  await setReputation(env, org.organization_id, p4.id, allLow);
  const set = (await post('/v1/number-health/sets', { name: 'S', members: [{ phone_id: p1.id, role: 'PRIMARY' }, { phone_id: p2.id, role: 'ALTERNATE' },
    { phone_id: p5.id, role: 'PRIMARY', state: 'RETIRED' }] })).body.data.id;
  const reputationBefore = await env.db.any('SELECT * FROM number_reputation ORDER BY phone_id, carrier');
  const cases: [Record<string, unknown>, number[]][] = [
    [{ scope: { kind: 'ALL' } }, [p1.id, p2.id, p3.id, p4.id, p5.id]],
    [{ scope: { kind: 'TEAM', value: 'sales' } }, [p1.id, p2.id]],
    [{ scope: { kind: 'NUMBER_SET', value: set } }, [p1.id]],
    [{ scope: { kind: 'NUMBER_SET', value: set }, compare_alternates: true }, [p1.id, p2.id]],
    [{ scope: { kind: 'AREA_CODE', value: org.phones[0].phone_number.slice(2, 5) } }, org.phones.filter((p) => p.phone_number.slice(2, 5) === org.phones[0].phone_number.slice(2, 5)).map((p) => p.id)],
    [{ scope: { kind: 'FLAGGED' } }, [p3.id]],
    [{ scope: { kind: 'NEEDS_DATA' } }, [p1.id, p2.id, p4.id]], // p5's only membership is RETIRED
    [{ scope: { kind: 'TEAM', value: 'sales' }, compare_alternates: true }, [p1.id, p2.id]],
  ];
  for (const [body, ids] of cases) {
    const r = await session(body);
    t.equal(r.status, 201, JSON.stringify(body));
    t.same(r.body.data.phone_ids, ids, `queue of ${JSON.stringify(body)}`);
    t.match(r.body.data, { status: 'ACTIVE', mode: 'HUMAN_READINESS', tester, counts_toward_readiness: true, attempts: [], created_by_user_id: org.user_id });
  }
  t.same(await env.db.any('SELECT * FROM number_reputation ORDER BY phone_id, carrier'), reputationBefore, 'no provider evidence requested or changed');
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM spend_charges')).n, 0, 'no paid check charged');

  const before = (await env.db.one('SELECT count(*)::int AS n FROM spam_test_sessions')).n;
  const bad: [Record<string, unknown>, string][] = [
    [{ scope: { kind: 'TEAM' } }, 'scope.value'],
    [{ scope: { kind: 'AREA_CODE', value: '12' } }, 'scope.value'],
    [{ scope: { kind: 'ALL', value: 'x' } }, 'scope.value'],
    [{ scope: { kind: 'NUMBER_SET', value: '00000000-0000-7000-8000-000000000000' } }, 'scope.value'],
    [{ scope: { kind: 'TEAM', value: 'nobody' } }, 'scope'],
    [{ tester: { ...tester, phone_number: '2125550187' } }, 'tester.phone_number'],
    [{ mode: 'SOMETHING' }, 'mode'],
  ];
  for (const [body, field] of bad) {
    const r = await session(body);
    t.equal(r.status, 400, JSON.stringify(body));
    t.ok(Object.keys(r.body.error.fields ?? {}).some((k) => k.replace(/\//g, '.').replace(/^\./, '') === field || k === field), `${JSON.stringify(body)} names ${field}: ${JSON.stringify(r.body.error.fields)}`);
  }
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM spam_test_sessions')).n, before, 'nothing written');
  const foreignSet = await session({ scope: { kind: 'NUMBER_SET', value: set } }, other.api_key);
  t.equal(foreignSet.status, 400, 'another organization\'s set is not a scope');
});

t.test('status moves; evidence kept; 409 names the current status', async (t) => {
  const s = (await session({ scope: { kind: 'TEAM', value: 'sales' } })).body.data;
  const move = (status: string, k = key) => env.request('PATCH', `/v1/number-health/sessions/${s.id}`, { key: k, body: { status } });
  t.equal((await move('PAUSED')).body.data.status, 'PAUSED');
  t.equal((await move('PAUSED')).status, 200, 'same status: no-op');
  t.equal((await move('ACTIVE')).body.data.status, 'ACTIVE');
  t.equal((await move('COMPLETED')).body.data.status, 'COMPLETED');
  const r = await move('ACTIVE');
  t.equal(r.status, 409);
  t.equal(r.body.error.code, 'state_conflict');
  t.same(r.body.error.fields, { entity: 'number_health_session', status: 'COMPLETED' });
  t.match(r.body.error.message, /COMPLETED/);
  t.equal((await move('CANCELLED')).status, 409, 'COMPLETED is final');
  t.equal((await move('DONE')).status, 400);
  t.equal((await move('PAUSED', other.api_key)).status, 404, 'another organization');
  t.equal((await env.request('GET', `/v1/number-health/sessions/${s.id}`, { key: other.api_key })).status, 404);
  t.equal((await env.request('GET', `/v1/number-health/sessions/${s.id}`, { key })).body.data.status, 'COMPLETED');
});

t.test('attempts attach existing calls, with every check', async (t) => {
  const early = (await dial(p1.phone_number, TESTER)).body.data.call_id;
  const s = (await session({ scope: { kind: 'TEAM', value: 'sales' } })).body.data;
  const rapid = (await session({ mode: 'RAPID_AUDIT', scope: { kind: 'TEAM', value: 'sales' } })).body.data;
  const qa = (await session({ mode: 'CONNECTIVITY_QA', scope: { kind: 'TEAM', value: 'sales' } })).body.data;
  const attach = (phone_id: number, call_id: string, k = key, sid = s.id) => post(`/v1/number-health/sessions/${sid}/attempts`, { phone_id, call_id }, k);
  const callsBefore = (await env.db.one('SELECT count(*)::int AS n FROM calls')).n;

  const out = (await dial(p1.phone_number, TESTER)).body.data.call_id;
  const a = await attach(p1.id, out);
  t.equal(a.status, 201);
  t.match(a.body.data, { session_id: s.id, phone_id: p1.id, call_id: out, call_direction: 'outbound', observation: null, callback_verified: false, created_by_user_id: org.user_id });
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM calls')).n, callsBefore + 1, 'attaching never dials');

  const field = async (r: Promise<any>, f: string, re: RegExp, status = 400) => {
    const x = await r;
    t.equal(x.status, status, `${f}: ${x.text}`);
    if (status === 400) t.match(x.body.error.fields?.[f], re);
  };
  await field(attach(p1.id, out), 'call_id', /already attached/);
  await field(attach(p3.id, out), 'phone_id', /not in this session's queue/);
  await field(attach(p2.id, out), 'call_id', /was not made from phone_id/);
  await field(attach(p1.id, (await dial(p1.phone_number, '+12125550188')).body.data.call_id), 'call_id', /tester/);
  await field(attach(p1.id, early), 'call_id', /before the session started/);
  const foreign = (await inbound(TESTER, other.phones[0].phone_number, 75, 'answered', other.api_key)).body.data.id;
  await field(attach(p1.id, foreign), 'call_id', /./, 404);
  await field(attach(p1.id, 'not-a-call'), 'call_id', /./, 404);
  const ai = (await post('/v1/calls', { from_number: p2.phone_number, to_number: TESTER, agent: { greeting: 'Hi' } })).body.data.call_id;
  await field(attach(p2.id, ai), 'call_id', /AI call; HUMAN_READINESS sessions take human calls only/);
  await field(attach(p2.id, ai, key, rapid.id), 'call_id', /AI call; RAPID_AUDIT/);
  t.equal((await attach(p2.id, ai, key, qa.id)).status, 201, 'CONNECTIVITY_QA takes AI calls');

  const inb = (await inbound(TESTER, p2.phone_number)).body.data;
  t.match(inb, { direction: 'inbound', type: 'inbound', from_number: TESTER, to_number: p2.phone_number, status: 'COMPLETED', duration_seconds: 75, picked_up: true });
  const ia = await attach(p2.id, inb.id);
  t.equal(ia.status, 201, 'an inbound call from the tester attaches');
  t.equal(ia.body.data.call_direction, 'inbound');
  await field(attach(p1.id, (await inbound('+12125550199', p1.phone_number)).body.data.id), 'call_id', /did not come from the session's tester/);

  await env.request('PATCH', `/v1/number-health/sessions/${s.id}`, { key, body: { status: 'PAUSED' } });
  const paused = await attach(p1.id, (await dial(p1.phone_number, TESTER)).body.data.call_id);
  t.equal(paused.status, 409, 'a PAUSED session takes no attempts');
  t.equal(paused.body.error.code, 'state_conflict');
  t.same(paused.body.error.fields, { entity: 'number_health_session', status: 'PAUSED' });
  t.match(paused.body.error.message, /PAUSED/);
  await env.request('PATCH', `/v1/number-health/sessions/${s.id}`, { key, body: { status: 'ACTIVE' } });

  t.equal((await attach(p1.id, out, other.api_key)).status, 404, 'another organization\'s session');
  const g = await env.request('GET', `/v1/number-health/sessions/${s.id}`, { key });
  t.same(g.body.data.attempts.map((x: any) => x.call_id), [out, inb.id], 'the session lists its attempts');
});

t.test('observations: 400 while the call is live, audit snapshot on repost, callback attestation', async (t) => {
  const s = (await session({ scope: { kind: 'TEAM', value: 'sales' } })).body.data;
  const live = (await dial(p1.phone_number, TESTER)).body.data.call_id;
  const la = (await post(`/v1/number-health/sessions/${s.id}/attempts`, { phone_id: p1.id, call_id: live })).body.data;
  const observe = (id: string, body: Record<string, unknown>, k = key) =>
    post(`/v1/number-health/attempts/${id}/observation`, { outcome: 'CLEAN', observed_label: 'Sessions Co', handset: HANDSET, ...body }, k);
  const notYet = await observe(la.id, {});
  t.equal(notYet.status, 400);
  t.equal(notYet.body.error.code, 'call_not_terminal');
  t.match(notYet.body.error.resolution_hint, /Retry after \d+ seconds/);
  t.ok(Number(notYet.headers['retry-after']) > 0, 'Retry-After');
  t.equal((await env.db.one('SELECT outcome FROM spam_test_attempts WHERE id = $1', [la.id])).outcome, null, 'nothing recorded');

  const call = (await inbound(TESTER, p2.phone_number)).body.data.id;
  const a = (await post(`/v1/number-health/sessions/${s.id}/attempts`, { phone_id: p2.id, call_id: call })).body.data;
  const first = await observe(a.id, { outcome: 'WRONG_NAME', observed_label: 'Unknown Caller' });
  t.equal(first.status, 200, first.text);
  t.match(first.body.data.attempt.observation, { outcome: 'WRONG_NAME', observed_label: 'Unknown Caller', handset: HANDSET, recorded_by_user_id: org.user_id });
  t.equal(first.body.data.attempt.callback_verified, false, 'never set automatically');
  t.equal(first.body.data.attempt.callback_attestation, null);
  t.same(first.body.data.audit.map((x: any) => [x.before, x.after?.outcome]), [[null, 'WRONG_NAME']]);

  const second = await observe(a.id, { callback_verified: true });
  t.equal(second.status, 200);
  t.equal(second.body.data.attempt.observation.outcome, 'CLEAN');
  t.equal(second.body.data.attempt.callback_verified, true);
  t.match(second.body.data.attempt.callback_attestation, { attested_by_user_id: org.user_id, attested_at: String });
  t.equal(second.body.data.audit.length, 2);
  t.match(second.body.data.audit[1], { recorded_by_user_id: org.user_id,
    before: { outcome: 'WRONG_NAME', observed_label: 'Unknown Caller', callback_verified: false },
    after: { outcome: 'CLEAN', observed_label: 'Sessions Co', callback_verified: true } });
  const third = await observe(a.id, { observed_label: 'Sessions Co.' });
  t.equal(third.body.data.attempt.callback_verified, true, 'omitted callback_verified keeps the attestation');
  t.equal(third.body.data.audit.length, 3);
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM spam_test_observation_audit WHERE attempt_id = $1', [a.id])).n, 3);

  const bad = await observe(a.id, { outcome: 'NICE', handset: { manufacturer: 'x' } });
  t.equal(bad.status, 400);
  t.ok(Object.keys(bad.body.error.fields).length >= 2, `names the bad fields: ${JSON.stringify(bad.body.error.fields)}`);
  t.equal((await observe(a.id, {}, other.api_key)).status, 404, 'another organization\'s attempt');
  await env.request('PATCH', `/v1/number-health/sessions/${s.id}`, { key, body: { status: 'CANCELLED' } });
  const cancelled = await observe(a.id, {});
  t.equal(cancelled.status, 409, 'a CANCELLED session\'s evidence no longer changes');
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM spam_test_attempts WHERE session_id = $1', [s.id])).n, 2, 'cancelling deleted nothing');
});

t.test('RAPID_AUDIT and CONNECTIVITY_QA never count toward readiness', async (t) => {
  for (const mode of ['RAPID_AUDIT', 'CONNECTIVITY_QA']) {
    const s = (await session({ mode, scope: { kind: 'TEAM', value: 'sales' } })).body.data;
    t.equal(s.counts_toward_readiness, false);
    const call = (await inbound(TESTER, p1.phone_number, 120)).body.data.id;
    const a = (await post(`/v1/number-health/sessions/${s.id}/attempts`, { phone_id: p1.id, call_id: call })).body.data;
    t.equal((await post(`/v1/number-health/attempts/${a.id}/observation`, { outcome: 'CLEAN', observed_label: 'Sessions Co', handset: HANDSET, callback_verified: true })).status, 200);
  }
  const n = (await env.request('GET', '/v1/number-health/numbers?team_id=sales', { key })).body.data.find((x: any) => x.phone_id === p1.id);
  t.equal(n.readiness.qualifying_human_calls.observed, 0);
  t.equal(n.readiness.verified_callback.met, false);
  t.same(n.observations.map((o: any) => o.mode), ['RAPID_AUDIT'], 'a rapid audit is handset evidence; QA is synthetic and not shown');
});

t.test('inbound progress: only calls from the tester to a queued number after the session started', async (t) => {
  await inbound(TESTER, p4.phone_number, 30);
  const s = (await session({ scope: { kind: 'ALL' } })).body.data;
  const progress = (phone_id: number | string, k = key) => env.request('GET', `/v1/number-health/sessions/${s.id}/inbound?phone_id=${phone_id}`, { key: k });
  let r = await progress(p4.id);
  t.equal(r.status, 200);
  t.match(r.body.data, { phone_id: p4.id, call_id: null, status: 'WAITING', human: false, callback_verified: false }, 'a call before the session does not count');
  await inbound('+12125550100', p4.phone_number, 50);
  t.equal((await progress(p4.id)).body.data.status, 'WAITING', 'a call from someone else does not count');
  await inbound(TESTER, p3.phone_number, 50);
  t.equal((await progress(p4.id)).body.data.status, 'WAITING', 'a call to another number does not count');
  const c = (await inbound(TESTER, p4.phone_number, 90)).body.data;
  r = await progress(p4.id);
  t.match(r.body.data, { call_id: c.id, status: 'COMPLETED', duration_seconds: 90, human: true, callback_verified: false, attempt_id: null,
    answered_at: String, ended_at: String });
  const a = (await post(`/v1/number-health/sessions/${s.id}/attempts`, { phone_id: p4.id, call_id: c.id })).body.data;
  await post(`/v1/number-health/attempts/${a.id}/observation`, { outcome: 'CLEAN', observed_label: '', handset: HANDSET, callback_verified: true });
  t.match((await progress(p4.id)).body.data, { attempt_id: a.id, callback_verified: true });
  const missed = (await inbound(TESTER, p4.phone_number, 0, 'no_answer')).body.data;
  t.match((await progress(p4.id)).body.data, { call_id: missed.id, status: 'NO_ANSWER', human: false });
  t.equal((await progress(999999)).status, 400, 'phone_id outside the queue');
  t.equal((await progress('x')).status, 400);
  t.equal((await progress(p4.id, other.api_key)).status, 404);
});

t.test('sandbox inbound calls: validation, the call record, scope', async (t) => {
  let r = await inbound(TESTER, other.phones[0].phone_number);
  t.equal(r.status, 400);
  t.match(r.body.error.fields, { to_number: /not an active number of your organization/ });
  r = await inbound(TESTER, p1.phone_number, 20, 'busy');
  t.match(r.body.error.fields, { duration_seconds: /must be 0/ });
  r = await post('/v1/sandbox/calls/inbound', { from_number: 'x', to_number: p1.phone_number, duration_seconds: 1, outcome: 'answered' });
  t.equal(r.status, 400);
  const busy = (await inbound(TESTER, p1.phone_number, 0, 'busy')).body.data;
  const g = await env.request('GET', `/v1/calls/${busy.id}`, { key });
  t.match(g.body.data, { direction: 'inbound', status: 'BUSY', failure_code: 'busy', picked_up: false, duration_seconds: 0 });
  const ro = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['calls:read'] });
  t.equal((await inbound(TESTER, p1.phone_number, 10, 'answered', ro.apiKey)).body.error.code, 'scope_missing');
});

t.test('session scopes', async (t) => {
  const s = (await session({})).body.data;
  const attempt = (await env.db.one('SELECT id FROM spam_test_attempts LIMIT 1')).id;
  const read = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['caller_trust:read'] });
  for (const [m, p, body] of [['POST', '/v1/number-health/sessions', { tester, mode: 'RAPID_AUDIT', scope: { kind: 'ALL' } }],
    ['PATCH', `/v1/number-health/sessions/${s.id}`, { status: 'PAUSED' }], ['POST', `/v1/number-health/sessions/${s.id}/attempts`, { phone_id: p1.id, call_id: attempt }],
    ['POST', `/v1/number-health/attempts/${attempt}/observation`, { outcome: 'CLEAN', observed_label: '', handset: HANDSET }]] as const) {
    t.equal((await env.request(m, p, { key: read.apiKey, body })).body.error?.code, 'scope_missing', `${m} ${p} needs caller_trust:write`);
  }
  const write = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['caller_trust:write'] });
  for (const p of [`/v1/number-health/sessions/${s.id}`, `/v1/number-health/sessions/${s.id}/inbound?phone_id=${p1.id}`]) {
    t.equal((await env.request('GET', p, { key: write.apiKey })).body.error?.code, 'scope_missing', `GET ${p} needs caller_trust:read`);
    t.equal((await env.request('GET', p, { key: read.apiKey })).status, 200);
  }
  t.equal((await env.request('POST', '/v1/number-health/sessions', { key: write.apiKey, body: { tester, mode: 'RAPID_AUDIT', scope: { kind: 'ALL' } } })).status, 201);
});

t.test('idempotent writes replay; concurrent observations of one number are all counted', async (t) => {
  const s = (await session({ scope: { kind: 'ALL' } })).body.data;
  const call = (await inbound(TESTER, p3.phone_number, 80)).body.data.id;
  const headers = { 'idempotency-key': `attach-${s.id}` };
  const a1 = await env.request('POST', `/v1/number-health/sessions/${s.id}/attempts`, { key, body: { phone_id: p3.id, call_id: call }, headers });
  const a2 = await env.request('POST', `/v1/number-health/sessions/${s.id}/attempts`, { key, body: { phone_id: p3.id, call_id: call }, headers });
  t.equal(a1.status, 201);
  t.equal(a2.status, 201);
  t.equal(a2.headers['idempotency-replay'], 'true');
  t.same(a2.body, a1.body);
  const ph = { 'idempotency-key': `pause-${s.id}` };
  const m1 = await env.request('PATCH', `/v1/number-health/sessions/${s.id}`, { key, body: { status: 'PAUSED' }, headers: ph });
  t.equal(m1.body.data.attempts.length, 1, 'the PATCH answer carries the attempts');
  const m2 = await env.request('PATCH', `/v1/number-health/sessions/${s.id}`, { key, body: { status: 'PAUSED' }, headers: ph });
  t.same(m2.body, m1.body);
  await env.request('PATCH', `/v1/number-health/sessions/${s.id}`, { key, body: { status: 'ACTIVE' } });

  // Five testers' sessions observe the same number at once: the summary counts every one.
  const fresh = await nhOrg(env, 1, 'Race Co');
  const num = fresh.phones[0];
  const attempts = await Promise.all([1, 2, 3, 4, 5].map(async (i) => {
    const phone = `+1212555020${i}`;
    const sid = (await post('/v1/number-health/sessions', { tester: { ...tester, phone_number: phone }, mode: 'HUMAN_READINESS', scope: { kind: 'ALL' } }, fresh.api_key)).body.data.id;
    const c = (await inbound(phone, num.phone_number, 90, 'answered', fresh.api_key)).body.data.id;
    return (await post(`/v1/number-health/sessions/${sid}/attempts`, { phone_id: num.id, call_id: c }, fresh.api_key)).body.data.id;
  }));
  const results = await Promise.all(attempts.map((id) => post(`/v1/number-health/attempts/${id}/observation`, { outcome: 'CLEAN', observed_label: 'Race Co', handset: HANDSET }, fresh.api_key)));
  t.same(results.map((r) => r.status), [200, 200, 200, 200, 200]);
  const sum = await env.db.one('SELECT qualifying_calls, consented_testers FROM number_health_summaries WHERE phone_id = $1', [num.id]);
  t.same(sum, { qualifying_calls: 5, consented_testers: 5 });
});
