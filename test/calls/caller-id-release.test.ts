// A call never goes out under a number its organization no longer holds. With the workers down, organization W
// queues calls from its number, releases the number, and organization B buys it. Releasing cancels W's queued
// calls at once; and when the release's follow-up never ran (the gateway died right after the commit), origination
// re-checks ownership under the call's lock and ends the call without dialing. Either way the carrier never
// hears of W's calls, and B's number works for B.
import { Queue } from 'bullmq';
import t from 'tap';
import { CARRIER_EVENTS_QUEUE, sequencedEventJobId } from '../../shared/carriers/carrier.ts';
import { DIAL_QUEUE } from '../../shared/calls/queues.ts';
import { releaseNumber } from '../../shared/numbers/lifecycle.ts';
import { eventually, type TestEnv } from '../helpers/env.ts';
import { aiCall, callEnv, callOrg, channelsUsed, dial, getCall, type CallOrg } from './helpers.ts';

const { env } = await callEnv(t, {}, { workers: false });
const connection = env.redis.duplicate({ maxRetriesPerRequest: null });
const events = new Queue(CARRIER_EVENTS_QUEUE, { connection, prefix: env.config.redisPrefix });
const dials = new Queue(DIAL_QUEUE, { connection, prefix: env.config.redisPrefix });
t.teardown(async () => { await events.close(); await dials.close(); await connection.quit(); });

async function numberId(e: TestEnv, org: CallOrg): Promise<number> {
  const r = await e.request('GET', '/v1/phone-numbers', { key: org.api_key });
  return r.body.data.find((n: { phone_number: string }) => n.phone_number === org.from).id;
}

/** Three calls from the organization's number (two AI calls, one bridge), all QUEUED: no workers run yet. */
async function queueThree(org: CallOrg): Promise<string[]> {
  const ids: string[] = [];
  for (const r of [await aiCall(env, org, '+14155552001'), await aiCall(env, org, '+14155552002'), await dial(env, org, '+14155552003')]) {
    if (r.status !== 202) throw new Error(`dial: ${r.status} ${r.text}`);
    ids.push(r.body.data.call_id);
  }
  return ids;
}

/** Whether the sandbox carrier was ever asked to place any leg of the call (a leg's script jobs exist). */
async function carrierTouched(callId: string): Promise<boolean> {
  for (const role of ['connect', 'destination']) {
    const leg = `${callId}-${role}`;
    for (const id of [sequencedEventJobId(leg, 1), `sbx-${leg}-ringing`]) if (await events.getJob(id)) return true;
  }
  return false;
}

async function buy(t: Pick<typeof import('tap').default, 'equal'>, org: CallOrg, phone: string) {
  const r = await env.request('POST', '/v1/phone-numbers', { key: org.api_key, body: { phone_number: phone } });
  t.equal(r.status, 202, r.status === 202 ? 'the released number is bought by another organization' : r.text);
  return r.body.data.id as number;
}

function assertNeverDialed(t: Pick<typeof import('tap').default, "match" | "ok">, c: any) {
  t.match(c, { status: 'CANCELED', call_outcome: 'connection_unconfirmed', disconnection_reason: 'caller_id_released',
    failure_code: null, picked_up: false, duration_seconds: 0, cost_cents: 0 }, `call ${c.id} ended without dialing`);
  t.ok(c.legs.every((l: { status: string; originated_at: string | null }) => l.status === 'PENDING' && l.originated_at === null), 'no leg originated');
}

const w = await callOrg(env);
const b = await env.bootstrap({ numbers: 0 });
const w2 = await callOrg(env);
const b2 = await env.bootstrap({ numbers: 0 });
let wCalls: string[] = [];
let w2Calls: string[] = [];
let bNumber = 0;
let b2Number = 0;

t.test('releasing a number cancels the calls queued from it', async (t) => {
  wCalls = await queueThree(w);
  t.equal(await channelsUsed(env, w.organization_id), 4);
  const rel = await env.request('DELETE', `/v1/phone-numbers/${await numberId(env, w)}`, { key: w.api_key });
  t.equal(rel.status, 200);
  t.equal(rel.body.data.status, 'RELEASED');
  for (const id of wCalls) assertNeverDialed(t, await getCall(env, w, id));
  t.equal(await channelsUsed(env, w.organization_id), 0, 'their channels are free');
  bNumber = await buy(t, b as CallOrg, w.from);
});

t.test('a release whose follow-up never ran: origination refuses the number', async (t) => {
  w2Calls = await queueThree(w2);
  // The release commits, and the gateway dies before canceling the queued calls.
  await releaseNumber(env.db, env.queues, w2.organization_id, await numberId(env, w2));
  for (const id of w2Calls) t.equal((await getCall(env, w2, id)).status, 'QUEUED');
  b2Number = await buy(t, b2 as CallOrg, w2.from);
});

t.test('workers return: no call of W is originated with the number, which now works for B', async (t) => {
  const workers = env.spawn('workers');
  t.teardown(() => workers.kill('SIGTERM'));
  await workers.ready();
  for (const [org, id] of [[b, bNumber], [b2, b2Number]] as const) {
    await eventually(async () => (await env.request('GET', `/v1/phone-numbers/${id}`, { key: org.api_key })).body.data.status === 'ACTIVE', 20_000);
  }
  for (const id of w2Calls) {
    const c = await eventually(async () => { const c = await getCall(env, w2, id); return c.ended_at ? c : null; }, 20_000);
    assertNeverDialed(t, c);
  }
  // W's dial jobs ran too, and found their calls over.
  for (const id of [...wCalls, ...w2Calls]) {
    const job = await eventually(async () => { const j = await dials.getJob(id); return j && (await j.isCompleted()) ? j : null; }, 20_000);
    t.ok(['already_ended', 'applied'].includes(job.returnvalue), `dial job of ${id}: ${job.returnvalue}`);
    t.notOk(await carrierTouched(id), 'the carrier never heard of the call');
  }
  for (const id of wCalls) assertNeverDialed(t, await getCall(env, w, id));
  t.equal(await channelsUsed(env, w2.organization_id), 0, 'channels of the refused calls released');
  const events2 = await env.db.any(`SELECT event_type FROM events WHERE data->>'id' = ANY($1) ORDER BY event_type`, [w2Calls]);
  t.ok(events2.some((e) => e.event_type === 'call_completed'), 'the refused calls report their end');

  // B dials from the number it now holds: it is originated with B's caller ID.
  const bOrg = { ...(b as CallOrg), from: w.from };
  const mine = await aiCall(env, bOrg, '+14155552010');
  t.equal(mine.status, 202, mine.status === 202 ? 'B dials from it' : mine.text);
  const c = await eventually(async () => { const c = await getCall(env, bOrg, mine.body.data.call_id); return c.legs[0].originated_at ? c : null; }, 20_000);
  t.equal(c.from_number, w.from);
  // The carrier is asked after the origination commits (originated_at): its jobs appear a moment later.
  t.ok(await eventually(() => carrierTouched(c.id), 20_000), 'B\'s call is originated');
});
