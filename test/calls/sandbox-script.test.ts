// The sandbox schedules a leg's script (ringing, answer, hang-up) all at once or not at all. A workers process
// killed half-way through an originate used to leave the answer scheduled without its hang-up: after the restart
// the call looked endless (a late call-length timer found no earlier event pending and cut it off, restart.test.ts),
// and the repeated originate timed the missing hang-up from the repeat. Here the first attempt dies after its n-th
// queue write (a process killed between two writes); the repeat runs 5 s later. Real Redis, no workers.
import { FlowProducer, Queue } from 'bullmq';
import t from 'tap';
import { CARRIER_EVENTS_QUEUE, sequencedEventJobId, type CarrierEvent } from '../../shared/carriers/carrier.ts';
import { SandboxCarrier } from '../../shared/carriers/sandbox.ts';
import { uuidv7 } from '../../shared/ids.ts';
import { callEnv } from './helpers.ts';

const { env } = await callEnv(t, {}, { workers: false });
const connection = env.redis.duplicate({ maxRetriesPerRequest: null });
const events = new Queue(CARRIER_EVENTS_QUEUE, { connection, prefix: env.config.redisPrefix });
const flows = new FlowProducer({ connection, prefix: env.config.redisPrefix });
t.teardown(async () => { await events.close(); await flows.close(); await connection.quit(); });

/** The queue as seen by a process that dies after `writes` successful writes to it. */
function dyingAfter(writes: number): Queue {
  let done = 0;
  const die = () => { if (done++ >= writes) throw new Error('process killed'); };
  return new Proxy(events, {
    get(target, p, receiver) {
      if (p === 'add') return async (...a: Parameters<Queue['add']>) => { die(); return target.add(...a); };
      if (p === 'addBulk') return async (...a: Parameters<Queue['addBulk']>) => { die(); return target.addBulk(...a); };
      return Reflect.get(target, p, receiver);
    },
  });
}

const SCALE = 0.01;

t.test('an originate killed between writes, then repeated: the answer and the hang-up keep their scripted distance', async (t) => {
  for (let writes = 0; writes <= 3; writes++) {
    const callId = uuidv7();
    const leg = { callId, role: 'destination' as const, legId: `${callId}-destination`, number: '+14155554567' };
    const req = { ...leg, from: '+14155550100', ringTimeoutSeconds: 30, maxDurationSeconds: 3600, record: false };
    const t0 = Date.now() + 60_000; // far enough ahead that nothing falls due (no workers run here anyway)
    await new SandboxCarrier(dyingAfter(writes), flows, SCALE, () => t0).originate(req).catch(() => undefined);
    const answered1 = await events.getJob(sequencedEventJobId(leg.legId, 1));
    const ended1 = await events.getJob(sequencedEventJobId(leg.legId, 2));
    t.equal(!!answered1, !!ended1, `killed after ${writes} writes: the answer is scheduled exactly when the hang-up is`);
    // The workers retry the originate (its dial job comes back after the dead process's lock expires).
    await new SandboxCarrier(events, flows, SCALE, () => t0 + 5000).originate(req);
    const answered = (await events.getJob(sequencedEventJobId(leg.legId, 1)))!.data as CarrierEvent;
    const ended = (await events.getJob(sequencedEventJobId(leg.legId, 2)))!.data as CarrierEvent;
    t.match([answered.kind, ended.kind], ['answered', 'ended']);
    t.equal(Date.parse(ended.at) - Date.parse(answered.at), 10 * 1000 * SCALE,
      `killed after ${writes} writes: the hang-up comes 10 sandbox seconds after the answer`);
  }
});
