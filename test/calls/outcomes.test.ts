// Every sandbox test number end to end through the real workers process (SANDBOX_TIME_SCALE=0.01): as an AI
// call's destination, as a bridge's destination and as a bridge's connect_number; the call record, both legs,
// and the webhooks each call produces (and the ones it must not).
import t, { type Test } from 'tap';
import { eventually } from '../helpers/env.ts';
import {
  aiCall, callEnv, callOrg, channelsUsed, deliveriesFor, dial, DISPOSITIONS, getCall, settled, startRx, subscribeCalls, waitStatus,
} from './helpers.ts';

const { env } = await callEnv(t);
const rx = await startRx(t);
const org = await callOrg(env);
const secrets = await subscribeCalls(env, rx, org);

interface Expect {
  status: string;
  call_outcome: string;
  failure_code: string | null;
  failure_category: string | null;
  disconnection_reason: string;
  picked_up: boolean;
  duration_seconds: number | null;
  disposition: string | null;
}

const FAIL = (status: string, code: string, category: string, outcome: string, disposition: string): Expect =>
  ({ status, call_outcome: outcome, failure_code: code, failure_category: category, disconnection_reason: code, picked_up: false, duration_seconds: 0, disposition });

const TABLE: Record<string, Expect> = {
  '0001': FAIL('BUSY', 'busy', 'unreachable', 'busy', 'call_busy'),
  '0002': FAIL('NO_ANSWER', 'no_answer', 'unreachable', 'no_answer', 'call_no_answer'),
  '0003': FAIL('VOICEMAIL', 'voicemail_reached', 'voicemail', 'voicemail', 'call_voicemail'),
  '0004': FAIL('FAILED', 'number_unreachable', 'unreachable', 'failed', 'call_failed'),
  '0005': FAIL('FAILED', 'call_declined', 'unreachable', 'failed', 'call_failed'),
  '0006': FAIL('FAILED', 'carrier_rejected', 'unreachable', 'failed', 'call_failed'),
  '0007': { status: 'COMPLETED', call_outcome: 'screened', failure_code: null, failure_category: null, disconnection_reason: 'call_screened',
    picked_up: false, duration_seconds: null, disposition: null },
  // 0008 never hangs up: these tests end it with the API once it is answered.
  '0008': { status: 'COMPLETED', call_outcome: 'answered', failure_code: null, failure_category: null, disconnection_reason: 'api_hangup',
    picked_up: true, duration_seconds: -1, disposition: null },
  '4567': { status: 'COMPLETED', call_outcome: 'answered', failure_code: null, failure_category: null, disconnection_reason: 'remote_hangup',
    picked_up: true, duration_seconds: 10, disposition: null },
};

const NORMAL = '+14155554567';
const num = (last4: string) => `+1415555${last4}`;

function checkRecord(t: Test, c: any, e: Expect, label: string) {
  t.equal(c.status, e.status, `${label}: status`);
  t.equal(c.call_outcome, e.call_outcome, `${label}: call_outcome`);
  t.equal(c.failure_code, e.failure_code, `${label}: failure_code`);
  t.equal(c.failure_category, e.failure_category, `${label}: failure_category`);
  t.equal(c.disconnection_reason, e.disconnection_reason, `${label}: disconnection_reason`);
  t.equal(c.picked_up, e.picked_up, `${label}: picked_up`);
  if (e.duration_seconds === -1) t.ok(c.duration_seconds >= 0, `${label}: duration known`);
  else t.equal(c.duration_seconds, e.duration_seconds, `${label}: duration_seconds`);
  if (e.status === 'COMPLETED' && e.call_outcome === 'screened') t.equal(c.answered_at, null, `${label}: unknown answer time is null`);
  t.ok(c.ended_at, `${label}: ended_at`);
  t.equal(c.direction, 'outbound');
}

/** The webhooks of one ended call: new_call, call_completed and phone_call.ended once each; the disposition event
 *  of its outcome only; nothing else. */
