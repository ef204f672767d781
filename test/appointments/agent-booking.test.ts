// The sandbox voice agent books during a call: an AI call to a number ending 0009 books the organization's next free
// slot, linked to the call, its transcript says so, and new_appointment is delivered once to a webhook receiver
// (through the outbox and the real workers). Without availability the agent apologizes and books nothing; a call to
// another number books nothing.
import t from 'tap';
import { spokenTime } from '../../shared/appointments/zoned.ts';
import { eventually } from '../helpers/env.ts';
import { aiCall, callEnv, callOrg, settled } from '../calls/helpers.ts';
import { startReceiver } from '../helpers/receiver.ts';

const { env } = await callEnv(t);
const rx = await startReceiver(t);
const ALWAYS = { start: '00:00', end: '24:00' };
const EVERY_DAY = { mon: [ALWAYS], tue: [ALWAYS], wed: [ALWAYS], thu: [ALWAYS], fri: [ALWAYS], sat: [ALWAYS], sun: [ALWAYS] };

async function org(withAvailability: boolean) {
  const o = await callOrg(env);
  if (withAvailability) {
    const a = await env.request('PUT', '/v1/appointments/availability', { key: o.api_key,
      body: { time_zone: 'Europe/Berlin', weekly_hours: EVERY_DAY, slot_minutes: 30, buffer_minutes: 15, max_days_ahead: 7 } });
    if (a.status !== 200) throw new Error(`availability: ${a.status} ${a.text}`);
  }
  const sub = await env.request('POST', '/api/v1/webhook_subscriptions', { key: o.api_key,
    body: { webhook_url: rx.url(`/${o.organization_id}`), event_type: 'new_appointment' } });
  if (sub.status !== 201) throw new Error(`subscribe: ${sub.status} ${sub.text}`);
  return { ...o, secret: sub.body.data.secret as string };
}

t.test('a call to the booking number books the next free slot, says so, and new_appointment arrives once', async (t) => {
  const o = await org(true);
  const expected = (await env.request('GET', '/v1/appointments/availability', { key: o.api_key })).body.data.slots;
  const call = await aiCall(env, o, '+14155550009', { agent: { name: 'Ava', greeting: 'Hi, this is Ava from Acme Dental.' } });
  t.equal(call.status, 202, call.text);
  const id = call.body.data.call_id;
  const ended = await settled(env, o, id);
  t.equal(ended.status, 'COMPLETED');

  const list = await env.request('GET', `/v1/appointments?call_id=${id}`, { key: o.api_key });
  t.equal(list.body.data.length, 1, 'one booking linked to the call');
  const a = list.body.data[0];
  t.match(a, { status: 'booked', source: 'agent', call_id: id, phone_number: '+14155550009', time_zone: 'Europe/Berlin' });
  // The next free slot: the first one the availability offered before the call (or the one after it, if the clock
  // passed that slot's start meanwhile).
  t.ok([expected[0].start_at, expected[1].start_at].includes(a.start_at), `the next free slot (${a.start_at})`);
  t.equal(Date.parse(a.end_at) - Date.parse(a.start_at), 30 * 60_000);

  const tr = await env.request('GET', `/v1/calls/${id}/transcript`, { key: o.api_key });
  t.equal(tr.status, 200);
  const spoken = spokenTime('Europe/Berlin', Date.parse(a.start_at));
  const texts = tr.body.data.turns.map((x: any) => `${x.speaker}: ${x.text}`);
  t.ok(texts.some((x: string) => x.startsWith('callee:') && /book an appointment/.test(x)), 'the callee asks');
  t.ok(texts.includes(`agent: Of course. The next time I have open is ${spoken}. Shall I book it for you?`), texts.join('\n'));
  t.ok(texts.includes(`agent: You are booked for ${spoken}. We will see you then. Goodbye!`), 'the agent confirms the booking');
  t.match(tr.body.data.analysis.summary, new RegExp(`Ava booked an appointment for .*${a.id}`));

  const got = await eventually(async () => {
    const u = rx.unique(`/${o.organization_id}`);
    return u.length ? u : null;
  });
  const body = rx.verify(got[0], o.secret);
  t.equal(body.event_type, 'new_appointment');
  t.match(body.data, { ...a, organization_id: o.organization_id }, 'the payload is the appointment with call_id');
  // Once: nothing more arrives (the receiver saw every delivery the relay made for this organization).
  await env.request('GET', '/v1/appointments', { key: o.api_key });
  const events = await env.db.any(`SELECT id FROM events WHERE event_type = 'new_appointment' AND organization_id = $1`, [o.organization_id]);
  t.equal(events.length, 1, 'one new_appointment in the outbox');
  await eventually(async () => (await env.db.one(`SELECT count(*)::int AS n FROM events WHERE id = $1 AND relayed_at IS NOT NULL`, [events[0].id])).n === 1);
  t.equal(rx.unique(`/${o.organization_id}`).length, 1, 'delivered once');

  // A second booking call takes the next slot after this one and its buffer.
  const second = (await aiCall(env, o, '+14155550009')).body.data.call_id;
  await settled(env, o, second);
  const b = (await env.request('GET', `/v1/appointments?call_id=${second}`, { key: o.api_key })).body.data[0];
  t.ok(Date.parse(b.start_at) >= Date.parse(a.end_at) + 15 * 60_000, `after the first one and its buffer (${a.start_at} → ${b.start_at})`);
  await eventually(async () => rx.unique(`/${o.organization_id}`).length === 2);
});

t.test('no availability: the agent apologizes and books nothing; other numbers never book', async (t) => {
  const o = await org(false);
  const id = (await aiCall(env, o, '+14155550009')).body.data.call_id;
  await settled(env, o, id);
  const tr = (await env.request('GET', `/v1/calls/${id}/transcript`, { key: o.api_key })).body.data;
  t.ok(tr.turns.some((x: any) => x.speaker === 'agent' && /no open times/.test(x.text)), 'the agent says it has no open time');
  t.match(tr.analysis.summary, /no open time/);

  const withHours = await org(true);
  const plain = (await aiCall(env, withHours, '+14155554567')).body.data.call_id;
  await settled(env, withHours, plain);
  t.same((await env.request('GET', '/v1/appointments', { key: withHours.api_key })).body.data, [], 'an ordinary call books nothing');
  t.equal((await env.db.one(`SELECT count(*)::int AS n FROM appointments WHERE organization_id IN ($1, $2)`,
    [o.organization_id, withHours.organization_id])).n, 0);
  t.equal((await env.db.one(`SELECT count(*)::int AS n FROM events WHERE event_type = 'new_appointment' AND organization_id IN ($1, $2)`,
    [o.organization_id, withHours.organization_id])).n, 0, 'no event');
});
