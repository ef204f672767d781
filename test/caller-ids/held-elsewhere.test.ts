// A number another organization holds on the platform is never this organization's caller ID: the verification call
// to it would land in the verifying organization's own sandbox inbox, never at the holder. Refused (409
// caller_id_held_elsewhere, without naming the holder) when added, when a verification call is asked for, and when
// a call is placed from it, since the holder can buy the number after the caller ID was verified; a call queued
// before that purchase is ended undialed at origination. The organization's own numbers are unaffected, and the
// caller ID works again once the holder releases the number.
import t from 'tap';
import { eventually } from '../helpers/env.ts';
import { callEnv, callOrg, channelsUsed, dial, settled, type CallOrg } from '../calls/helpers.ts';
import { addCallerId, verifiedCallerId } from './helpers.ts';

const { env } = await callEnv(t, {}, { workers: false });
const a = await callOrg(env, {}, { org: 'Caller Co' });
const b = await callOrg(env, {}, { org: 'Holder Co' });
const free = (await env.request('GET', '/v1/phone-numbers/available?area_code=212&limit=4', { key: a.api_key })).body.data
  .map((n: { phone_number: string }) => n.phone_number).filter((n: string) => !n.endsWith('5551212')) as string[]; // 555-1212 is not dialable
const [X, Y, P] = free; // X: verified by A, then bought by B; Y: pending at A, then bought by B; P: bought by B first

const add = (key: string, phone_number: string) => env.request('POST', '/v1/caller-ids', { key, body: { phone_number } });
const buy = async (org: CallOrg, phone_number: string) => {
  const r = await env.request('POST', '/v1/phone-numbers', { key: org.api_key, body: { phone_number } });
  if (r.status !== 202) throw new Error(`buy ${phone_number}: ${r.status} ${r.text}`);
  return r.body.data.id as number;
};
const callRows = async (o: CallOrg) => (await env.db.one('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1', [o.organization_id])).n as number;
const inbox = async (o: CallOrg) => (await env.db.one('SELECT count(*)::int AS n FROM sandbox_inbox WHERE organization_id = $1', [o.organization_id])).n as number;

function heldElsewhere(t: Pick<typeof import('tap').default, 'equal' | 'match' | 'notOk'>, r: { status: number; text: string; body: any }, field: string, label: string) {
  t.equal(r.status, 409, `${label}: ${r.text}`);
  t.match(r.body.error, { code: 'caller_id_held_elsewhere', category: 'invalid_request', message: /held on this platform by another account/,
    fields: { [field]: 'is held on this platform by another account' } }, label);
  for (const secret of [b.organization_id, 'Holder Co']) t.notOk(r.text.includes(secret), `${label}: the holder is not named`);
}

t.test('a number another organization holds cannot be added as a caller ID', async (t) => {
  heldElsewhere(t, await add(a.api_key, b.from), 'phone_number', 'an ACTIVE number of B');
  await buy(b, P);
  heldElsewhere(t, await add(a.api_key, P), 'phone_number', 'a number B is still provisioning');
  const c = await callOrg(env);
  heldElsewhere(t, await add(c.api_key, b.from), 'phone_number', 'any other organization');
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM caller_ids WHERE organization_id = $1', [a.organization_id])).n, 0, 'no caller ID written');
  t.equal(await inbox(a), 0, 'no verification call');

  const own = await add(b.api_key, b.from);
  t.equal(own.status, 409);
  t.equal(own.body.error.code, 'caller_id_exists', 'the holder\'s own number answers as before');
  const ro = await env.createKey({ organizationId: a.organization_id, userId: null, scopes: ['voice:read'] });
  const scoped = await add(ro.apiKey, b.from);
  t.equal(scoped.status, 403, 'the scope is checked before anything is looked up');
  t.equal(scoped.body.error.code, 'scope_missing');
  t.equal((await add(a.api_key, X)).status, 201, 'a number nobody holds is added');
  t.equal((await env.db.one('DELETE FROM caller_ids WHERE organization_id = $1 AND phone_number = $2 RETURNING 1 AS n', [a.organization_id, X])).n, 1);
});

let queuedFromX = '';
let queuedFromOwn = '';
let xId = 0;

