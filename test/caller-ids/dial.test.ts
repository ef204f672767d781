// A verified caller ID as from_number: on POST /v1/calls/dial, POST /v1/calls, client tokens (and calls placed
// with them) and POST /v1/webrtc-token. A caller ID pending verification answers 422 call_id_not_verified and
// places nothing (no call row, no channel); an unknown number answers as before; a removed one is unknown again.
import t from 'tap';
import { callEnv, callOrg, channelsUsed, settled, type CallOrg } from '../calls/helpers.ts';
import { addCallerId, verifiedCallerId } from './helpers.ts';

const { env } = await callEnv(t);
const org = await callOrg(env);
const VERIFIED = '+12015550140';
const PENDING = '+12015550141';
const verified = await verifiedCallerId(env, org.api_key, VERIFIED);
const pending = await addCallerId(env, org.api_key, PENDING);

const rows = async (o: CallOrg) => (await env.db.one('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1', [o.organization_id])).n as number;
const bridge = (from: string, key = org.api_key) => env.request('POST', '/v1/calls/dial',
  { key, body: { from_number: from, to_number: '+14155554567', connect_number: '+14155550199' } });
const ai = (from: string, key = org.api_key) => env.request('POST', '/v1/calls',
  { key, body: { from_number: from, to_number: '+14155554568', agent: { name: 'Ava', greeting: 'Hi, this is Ava.' } } });
const webrtc = (from: string, key = org.api_key) => env.request('POST', '/v1/webrtc-token', { key, body: { from_number: from, to_number: '+14155554569' } });
const mint = (from_numbers: string[], scopes = ['voice:webrtc', 'calls:write']) =>
  env.request('POST', '/v1/client-tokens', { key: org.api_key, body: { from_numbers, scopes } });

t.test('a verified caller ID places bridge and AI calls that run to the end', async (t) => {
  for (const place of [bridge, ai]) {
    const r = await place(VERIFIED);
    t.equal(r.status, 202, r.text);
    const id = r.body.data.call_id ?? r.body.data.id;
    const row = await env.db.one('SELECT from_number, phone_number_id FROM calls WHERE id = $1', [id]);
    t.same(row, { from_number: VERIFIED, phone_number_id: null }, 'recorded with the caller ID, no held number');
    const c = await settled(env, org, id, 90_000);
    t.equal(c.status, 'COMPLETED', `${c.type} call completed`);
    t.equal(c.from_number, VERIFIED);
  }
});

t.test('a pending caller ID: 422 call_id_not_verified on every path, nothing placed', async (t) => {
  // A fresh organization, so no earlier call can hold a channel.
  const fresh = await callOrg(env);
  await addCallerId(env, fresh.api_key, PENDING);
  for (const [name, place, field] of [['dial', bridge, 'from_number'], ['calls', ai, 'from_number'], ['webrtc-token', webrtc, 'from_number']] as const) {
    const r = await place(PENDING, fresh.api_key);
    t.equal(r.status, 422, `${name}: ${r.text}`);
    t.equal(r.body.error.code, 'call_id_not_verified');
    t.equal(r.body.error.category, 'invalid_request');
    t.match(r.body.error.fields[field], /pending verification/);
    t.match(r.body.error.resolution_hint, /\/v1\/caller-ids\/\{id\}\/verify/);
  }
  const m = await mint([org.from, PENDING]);
  t.equal(m.status, 422, 'a client token cannot carry a pending caller ID');
  t.equal(m.body.error.code, 'call_id_not_verified');
  t.same(Object.keys(m.body.error.fields), ['from_numbers[1]']);
  t.equal(await rows(fresh), 0, 'no call row');
  t.equal(await channelsUsed(env, fresh.organization_id), 0, 'no channel held');
  t.same(await env.redis.hgetall(`${env.config.redisPrefix}:chan:${fresh.organization_id}:holds`), {}, 'no channel hold');
});

t.test('an unknown number answers as before', async (t) => {
  const before = await rows(org);
  const r = await bridge('+12015550142');
  t.equal(r.status, 422);
  t.equal(r.body.error.code, 'call_id_not_verified');
  t.match(r.body.error.fields.from_number, /not an active number owned by your organization/);
  const m = await mint(['+12015550142']);
  t.equal(m.status, 403);
  t.equal(m.body.error.code, 'forbidden');
  t.match(m.body.error.fields['from_numbers[0]'], /not a number of your organization/);
  t.equal(await rows(org), before);
});

t.test('another organization\'s verified caller ID is not ours', async (t) => {
  const other = await callOrg(env);
  const r = await bridge(VERIFIED, other.api_key);
  t.equal(r.status, 422);
  t.match(r.body.error.fields.from_number, /not an active number owned by your organization/);
  t.equal(await rows(other), 0);
});

t.test('client tokens with a verified caller ID: minted, then dial and webrtc-token with it', async (t) => {
  const m = await mint([org.from, VERIFIED]);
  t.equal(m.status, 201, m.text);
  t.same(m.body.data.from_numbers, [org.from, VERIFIED]);
  const token = m.body.data.token;
  const d = await bridge(VERIFIED, token);
  t.equal(d.status, 202, d.text);
  const w = await webrtc(VERIFIED, token);
  t.equal(w.status, 201, w.text);
  const row = await env.db.one('SELECT type, from_number, status FROM calls WHERE id = $1', [w.body.data.call_id]);
  t.same(row, { type: 'webrtc', from_number: VERIFIED, status: 'QUEUED' });
  const room = await env.request('POST', '/v1/room-token', { key: token, body: { from_number: VERIFIED, to_number: '+14155554570' } });
  t.equal(room.status, 201, room.text);
  t.equal((await env.db.one('SELECT from_number FROM calls WHERE id = $1', [room.body.data.call_id])).from_number, VERIFIED);
  const pendingRoom = await env.request('POST', '/v1/room-token', { key: org.api_key, body: { from_number: PENDING, to_number: '+14155554570' } });
  t.equal(pendingRoom.status, 422);
  t.equal(pendingRoom.body.error.code, 'call_id_not_verified');
  await settled(env, org, d.body.data.call_id ?? d.body.data.id, 90_000);
});

t.test('a key ceiling still bounds verified caller IDs', async (t) => {
  const bounded = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['calls:write'], allowedFrom: [org.from] });
  const r = await bridge(VERIFIED, bounded.apiKey);
  t.equal(r.status, 403);
  t.equal(r.body.error.code, 'forbidden');
});

t.test('a removed caller ID can no longer be used', async (t) => {
  t.equal((await env.request('DELETE', `/v1/caller-ids/${verified.id}`, { key: org.api_key })).status, 204);
  const before = await rows(org);
  const r = await bridge(VERIFIED);
  t.equal(r.status, 422);
  t.match(r.body.error.fields.from_number, /not an active number owned by your organization/);
  t.equal((await mint([VERIFIED])).status, 403);
  t.equal(await rows(org), before);
  await env.request('DELETE', `/v1/caller-ids/${pending.id}`, { key: org.api_key });
});
