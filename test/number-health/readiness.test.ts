// A full readiness run across UTC days with a controllable clock: CLEAN_OBSERVED only once every threshold of the
// policy is met, with the UTC-day dedup; and the fleet list's filters and pages.
import t from 'tap';
import { testEnv } from '../helpers/env.ts';
import { allLow, DAY, nhOrg, setReputation, TestClock } from './helpers.ts';

const clock = new TestClock(Date.parse('2026-11-10T09:00:00Z'));
const env = await testEnv(t, { clock, env: { SANDBOX_TIME_SCALE: '0.01' } });
const org = await nhOrg(env, 3, 'Ready Co');
const other = await nhOrg(env, 1, 'Not Ready Co');
const key = org.api_key;
const [target, , spare] = org.phones;
const HANDSET = { manufacturer: 'Google', model: 'Pixel 9', os: 'Android 15' };
const post = (path: string, body: unknown) => env.request('POST', path, { key, body });

const testers = [
  { alias: 't1', phone_number: '+12125550101', carrier: 'ATT', consented: true },
  { alias: 't2', phone_number: '+12125550102', carrier: 'TMOBILE', consented: true },
  { alias: 't3', phone_number: '+12125550103', carrier: 'VERIZON', consented: true },
  { alias: 't4', phone_number: '+12125550104', carrier: 'ATT', consented: true },
  { alias: 't5', phone_number: '+12125550105', carrier: 'TMOBILE', consented: true },
];

const evidence = async () => (await env.request('GET', '/v1/number-health/numbers?limit=100', { key })).body.data.find((n: any) => n.phone_id === target.id);

t.test('readiness run: CLEAN_OBSERVED across days, not before', async (t) => {
  await setReputation(env, org.organization_id, target.id, allLow, new Date(clock.now()));
  const sessions: string[] = [];
  for (const tester of testers) {
    sessions.push((await post('/v1/number-health/sessions', { tester, mode: 'HUMAN_READINESS', scope: { kind: 'ALL' } })).body.data.id);
  }
  const unconsented = (await post('/v1/number-health/sessions', { tester: { alias: 'nc', phone_number: '+12125550106', carrier: 'VERIZON', consented: false },
    mode: 'HUMAN_READINESS', scope: { kind: 'ALL' } })).body.data.id;
  const rapid = (await post('/v1/number-health/sessions', { tester: testers[2], mode: 'RAPID_AUDIT', scope: { kind: 'ALL' } })).body.data.id;

  /** The tester of session i calls the number and reports CLEAN. */
  const interact = async (sessionId: string, from: string, o: { duration?: number; callback?: boolean; outcome?: string } = {}) => {
    clock.advance(10 * 60_000);
    const call = await post('/v1/sandbox/calls/inbound', { from_number: from, to_number: target.phone_number, duration_seconds: o.duration ?? 75, outcome: 'answered' });
    t.equal(call.status, 201);
    const a = await post(`/v1/number-health/sessions/${sessionId}/attempts`, { phone_id: target.id, call_id: call.body.data.id });
    t.equal(a.status, 201, a.text);
    const obs = await post(`/v1/number-health/attempts/${a.body.data.id}/observation`, {
      outcome: o.outcome ?? 'CLEAN', observed_label: 'Ready Co', handset: HANDSET, ...(o.callback ? { callback_verified: true } : {}) });
    t.equal(obs.status, 200);
    return a.body.data.id as string;
  };
  const expect = async (calls: number, testersN: number, days: number, state = 'NEEDS_DATA') => {
    const e = await evidence();
    t.same([e.readiness.qualifying_human_calls.observed, e.readiness.consented_testers.observed, e.readiness.active_days.observed],
      [calls, testersN, days], `counts on ${new Date(clock.now()).toISOString().slice(0, 10)}`);
    t.equal(e.evidence_state, state);
    return e;
  };

  // Day 1: t1 twice (the second counts no more: UTC-day dedup), t2; plus evidence that never counts.
  await interact(sessions[0], testers[0].phone_number);
  await interact(sessions[0], testers[0].phone_number);
  await interact(sessions[1], testers[1].phone_number);
  await interact(sessions[1], testers[1].phone_number, { duration: 45 }); // below the conversational duration
  await interact(unconsented, '+12125550106');
  await interact(rapid, testers[2].phone_number);
  let e = await expect(2, 2, 1);
  t.same(e.readiness.clean_observation_carriers.observed, ['ATT', 'TMOBILE'], 'VERIZON only seen in a rapid audit and by an unconsented tester');

  clock.advance(DAY); // day 2
  await interact(sessions[2], testers[2].phone_number);
  await interact(sessions[3], testers[3].phone_number);
  await expect(4, 4, 2);
  clock.advance(DAY); // day 3
  await interact(sessions[4], testers[4].phone_number);
  await interact(sessions[0], testers[0].phone_number, { callback: true });
  await expect(6, 5, 3);
  clock.advance(DAY); // day 4
  await interact(sessions[1], testers[1].phone_number);
  e = await expect(7, 5, 4);
  t.same(e.readiness.qualifying_human_calls, { required: 8, observed: 7, met: false }, 'one short');
  t.equal(e.recommended_action, 'RUN_SPAM_TEST');
  t.match(e.health_warning, /qualifying_human_calls/);
  await interact(sessions[2], testers[2].phone_number);
  e = await expect(8, 5, 4, 'CLEAN_OBSERVED');
  t.equal(e.readiness.met, true);
  t.equal(e.health_warning, null);
  t.equal(e.recommended_action, 'NONE');

  // A negative handset observation flags it, a correction restores it (the audit keeps both).
  const bad = await interact(rapid, testers[2].phone_number, { outcome: 'WRONG_NAME' });
  e = await evidence();
  t.equal(e.evidence_state, 'FLAGGED', 'a rapid audit\'s negative display is handset evidence');
  t.match(e.health_warning, /WRONG_NAME observed on VERIZON/);
  const fixed = await post(`/v1/number-health/attempts/${bad}/observation`, { outcome: 'CLEAN', observed_label: 'Ready Co', handset: HANDSET });
  t.equal(fixed.body.data.audit.length, 2);
  t.equal((await evidence()).evidence_state, 'CLEAN_OBSERVED');

  // Set resolution sees the same evidence, and its cached ranking expires with time too.
  const set = (await post('/v1/number-health/sets', { name: 'Ready', members: [{ phone_id: target.id }] })).body.data.id;
  const resolve = async () => (await post(`/v1/number-health/sets/${set}/resolve`, { destination_number: '+12125550199' })).body.data;
  t.match(await resolve(), { phone_id: target.id, evidence_state: 'CLEAN_OBSERVED', health_warning: null });

  // Time passes: the provider answer goes stale, and unknown is not clean.
  clock.advance(8 * DAY);
  t.match(await resolve(), { evidence_state: 'NEEDS_DATA', recommended_action: 'FRESH_CHECK' }, 'the ranking expired with the evidence');
  e = await evidence();
  t.equal(e.evidence_state, 'NEEDS_DATA');
  t.equal(e.recommended_action, 'FRESH_CHECK');
  t.same(e.readiness.provider_risk.carriers, { ATT: 'STALE', TMOBILE: 'STALE', VERIZON: 'STALE' });
  await setReputation(env, org.organization_id, target.id, allLow, new Date(clock.now()));
  t.equal((await evidence()).evidence_state, 'CLEAN_OBSERVED', 'a fresh LOW restores it');
  clock.advance(31 * DAY);
  await setReputation(env, org.organization_id, target.id, allLow, new Date(clock.now()));
  e = await evidence();
  t.equal(e.evidence_state, 'NEEDS_DATA', 'qualifying evidence older than the handset window is not recent');
});

