// POST /v1/calls/{id}/hangup in every state and every mode, the setup-cancel race against origination, and the
// call-length limit. Sandbox time scale 0.05 here, so ringing lasts long enough to act on (30 s ring = 1.5 s).
import t from 'tap';
import { eventually } from '../helpers/env.ts';
import {
  aiCall, callEnv, callOrg, channelsUsed, deliveriesFor, dial, getCall, settled, sleep, startRx, subscribeCalls, waitStatus,
} from './helpers.ts';

const { env } = await callEnv(t, { SANDBOX_TIME_SCALE: '0.05' }, { workers: false });
const rx = await startRx(t);
const org = await callOrg(env);
await subscribeCalls(env, rx, org);

const hangup = (id: string, mode?: string, key = org.api_key) =>
  env.request('POST', `/v1/calls/${id}/hangup${mode ? `?mode=${mode}` : ''}`, { key });

/** True when the sandbox carrier was ever asked to place the leg (its script jobs exist). */
const carrierTouched = async (callId: string, role: string) =>
  (await env.redis.exists(`${env.config.redisPrefix}:carrier-events:ev-${callId}-${role}-1`,
    `${env.config.redisPrefix}:carrier-events:sbx-${callId}-${role}-ringing`)) > 0;

t.test('QUEUED (nothing originated yet): every mode cancels; repeats return the current status', async (t) => {
  // No workers are running yet, so calls stay QUEUED.
  const ids: Record<string, string> = {};
  for (const mode of ['hangup', 'setup_failed', 'cancel_setup', 'omitted']) {
    const r = await dial(env, org, '+14155554567');
    t.equal(r.status, 202);
    ids[mode] = r.body.data.call_id;
  }
  t.equal(await channelsUsed(env, org.organization_id), 8, 'four bridge calls hold two channels each');
  const expect = {
    hangup: ['canceled', 'api_hangup'], omitted: ['canceled', 'api_hangup'],
    setup_failed: ['connection_unconfirmed', 'setup_failed'], cancel_setup: ['connection_unconfirmed', 'setup_canceled'],
  } as const;
  for (const [mode, id] of Object.entries(ids)) {
    const r = await hangup(id, mode === 'omitted' ? undefined : mode);
    t.equal(r.status, 200, mode);
    t.same(r.body.data, { call_id: id, status: 'CANCELED', mode: mode === 'omitted' ? 'hangup' : mode, result: 'canceled' });
    const c = await getCall(env, org, id);
    const [outcome, reason] = expect[mode as keyof typeof expect];
    t.match(c, { status: 'CANCELED', call_outcome: outcome, disconnection_reason: reason, picked_up: false, duration_seconds: 0,
      failure_code: null, failure_category: null, cost_cents: 0 });
    t.ok(c.ended_at);
    for (const again of ['hangup', 'setup_failed', 'cancel_setup']) {
      const r2 = await hangup(id, again);
      t.equal(r2.status, 200);
      t.same(r2.body.data, { call_id: id, status: 'CANCELED', mode: again, result: 'already_ended' }, `${again} on an ended call`);
    }
  }
  t.equal(await channelsUsed(env, org.organization_id), 0, 'channels released synchronously');
  // The dial jobs of the canceled calls run once workers are up and dial nothing.
  const workers = env.spawn('workers');
  await workers.ready();
  // The webhooks (the relay runs in workers): call_completed and phone_call.ended, no disposition.
  await rx.waitFor(() => Object.values(ids).every((id) => Object.keys(deliveriesFor(rx, id)).length === 3));
  await sleep(300); // nothing else arrives
  for (const id of Object.values(ids)) {
    const d = deliveriesFor(rx, id);
    t.same(Object.keys(d).sort(), ['call_completed', 'new_call', 'phone_call.ended']);
    t.equal(d.call_completed[0].body.data.status, 'CANCELED');
  }
  await eventually(async () => (await env.db.one(`SELECT count(*)::int AS n FROM calls WHERE status = 'QUEUED'`)).n === 0);
  const probe = await aiCall(env, org, '+14155554567');
  await settled(env, org, probe.body.data.call_id, 30_000);
  for (const id of Object.values(ids)) {
    const c = await getCall(env, org, id);
    t.equal(c.status, 'CANCELED');
    t.ok(c.legs.every((l: any) => l.status === 'PENDING' && l.originated_at === null), 'no leg was ever originated');
    t.notOk(await carrierTouched(id, 'connect'), 'the carrier was never asked to ring');
  }
});