async function checkWebhooks(t: Test, c: any, disposition: string | null, label: string) {
  const expected = 3 + (disposition ? 1 : 0);
  await rx.waitFor(() => Object.values(deliveriesFor(rx, c.id)).flat().length >= expected);
  const d = deliveriesFor(rx, c.id);
  t.equal(d.new_call?.length, 1, `${label}: new_call once`);
  t.equal(d.call_completed?.length, 1, `${label}: call_completed once`);
  t.equal(d['phone_call.ended']?.length, 1, `${label}: phone_call.ended once`);
  for (const type of DISPOSITIONS) t.equal(d[type]?.length ?? 0, type === disposition ? 1 : 0, `${label}: ${type}`);
  const completed = d.call_completed[0].body.data;
  t.equal(completed.status, c.status);
  t.equal(completed.duration_seconds, c.duration_seconds);
  t.match(completed, { issued_by_user_id: c.issued_by_user_id, api_key_id: c.api_key_id }, `${label}: call_completed names the issuing user and key`);
  t.ok(completed.api_key_id, `${label}: placed with a key`);
  const ended = d['phone_call.ended'][0].body.data;
  t.equal(ended.failure_code, c.failure_code, `${label}: phone_call.ended carries failure_code`);
  t.equal(ended.failure_category, c.failure_category, `${label}: phone_call.ended carries failure_category`);
  if (disposition) {
    const body = d[disposition][0].body.data;
    t.same(Object.keys(body).sort(), ['created_at', 'direction', 'disconnection_reason', 'duration_seconds', 'failure_category',
      'failure_code', 'from_number', 'id', 'status', 'to_number'], `${label}: disposition payload has exactly the reference's fields`);
    t.match(body, { id: c.id, from_number: c.from_number, to_number: c.to_number, status: c.status, failure_code: c.failure_code });
    rx.verify(d[disposition][0], secrets[disposition]);
  }
}

async function endWhenAnswered(id: string) {
  await waitStatus(env, org, id, 'ANSWERED');
  const h = await env.request('POST', `/v1/calls/${id}/hangup`, { key: org.api_key });
  if (h.status !== 200) throw new Error(h.text);
}

t.test('AI calls: every test number as the destination', async (t) => {
  const placed = await Promise.all(Object.keys(TABLE).map(async (last4) => {
    const r = await aiCall(env, org, num(last4));
    t.equal(r.status, 202, `dial ${last4}`);
    return [last4, r.body.data.call_id] as const;
  }));
  await endWhenAnswered(placed.find(([l]) => l === '0008')![1]);
  for (const [last4, id] of placed) {
    const c = await settled(env, org, id);
    const e = TABLE[last4];
    checkRecord(t, c, e, `ai ${last4}`);
    t.equal(c.type, 'ai');
    t.equal(c.legs.length, 1);
    t.equal(c.legs[0].role, 'destination');
    t.equal(c.legs[0].end_reason, last4 === '0008' ? 'local_hangup' : last4 === '4567' ? 'completed' : last4 === '0007' ? 'screened' : e.failure_code);
    // One cent per started minute of the leg's answered time, up to the call's end (0008's leg reports its hang-up
    // a moment after the call ended): the scripted calls talk well under a minute, but 0008 talks until the test
    // hangs it up, which at this time scale (a sandbox minute is 0.6 s) can take longer on a loaded machine.
    const leg = c.legs[0];
    const talk = leg.answered_at ? Math.round((Date.parse(c.ended_at) - Date.parse(leg.answered_at)) / 1000 / 0.01) : 0;
    t.equal(c.cost_cents, leg.answered_at ? Math.ceil(talk / 60) : 0, `ai ${last4}: one cent per started minute of the answered leg (${talk} s)`);
    if (last4 !== '0008') t.equal(c.cost_cents, leg.answered_at ? 1 : 0, `ai ${last4}: scripted talk costs one started minute`);
    await checkWebhooks(t, c, e.disposition, `ai ${last4}`);
  }
  await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0);
});

