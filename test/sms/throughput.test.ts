// The per-number throughput limit holds across two workers processes: one number's messages are handed over at
// most SMS_NUMBER_RATE_PER_SECOND per second, and another number is not held up by it.
import t from 'tap';
import { send, smsEnv, textingOrg, waitMessage } from './helpers.ts';

const { env } = await smsEnv(t, { SMS_NUMBER_RATE_PER_SECOND: '5' });
const second = env.spawn('workers');
await second.ready();
const org = await textingOrg(env, { org: 'Paced Co', numbers: 2 });

t.test('8 messages of one number span at least 7 intervals of 200 ms', async (t) => {
  const rs = await Promise.all(Array.from({ length: 8 }, (_, i) => send(env, org, `+1212555020${i}`, `Message ${i}. Reply STOP to opt out.`)));
  t.ok(rs.every((r) => r.status === 202));
  const other = await send(env, { ...org, from: org.phone_numbers[1] }, '+12125550210');
  const done = await Promise.all(rs.map((r) => waitMessage(env, org, r.body.data.id, ['delivered'])));
  const sent = done.map((m) => Date.parse(m.sent_at)).sort((a, b) => a - b);
  // sent_at is stamped a little after the hand-over, so each gap may be off by that jitter; the span may not.
  t.ok(sent[7] - sent[0] >= 7 * 200 - 100, `span ${sent[7] - sent[0]} ms`);
  const o = await waitMessage(env, org, other.body.data.id, ['delivered']);
  t.ok(Date.parse(o.sent_at) < sent[7], 'the other number was not queued behind the first');
  const handledBy = await env.db.any('SELECT DISTINCT provider FROM sms_messages');
  t.same(handledBy.map((r) => r.provider), ['sandbox']);
});
