// Numbered carrier events keep their order across a crash. 50 live sandbox calls; the workers are SIGKILLed right
// after taking (locking) an "answered" event job, before applying it (test-only fault switch), so that job stays
// locked by a dead process while the calls' hang-ups fall due and are taken by the restarted workers. No hang-up
// may overtake its answer: every call ends as the sandbox scripted it (answered, 10 s, remote hang-up), billed.
// Sandbox time scale 0.5: answer 1 s after origination, hang-up 6 s after.
import { Queue } from 'bullmq';
import t from 'tap';
import { CARRIER_EVENTS_QUEUE } from '../../shared/carriers/carrier.ts';
import { legsCents } from '../../shared/calls/pricing.ts';
import { eventually } from '../helpers/env.ts';
import { aiCall, callEnv, callOrg, channelsUsed, dial, getCall } from './helpers.ts';

const { env } = await callEnv(t, { SANDBOX_TIME_SCALE: '0.5' }, { workers: false });
const org = await callOrg(env);
const connection = env.redis.duplicate({ maxRetriesPerRequest: null });
const events = new Queue(CARRIER_EVENTS_QUEUE, { connection, prefix: env.config.redisPrefix });
t.teardown(async () => { await events.close(); await connection.quit(); });

t.test('SIGKILL with an answer locked by the dead process: its hang-up waits for it', async (t) => {
  // Placed while the workers are down: all QUEUED, dialed together once the workers start. AI calls first, so the
  // first answer to fall due (the one the workers die on) is a destination's, which has a scripted hang-up after it.
  const ai: string[] = [];
  const bridge: string[] = [];
  for (let i = 0; i < 50; i++) {
    const to = `+1415555${String(2000 + i).padStart(4, '0')}`; // "other" last four digits: answered, talks 10 s
    const r = i >= 40 ? await dial(env, org, to, '+12125559100') : await aiCall(env, org, to);
    t.equal(r.status, 202);
    (i >= 40 ? bridge : ai).push(r.body.data.call_id);
  }

  const faulty = env.spawn('workers', { CARRIER_EVENTS_FAULT: 'kill-before-apply:answered' });
  await eventually(async () => faulty.child.exitCode !== null || faulty.child.signalCode !== null, 60_000);
  t.equal(faulty.child.signalCode, 'SIGKILL', 'the workers died holding an answered event job');
  const lockPrefix = `${env.config.redisPrefix}:carrier-events:`;
  const locked = (await env.redis.keys(`${lockPrefix}ev-*-1:lock`)).map((k) => k.slice(lockPrefix.length, -':lock'.length));
  t.ok(locked.length >= 1, `answered jobs still locked by the dead process: ${locked.length}`);

  // The dead process's locks would lapse 5 s after it took the jobs; a restart slower than that (a busy machine) would
  // find the answers free again and never test the wait. Keep them held until every hang-up behind one was taken and
  // sent back to wait, then let them go as their expiry would.
  const lockKeys = locked.map((id) => `${lockPrefix}${id}:lock`);
  for (const k of lockKeys) await env.redis.pexpire(k, 300_000);
  const again = env.spawn('workers');
  t.teardown(() => again.kill('SIGTERM'));
  await again.ready();
  const hangupIds = locked.map((id) => id.replace(/-1$/, '-2'));
  await eventually(async () => {
    for (const id of hangupIds) {
      const job = await events.getJob(id);
      if (job && job.attemptsStarted < 2) return false; // not due yet, or not yet taken and sent back
    }
    return true;
  }, 120_000, 200);
  await env.redis.del(...lockKeys);

  // Waits on the rows (polling 50 calls over HTTP would hit the key's rate limit), then reads each call once.
  const all = [...ai, ...bridge];
  await eventually(async () => (await env.db.one(
    `SELECT count(*)::int AS n FROM calls WHERE id = ANY($1::uuid[]) AND ended_at IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM jsonb_each(legs) l WHERE l.value->>'status' NOT IN ('ENDED', 'PENDING'))`, [all])).n === all.length,
  50_000, 200);
  const ended = [];
  for (const id of all) ended.push(await getCall(env, org, id));
  for (const c of ended) {
    t.match(c, {
      status: 'COMPLETED', call_outcome: 'answered', disconnection_reason: 'remote_hangup', picked_up: true,
      duration_seconds: 10,
    }, `${c.type} call ${c.id} ended as scripted`);
    // An AI call's one leg talks 10 s: 1 cent. A bridge's connect leg also pays while its destination is dialed and
    // rings, which waits for the restarted workers: 1 cent a leg when they came back within the minute, more on a
    // machine so busy that they did not. Either way the cost is what the legs' own times say, billed once.
    const legs = Object.fromEntries(c.legs.map((l: { role: string }) => [l.role, l]));
    t.equal(c.cost_cents, legsCents(legs, Date.parse(c.ended_at), 0.5, 1), `${c.type} call ${c.id} costs what its legs' times say`);
    if (c.type === 'ai') t.equal(c.cost_cents, 1);
    else t.ok(c.cost_cents >= 2, 'a bridge pays at least a minute of each leg');
  }
  const spend = await env.db.one('SELECT coalesce(sum(cents), 0)::int AS cents FROM org_daily_spend WHERE organization_id = $1', [org.organization_id]);
  t.equal(spend.cents, ended.reduce((sum, c) => sum + c.cost_cents, 0), 'every call billed once');
  const transcripts = await env.db.one('SELECT count(*)::int AS n FROM calls WHERE id = ANY($1::uuid[]) AND transcript IS NOT NULL', [ai]);
  t.equal(transcripts.n, ai.length, 'every AI call has its transcript');
  // The hang-up of each locked answer was taken while the answer was still locked, and waited (went back to the
  // delayed set at least once) instead of being applied, without using up an attempt.
  let overtaken = 0;
  for (const answerId of locked) {
    const hangup = await events.getJob(answerId.replace(/-1$/, '-2'));
    if (!hangup) continue; // a bridge's connect leg: no scripted end of its own
    overtaken++;
    t.ok(hangup.attemptsStarted >= 2, `${hangup.id} waited for its answer (taken ${hangup.attemptsStarted} times)`);
    // attemptsMade counts finished attempts (completion included): 1 = no attempt failed or was used up waiting.
    t.equal(hangup.attemptsMade, 1, 'waiting used up no attempt');
  }
  t.ok(overtaken >= 1, 'at least one hang-up fell due while its answer was locked');
  await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0, 10_000);
  t.pass('channels released');
});