t.test('RINGING (originated): setup modes leave the call running; hangup cancels it and the carrier leg', async (t) => {
  const r = await aiCall(env, org, '+14155550002'); // rings out after 30 s (1.5 s here)
  const id = r.body.data.call_id;
  await waitStatus(env, org, id, 'RINGING');
  for (const mode of ['setup_failed', 'cancel_setup']) {
    const s = await hangup(id, mode);
    t.equal(s.status, 200);
    t.same(s.body.data, { call_id: id, status: 'RINGING', mode, result: 'already_originated' });
  }
  const h = await hangup(id);
  t.same(h.body.data, { call_id: id, status: 'CANCELED', mode: 'hangup', result: 'canceled' });
  const c = await settled(env, org, id);
  t.match(c, { status: 'CANCELED', call_outcome: 'canceled', disconnection_reason: 'api_hangup', failure_code: null });
  t.match(c.legs[0], { status: 'ENDED', end_reason: 'local_hangup' });
  await sleep(2000); // past the scripted ring-out: the late no_answer never arrives or is ignored
  t.equal((await getCall(env, org, id)).status, 'CANCELED');
  t.equal(await channelsUsed(env, org.organization_id), 0);

  // A bridge whose staff phone answered and whose destination is ringing.
  const b = await dial(env, org, '+14155550002');
  const bid = b.body.data.call_id;
  await eventually(async () => (await getCall(env, org, bid)).legs[1].status === 'RINGING');
  t.equal((await hangup(bid, 'cancel_setup')).body.data.result, 'already_originated');
  t.equal((await hangup(bid)).body.data.status, 'CANCELED');
  const bc = await settled(env, org, bid);
  t.match(bc.legs, [{ role: 'connect', status: 'ENDED', end_reason: 'local_hangup' }, { role: 'destination', status: 'ENDED', end_reason: 'local_hangup' }]);
});

t.test('ANSWERED: setup modes leave the call running; hangup completes it and hangs up both legs', async (t) => {
  const r = await dial(env, org, '+14155550008', '+12125550008'); // both parties stay on the line
  const id = r.body.data.call_id;
  await waitStatus(env, org, id, 'ANSWERED');
  for (const mode of ['setup_failed', 'cancel_setup']) {
    t.same((await hangup(id, mode)).body.data, { call_id: id, status: 'ANSWERED', mode, result: 'already_originated' });
  }
  await sleep(250); // 5 sandbox seconds of talk
  const h = await hangup(id, 'hangup');
  t.same(h.body.data, { call_id: id, status: 'COMPLETED', mode: 'hangup', result: 'ended' });
  const c = await settled(env, org, id);
  t.match(c, { status: 'COMPLETED', call_outcome: 'answered', disconnection_reason: 'api_hangup', picked_up: true });
  t.ok(c.duration_seconds >= 4, `talk time counted (${c.duration_seconds} s)`);
  t.match(c.legs, [{ status: 'ENDED', end_reason: 'local_hangup' }, { status: 'ENDED', end_reason: 'local_hangup' }]);
  t.same((await hangup(id, 'hangup')).body.data, { call_id: id, status: 'COMPLETED', mode: 'hangup', result: 'already_ended' });
  t.equal(await channelsUsed(env, org.organization_id), 0);
});

