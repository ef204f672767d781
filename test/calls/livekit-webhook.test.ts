import { createHash } from 'node:crypto';
import { Queue } from 'bullmq';
import { ParticipantInfo, ParticipantInfo_Kind } from '@livekit/protocol';
import { AccessToken, WebhookEvent } from 'livekit-server-sdk';
import t from 'tap';
import { CARRIER_EVENTS_QUEUE } from '../../shared/carriers/carrier.ts';
import { roomNameFor } from '../../shared/carriers/livekit.ts';
import { testEnv } from '../helpers/env.ts';

const KEY = 'APIwebhooktest';
const SECRET = 'webhook-test-secret-0123456789-0123456789';
const env = await testEnv(t, {
  env: { CARRIER: 'livekit', LIVEKIT_URL: 'http://127.0.0.1:9', LIVEKIT_API_KEY: KEY, LIVEKIT_API_SECRET: SECRET, LIVEKIT_SIP_TRUNK_ID: 'ST_x' },
});
const connection = env.redis.duplicate({ maxRetriesPerRequest: null });
const queue = new Queue(CARRIER_EVENTS_QUEUE, { connection, prefix: env.config.redisPrefix });
t.teardown(async () => { await queue.close(); await connection.quit(); });

const CALL = '0190a4a4-0000-7000-8000-0000000000aa';

async function signed(identity: string, status: string, id: string, event: 'participant_joined' | 'participant_left' = 'participant_joined') {
  const ev = new WebhookEvent({
    id, createdAt: BigInt(1_800_000_000), room: { name: roomNameFor(CALL) },
    participant: new ParticipantInfo({ identity, kind: ParticipantInfo_Kind.SIP, attributes: { 'sip.callStatus': status } }),
  } as never);
  ev.event = event;
  const body = JSON.stringify(ev.toJson());
  const at = new AccessToken(KEY, SECRET);
  at.sha256 = createHash('sha256').update(body).digest('base64');
  return { body, auth: await at.toJwt() };
}

const post = (body: string, auth: string) => env.request('POST', '/v1/carriers/livekit/webhook', {
  rawBody: body, headers: { authorization: auth, 'content-type': 'application/webhook+json' },
});

t.test('a verified webhook about a leg becomes one queued carrier event', async (t) => {
  const { body, auth } = await signed(`${CALL}-destination`, 'active', 'EV_answer');
  const r = await post(body, auth);
  t.equal(r.status, 200);
  t.same(r.body, { received: true, mapped: true });
  t.equal((await post(body, auth)).status, 200, 'LiveKit retrying the same webhook');
  const jobs = await queue.getJobs(['waiting', 'delayed', 'prioritized']);
  t.equal(jobs.length, 1, 'queued once');
  t.match(jobs[0].data, { carrier: 'livekit', callId: CALL, role: 'destination', kind: 'answered', seq: 1 });
  t.equal(jobs[0].id, `ev-${CALL}-destination-1`, 'numbered at receipt: the job id the workers look a predecessor up by');
});

t.test('an unsigned or tampered webhook is refused and queues nothing', async (t) => {
  const { body, auth } = await signed(`${CALL}-connect`, 'active', 'EV_other');
  t.equal((await post(body.replace('connect', 'destination'), auth)).status, 401);
  t.equal((await post(body, '')).status, 401);
  const jobs = await queue.getJobs(['waiting', 'delayed', 'prioritized']);
  t.equal(jobs.length, 1);
});

t.test('webhooks about other participants are acknowledged and ignored', async (t) => {
  const { body, auth } = await signed('browser-user', 'active', 'EV_browser');
  const r = await post(body, auth);
  t.same(r.body, { received: true, mapped: false });
  t.equal((await queue.getJobs(['waiting', 'delayed', 'prioritized'])).length, 1);
});

t.test('a leg answer and end are numbered in receipt order; a retried delivery keeps its number', async (t) => {
  const leg = `${CALL}-connect`;
  const answer = await signed(leg, 'active', 'EV_c_answer');
  t.equal((await post(answer.body, answer.auth)).status, 200);
  const left = await signed(leg, 'hangup', 'EV_c_left', 'participant_left');
  t.equal((await post(left.body, left.auth)).status, 200);
  t.equal((await post(answer.body, answer.auth)).status, 200, 'the answer retried after the end');
  const mine = (await queue.getJobs(['waiting', 'delayed', 'prioritized'])).filter((j) => j.data.legId === leg);
  t.same(mine.map((j) => [j.id, j.data.kind, j.data.seq]).sort(),
    [[`ev-${leg}-1`, 'answered', 1], [`ev-${leg}-2`, 'ended', 2]]);
});

t.test('an event id that is not a plain token (":" is refused in BullMQ job ids) is queued once, not a 500', async (t) => {
  const ev = await signed(`${CALL}-destination`, 'ringing', 'EV:with:colons/and spaces');
  const r = await post(ev.body, ev.auth);
  t.equal(r.status, 200, 'acknowledged');
  t.same(r.body, { received: true, mapped: true });
  t.equal((await post(ev.body, ev.auth)).status, 200, 'a retry too');
  const jobs = (await queue.getJobs(['waiting', 'delayed', 'prioritized'])).filter((j) => j.data.legId === `${CALL}-destination` && j.data.kind === 'ringing');
  t.equal(jobs.length, 1, 'queued once');
  t.notMatch(String(jobs[0].id), /:/);
});
