// The workers process is SIGKILLed mid-call and restarted: calls still end correctly (their timers are delayed
// jobs in Redis), channels are released, webhooks are delivered once per event. Sandbox time scale 0.2 here: a
// conversation lasts 2 s, long enough for a loaded machine to kill the workers before it is over.
import t from 'tap';
import { eventually } from '../helpers/env.ts';
import { aiCall, callEnv, callOrg, channelsUsed, deliveriesFor, dial, getCall, settled, sleep, startRx, subscribeCalls, waitStatus } from './helpers.ts';

const SCALE = 0.2;
const { env, workers } = await callEnv(t, { SANDBOX_TIME_SCALE: String(SCALE) });
const rx = await startRx(t);
const org = await callOrg(env, { max_call_minutes: 1 }); // 60 s limit = 12 s here
await subscribeCalls(env, rx, org);

t.test('SIGKILL mid-call, restart: talking, ringing and limit-bound calls all end correctly', async (t) => {
  const ringing = (await aiCall(env, org, '+14155550002')).body.data.call_id; // rings out at 6 s
  const forever = (await dial(env, org, '+14155550008', '+12125550008')).body.data.call_id; // ends at the 12 s limit
  await waitStatus(env, org, ringing, 'RINGING');
  const f = await waitStatus(env, org, forever, 'ANSWERED');
  // Placed last, right before the kill: answered at 0.4 s, hangs up at 2.4 s.
  const talking = (await aiCall(env, org, '+14155554567')).body.data.call_id;
  // Killed while ringing (or just answered): its answer and its hang-up both fall due while the workers are down,
  // and may then be taken in either order (numbered events: the hang-up waits for the answer).
  const overtaken = (await aiCall(env, org, '+14155551234')).body.data.call_id;
  await waitStatus(env, org, talking, 'ANSWERED');
  await eventually(async () => ['RINGING', 'ANSWERED'].includes((await getCall(env, org, overtaken)).status), 10_000, 10);
  await workers!.kill('SIGKILL');
  const ids = [ringing, forever, talking, overtaken];
  const statuses = async () => Promise.all(ids.map(async (id) => (await getCall(env, org, id)).status));
  const down = await statuses();
  t.match(down, ['RINGING', 'ANSWERED', 'ANSWERED', /^(RINGING|ANSWERED)$/], 'killed mid-call: all four calls live');
  t.equal(await channelsUsed(env, org.organization_id), 5, 'channels held');
  await sleep(1500);
  t.same(await statuses(), down, 'nothing moves while workers are down');
  t.equal(await channelsUsed(env, org.organization_id), 5, 'channels still held');
  // Stay down past every scripted moment: the hang-ups, the ring-out and the call-length limit (the last of them).
  await sleep(Math.max(0, Date.parse(f.answered_at) + 60_000 * SCALE + 1000 - Date.now()));

  const again = env.spawn('workers');
  await again.ready();
  const a = await settled(env, org, talking, 30_000);
  t.match(a, { status: 'COMPLETED', call_outcome: 'answered', disconnection_reason: 'remote_hangup', duration_seconds: 10, picked_up: true });
  const b = await settled(env, org, ringing, 30_000);
  t.match(b, { status: 'NO_ANSWER', failure_code: 'no_answer', failure_category: 'unreachable', duration_seconds: 0 });
  const o = await settled(env, org, overtaken, 30_000);
  t.match(o, { status: 'COMPLETED', call_outcome: 'answered', disconnection_reason: 'remote_hangup', duration_seconds: 10, picked_up: true },
    'events that fell due together are applied in their order');
  const c = await settled(env, org, forever, 30_000);
  t.match(c, { status: 'COMPLETED', disconnection_reason: 'max_duration_reached', duration_seconds: 60 });
  t.match(c.legs, [{ status: 'ENDED', end_reason: 'local_hangup' }, { status: 'ENDED', end_reason: 'local_hangup' }]);
  await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0, 10_000);
  t.pass('channels released');

  await rx.waitFor(() => [talking, ringing, forever, overtaken].every((id) => (deliveriesFor(rx, id).call_completed ?? []).length === 1)
    && (deliveriesFor(rx, ringing).call_no_answer ?? []).length === 1);
  await sleep(500);
  for (const id of [talking, ringing, forever, overtaken]) {
    const d = deliveriesFor(rx, id);
    t.equal(d.call_completed.length, 1, 'one call_completed');
    t.equal(d['phone_call.ended']?.length, 1, 'one phone_call.ended');
  }
  const rows = await env.db.any(`SELECT data->>'id' AS id, count(*)::int AS n FROM events WHERE event_type = 'call_completed' GROUP BY 1`);
  t.ok(rows.every((r) => r.n === 1), 'one call_completed event row per call');
  await again.kill('SIGTERM');
});