t.test('setup-cancel racing origination: a call is either canceled before anything is dialed or left running', async (t) => {
  const N = 40;
  const results = await Promise.all(Array.from({ length: N }, async (_, i) => {
    const r = await aiCall(env, org, '+14155554567');
    const id = r.body.data.call_id;
    if (i % 8) await sleep((i % 8) * 5); // from "at once" to 35 ms later
    const h = await hangup(id, i % 2 ? 'cancel_setup' : 'setup_failed');
    t.equal(h.status, 200);
    return { id, result: h.body.data.result as string, status: h.body.data.status as string };
  }));
  let canceled = 0;
  let running = 0;
  for (const r of results) {
    const c = await settled(env, org, r.id, 30_000);
    if (r.result === 'canceled') {
      canceled++;
      t.equal(c.status, 'CANCELED');
      t.equal(c.legs[0].originated_at, null, 'canceled calls were never originated');
      t.notOk(await carrierTouched(r.id, 'destination'), 'and the carrier never heard of them');
    } else {
      running++;
      // Origination won: the call was left running, or (a loaded machine answering the hangup late: the whole call
      // lasts 0.6 s here) had already run to its end.
      t.ok(r.result === 'already_originated' || r.result === 'already_ended', `origination won (${r.result}, ${r.status})`);
      t.not(r.status, 'QUEUED');
      if (r.result === 'already_ended') t.equal(r.status, 'COMPLETED', 'ended by itself, not by the setup hangup');
      t.match(c, { status: 'COMPLETED', disconnection_reason: 'remote_hangup', duration_seconds: 10 }, 'an originated call was not interrupted');
    }
  }
  t.equal(canceled + running, N);
  t.comment(`race outcomes: ${canceled} canceled before origination, ${running} already originated`);
  // The workers release a call's channels right after committing its end: wait for the last one.
  await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0, 10_000);
  t.pass('channels released');
});

t.test('unknown, foreign and malformed ids; mode validation; scope', async (t) => {
  const other = await callOrg(env);
  const r = await aiCall(env, other, '+14155550001');
  t.equal((await hangup(r.body.data.call_id)).status, 404, 'another organization\'s call is not found');
  t.equal((await hangup('01900000-0000-7000-8000-000000000000')).status, 404);
  t.equal((await hangup('nope')).status, 404);
  const bad = await hangup(r.body.data.call_id, 'bogus');
  t.equal(bad.status, 400);
  t.equal(bad.body.error.code, 'validation_error');
  t.ok(bad.body.error.fields.mode);
  const readOnly = await env.createKey({ organizationId: other.organization_id, userId: other.user_id, scopes: ['calls:read'] });
  const denied = await hangup(r.body.data.call_id, undefined, readOnly.apiKey);
  t.equal(denied.status, 403);
  t.equal(denied.body.error.code, 'scope_missing');
});

t.test('call-length limit: organization and number settings, ended automatically', async (t) => {
  const o = await callOrg(env, { max_call_minutes: 1 }, { numbers: 2 });
  const limited = await aiCall(env, o, '+14155550008'); // never hangs up
  const c = await settled(env, o, limited.body.data.call_id, 30_000);
  t.match(c, { status: 'COMPLETED', call_outcome: 'answered', disconnection_reason: 'max_duration_reached', duration_seconds: 60,
    max_duration_seconds: 60, picked_up: true, cost_cents: 1 });
  t.match(c.legs[0], { status: 'ENDED', end_reason: 'local_hangup' });

  // A number's own limit wins over the organization's.
  await env.db.none('UPDATE phone_numbers SET max_call_minutes = 2 WHERE phone_number = $1', [o.phone_numbers[1]]);
  const viaNumber = await env.request('POST', '/v1/calls/dial', {
    key: o.api_key, body: { from_number: o.phone_numbers[1], to_number: '+14155550008', connect_number: '+12125550008' } });
  const b = await settled(env, o, viaNumber.body.data.call_id, 30_000);
  t.match(b, { status: 'COMPLETED', disconnection_reason: 'max_duration_reached', duration_seconds: 120, max_duration_seconds: 120 });
  t.match(b.legs, [{ end_reason: 'local_hangup' }, { end_reason: 'local_hangup' }], 'both legs hung up at the limit');
  await eventually(async () => (await channelsUsed(env, o.organization_id)) === 0, 10_000);
  t.pass('channels released');
});