t.test('bridge calls: every test number as the destination (connect_number answers normally)', async (t) => {
  const placed = await Promise.all(Object.keys(TABLE).map(async (last4) => {
    // With 0008 as the destination the staff phone never hangs up either (a normal one would after 10 s of
    // talk), so only the API hangup ends the call.
    const r = await dial(env, org, num(last4), last4 === '0008' ? '+12125550008' : '+14155559999');
    t.equal(r.status, 202, `dial ${last4}`);
    // A fresh number is not registered with the call-analytics providers yet: Number Health calls its setup
    // incomplete (the reference's SETUP_INCOMPLETE: missing identity, registration, monitoring or inbound routing).
    t.same(r.body.data, { call_id: r.body.data.call_id, status: 'QUEUED', from_number: org.from, selection_source: 'exact_from_number',
      evidence_state: 'SETUP_INCOMPLETE', health_warning: r.body.data.health_warning, recommended_action: 'COMPLETE_SETUP' });
    t.match(r.body.data.health_warning, /number registration/);
    return [last4, r.body.data.call_id] as const;
  }));
  await endWhenAnswered(placed.find(([l]) => l === '0008')![1]);
  for (const [last4, id] of placed) {
    const c = await settled(env, org, id);
    const e = TABLE[last4];
    checkRecord(t, c, e, `bridge ${last4}`);
    t.equal(c.type, 'bridge');
    const [connect, dest] = c.legs;
    t.match(connect, { role: 'connect', number: last4 === '0008' ? '+12125550008' : '+14155559999', status: 'ENDED', end_reason: 'local_hangup' },
      `bridge ${last4}: the staff phone is hung up by the platform`);
    t.ok(connect.answered_at, 'the staff phone answered first');
    t.match(dest, { role: 'destination', number: num(last4), status: 'ENDED' });
    t.ok(Date.parse(dest.originated_at) >= Date.parse(connect.answered_at), 'the destination is rung after the staff phone answered');
    await checkWebhooks(t, c, e.disposition, `bridge ${last4}`);
  }
  await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0);
});

t.test('bridge calls: every test number as connect_number (the destination answers normally)', async (t) => {
  const placed = await Promise.all(Object.keys(TABLE).map(async (last4) => {
    const r = await dial(env, org, NORMAL, num(last4));
    t.equal(r.status, 202);
    return [last4, r.body.data.call_id] as const;
  }));
  for (const [last4, id] of placed) {
    const c = await settled(env, org, id);
    const [connect, dest] = c.legs;
    if (TABLE[last4].failure_code) {
      // The staff phone failed: the call carries its outcome, and the called party was never rung.
      checkRecord(t, c, TABLE[last4], `connect ${last4}`);
      t.match(dest, { status: 'PENDING', originated_at: null }, `connect ${last4}: destination never dialed`);
      t.equal(connect.end_reason, TABLE[last4].failure_code);
    } else if (last4 === '0007') {
      checkRecord(t, c, TABLE['0007'], 'connect 0007');
      t.equal(connect.end_reason, 'screened');
      t.not(dest.status, 'ANSWERED');
    } else {
      // 0008 (never hangs up) and a normal staff phone: the called party talks 10 s and hangs up.
      checkRecord(t, c, TABLE['4567'], `connect ${last4}`);
      t.match(connect, { end_reason: 'local_hangup' });
      t.match(dest, { end_reason: 'completed' });
      t.equal(c.cost_cents, 2, 'both legs answered');
    }
    await checkWebhooks(t, c, TABLE[last4].disposition, `connect ${last4}`);
  }
});

t.test('bridge: a staff phone that outlasts the called party hangs up after its 10 s of talk', async (t) => {
  const r = await dial(env, org, num('0008'), NORMAL);
  const c = await settled(env, org, r.body.data.call_id);
  t.match(c, { status: 'COMPLETED', call_outcome: 'answered', disconnection_reason: 'connect_hangup', duration_seconds: 10, picked_up: true });
  t.match(c.legs[0], { role: 'connect', end_reason: 'completed' });
  t.match(c.legs[1], { role: 'destination', end_reason: 'local_hangup' });
});

t.test('event rows: one transaction per transition, in order', async (t) => {
  const r = await aiCall(env, org, num('0001'));
  const id = r.body.data.call_id;
  await settled(env, org, id);
  const rows = await env.db.any(`SELECT event_type FROM events WHERE data->>'id' = $1 ORDER BY seq`, [id]);
  t.same(rows.map((x) => x.event_type), ['new_call', 'call_completed', 'call_busy', 'phone_call.ended']);
  const c = await getCall(env, org, id);
  t.equal(c.status, 'BUSY');
});