t.test('fleet list: filters, state filter, pages, memberships, tenant isolation', async (t) => {
  await env.db.none(`UPDATE phone_numbers SET team_id = 'east' WHERE id = $1`, [spare.id]);
  await setReputation(env, org.organization_id, spare.id, { ATT: 'MEDIUM' }, new Date(clock.now()));
  const set = (await post('/v1/number-health/sets', { name: 'Fleet', members: [{ phone_id: spare.id, role: 'ALTERNATE', priority: 7 }] })).body.data.id;
  const list = async (q: string, k = key) => (await env.request('GET', `/v1/number-health/numbers${q}`, { key: k })).body;
  let b = await list('');
  t.same(b.data.map((n: any) => n.phone_id), [...org.phones].reverse().map((p) => p.id), 'newest first');
  const s = b.data.find((n: any) => n.phone_id === spare.id);
  t.match(s, { team_id: 'east', evidence_state: 'WATCH', recommended_action: 'MONITOR', identity: { status: 'COMPLETE', missing: [] },
    set_memberships: [{ number_set_id: set, role: 'ALTERNATE', state: 'ACTIVE', outbound_enabled: true, priority: 7 }] });
  t.match(s.provider_scores, [{ carrier: 'ATT', risk_level: 'MEDIUM', provider: 'fixture', fresh: true }]);
  t.same((await list('?team_id=east')).data.map((n: any) => n.phone_id), [spare.id]);
  t.same((await list(`?number_set_id=${set}`)).data.map((n: any) => n.phone_id), [spare.id]);
  t.same((await list(`?area_code=${target.phone_number.slice(2, 5)}`)).data.map((n: any) => n.phone_id).includes(target.id), true);
  t.same((await list('?area_code=999')).data, []);
  t.same((await list('?state=WATCH')).data.map((n: any) => n.phone_id), [spare.id]);
  t.same((await list('?state=FLAGGED')).data, []);
  await env.request('PATCH', `/v1/number-health/sets/${set}`, { key, body: { members: [{ phone_id: spare.id, state: 'RETIRED' }] } });
  t.same((await list('?state=RETIRED')).data.map((n: any) => n.phone_id), [spare.id], 'a retired only membership shows RETIRED');
  await env.db.none(`UPDATE phone_numbers SET cnam_display_name = '' WHERE id = $1`, [org.phones[1].id]);
  const inc = (await list('?state=SETUP_INCOMPLETE')).data;
  t.same(inc.map((n: any) => n.phone_id), [org.phones[1].id]);
  t.match(inc[0], { identity: { status: 'INCOMPLETE', missing: ['identity'] }, recommended_action: 'COMPLETE_SETUP' });

  const p1 = await list('?limit=2');
  t.equal(p1.data.length, 2);
  const p2 = await list(`?limit=2&cursor=${encodeURIComponent(p1.meta.cursor)}`);
  t.same(p2.data.map((n: any) => n.phone_id), [org.phones[0].id], 'the next page');
  t.equal(p2.meta.cursor, undefined);
  const wrong = await env.request('GET', `/v1/number-health/numbers?limit=2&state=WATCH&cursor=${encodeURIComponent(p1.meta.cursor)}`, { key });
  t.equal(wrong.status, 400, 'a cursor belongs to its filters');
  t.equal((await env.request('GET', '/v1/number-health/numbers?state=GREEN', { key })).status, 400);
  t.equal((await env.request('GET', '/v1/number-health/numbers?area_code=12', { key })).status, 400);

  const theirs = await list('', other.api_key);
  t.same(theirs.data.map((n: any) => n.phone_id), [other.phones[0].id], 'another organization sees only its numbers');
  t.same((await list(`?number_set_id=${set}`, other.api_key)).data, []);
});