t.test('a caller ID whose number another organization bought after the verification is refused on every call path', async (t) => {
  const verified = await verifiedCallerId(env, a.api_key, X);
  const pending = await addCallerId(env, a.api_key, Y);
  // Queued while A may still use X (the workers are down): origination decides about it below.
  const q = await dial(env, { ...a, from: X }, '+14155553101');
  t.equal(q.status, 202, q.text);
  queuedFromX = q.body.data.call_id;

  xId = await buy(b, X);
  await buy(b, Y);
  const rows = await callRows(a);
  const channels = await channelsUsed(env, a.organization_id);
  const body = (from: string, extra: Record<string, unknown> = {}) => ({ from_number: from, to_number: '+14155553102', ...extra });
  for (const [label, path, extra] of [
    ['dial', '/v1/calls/dial', { connect_number: '+14155550199' }],
    ['AI call', '/v1/calls', { agent: { name: 'Ava', greeting: 'Hi.' } }],
    ['webrtc-token', '/v1/webrtc-token', {}],
    ['room-token', '/v1/room-token', {}],
  ] as const) {
    heldElsewhere(t, await env.request('POST', path, { key: a.api_key, body: body(X, extra) }), 'from_number', `${label} from the verified caller ID`);
  }
  heldElsewhere(t, await env.request('POST', '/v1/calls/dial', { key: a.api_key, body: body(Y, { connect_number: '+14155550199' }) }),
    'from_number', 'dial from the pending caller ID (held comes before pending)');
  const mint = await env.request('POST', '/v1/client-tokens', { key: a.api_key, body: { from_numbers: [a.from, X], scopes: ['voice:webrtc', 'calls:write'] } });
  heldElsewhere(t, mint, 'from_numbers[1]', 'a client token carrying it');
  t.equal(await callRows(a), rows, 'no call row');
  t.equal(await channelsUsed(env, a.organization_id), channels, 'no channel held');

  const v = await env.request('POST', `/v1/caller-ids/${pending.id}/verify`, { key: a.api_key });
  heldElsewhere(t, v, 'phone_number', 'a verification call to it');
  t.equal(await inbox(a), 1, 'only X\'s verification call was ever placed');
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM caller_id_verification_calls WHERE caller_id_id = $1', [pending.id])).n, 0);

  const list = await env.request('GET', '/v1/caller-ids', { key: a.api_key });
  t.same(list.body.data.map((c: { id: string; status: string }) => [c.id, c.status]).sort(),
    [[verified.id, 'verified'], [pending.id, 'pending']].sort(), 'the caller IDs stay as they were');
  const own = await dial(env, a, '+14155553103');
  t.equal(own.status, 202, `A's own number is unaffected: ${own.text}`);
  queuedFromOwn = own.body.data.call_id;
});

t.test('a call queued before the purchase ends undialed at origination; the holder calls from its number', async (t) => {
  const workers = env.spawn('workers');
  await workers.ready();
  const c = await settled(env, a, queuedFromX, 90_000);
  t.match(c, { status: 'CANCELED', call_outcome: 'connection_unconfirmed', disconnection_reason: 'caller_id_released', cost_cents: 0 });
  t.ok(c.legs.every((l: { status: string; originated_at: string | null }) => l.status === 'PENDING' && l.originated_at === null), 'no leg originated');
  t.equal((await settled(env, a, queuedFromOwn, 90_000)).status, 'COMPLETED', 'A\'s own number\'s call went out');

  await eventually(async () => (await env.db.one('SELECT status FROM phone_numbers WHERE id = $1', [xId])).status === 'ACTIVE', 60_000, 100);
  const mine = await dial(env, { ...b, from: X }, '+14155553104');
  t.equal(mine.status, 202, `B calls from the number it bought: ${mine.text}`);
  t.equal((await settled(env, b, mine.body.data.call_id, 90_000)).status, 'COMPLETED');
});

t.test('once the holder releases the number, the verified caller ID is usable again', async (t) => {
  const r = await env.request('DELETE', `/v1/phone-numbers/${xId}`, { key: b.api_key });
  t.ok(r.status === 200 || r.status === 204, `released: ${r.status} ${r.text}`);
  const again = await dial(env, { ...a, from: X }, '+14155553105');
  t.equal(again.status, 202, again.text);
  t.equal((await settled(env, a, again.body.data.call_id, 90_000)).status, 'COMPLETED');
});
