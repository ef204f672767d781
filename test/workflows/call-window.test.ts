// A workflow's call step outside the contact's calling window waits for the window to open, never fails: the contact
// is `waiting` with wait_reason call_window and wakes at the window's next opening (what the dial path names as
// next_allowed_at), while a contact inside the window is called at once. With the real workers process.
import t from 'tap';
import { DEFAULT_ALL_SCOPES } from '../../shared/scopes.ts';
import { eventually } from '../helpers/env.ts';
import { smsEnv } from '../sms/helpers.ts';
import { workflowOrg } from './helpers.ts';

const { env } = await smsEnv(t);
const org = await workflowOrg(env);
const key = org.api_key;
const admin = (await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: [...DEFAULT_ALL_SCOPES, 'compliance:write'] })).apiKey;

const hourIso = (d: Date, h: number, dayOffset = 0) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + dayOffset, h)).toISOString();
const hh = (n: number) => `${String(n).padStart(2, '0')}:00`;

t.test('a call step outside the calling window waits until it opens; inside it the call is placed', async (t) => {
  const now = new Date();
  const h = now.getUTCHours();
  // A one-hour window two hours ahead (late in the UTC day: three hours back, so it opens tomorrow), in UTC.
  const [start, opens] = h + 3 <= 23 ? [h + 2, hourIso(now, h + 2)] : [h - 3, hourIso(now, h - 3, 1)];
  const p = await env.request('PATCH', '/v1/compliance/policy', { key: admin, body: { call_window: { enabled: true, start: hh(start), end: hh(start + 1) } } });
  t.equal(p.status, 200, p.text);
  // The contact's own zone decides; one in a zone whose local time is inside the window is called at once.
  const insideZone = `Etc/GMT${(start - h) >= 0 ? '-' : '+'}${Math.abs(start - h)}`; // POSIX sign: Etc/GMT-2 is UTC+2
  const closed = await env.request('POST', '/v1/contacts', { key, body: { phone_number: '+12125554567', name: 'Ada Lovelace', timezone: 'UTC' } });
  const open = await env.request('POST', '/v1/contacts', { key, body: { phone_number: '+12125554568', name: 'Bob Stone', timezone: insideZone } });
  t.equal(closed.status, 201, closed.text);
  t.equal(open.status, 201, open.text);

  const c = await env.request('POST', '/v1/tasks', { key, body: {
    name: 'Window', from_number: org.from, contact_ids: [closed.body.data.id, open.body.data.id],
    steps: [{ type: 'call', connect_number: '+14155550199' }], start: true,
  } });
  t.equal(c.status, 201, c.text);
  const task = c.body.data;

  const contacts = async () => (await env.request('GET', `/v1/tasks/${task.id}/contacts`, { key })).body.data as any[];
  const waiting = await eventually(async () => {
    const list = await contacts();
    const a = list.find((x) => x.contact_id === closed.body.data.id);
    const b = list.find((x) => x.contact_id === open.body.data.id);
    return a?.state === 'waiting' && b?.state === 'completed' ? { a, b } : null;
  }, 60_000, 200);
  t.equal(waiting.a.wait_reason, 'call_window', 'the closed contact waits for its window');
  t.equal(waiting.a.wake_at, opens, `and wakes when the window opens (${opens})`);
  t.equal(waiting.a.outcome ?? null, null, 'it has not failed');
  t.match(waiting.b.history.map((x: any) => x.type), ['call'], 'the contact inside its window was called');

  const read = (await env.request('GET', `/v1/tasks/${task.id}`, { key })).body.data;
  t.equal(read.status, 'running', 'the task runs on while a contact waits for its window');
  // Cancelling ends the waiting contact.
  t.equal((await env.request('PATCH', `/v1/tasks/${task.id}`, { key, body: { status: 'cancelled' } })).status, 200);
  const done = await eventually(async () => {
    const list = await contacts();
    return list.every((x) => x.state === 'completed' || x.state === 'cancelled') ? list : null;
  }, 30_000, 200);
  t.equal(done.find((x: any) => x.contact_id === closed.body.data.id).state, 'cancelled');
});
