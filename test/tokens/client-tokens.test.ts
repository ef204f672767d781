// Bounded client tokens: minting (every field's validation, the minting key's ceiling, ownership and activity of
// the caller IDs), use in place of the key within its numbers and scopes, 403 before anything is placed outside
// them, expiry, rotation (the previous secret is still accepted), tampering, and a revoked minting key.
import t, { type Test } from 'tap';
import { revokeAndAnnounce } from '../../shared/accounts/revocation.ts';
import { loadConfig } from '../../shared/config.ts';
import { keyer } from '../../shared/redis.ts';
import { ClientTokenSigner } from '../../shared/tokens/client-token.ts';
import { startGateway } from '../../gateway/start.ts';
import { createLogger } from '../../shared/log.ts';
import { eventually, httpCall } from '../helpers/env.ts';
import { callEnv, callOrg, channelsUsed, type CallOrg } from '../calls/helpers.ts';

const SECRET_A = 'a'.repeat(16) + 'A-secret-for-client-tokens-0001';
const SECRET_B = 'b'.repeat(16) + 'B-secret-for-client-tokens-0002';
const { env } = await callEnv(t, { CLIENT_TOKEN_SECRET: SECRET_A }, { workers: false });
const org = await callOrg(env, {}, { numbers: 2 });
const other = await callOrg(env);

const mint = (body: unknown, key = org.api_key) => env.request('POST', '/v1/client-tokens', { key, body });
const rows = async (o: CallOrg) => (await env.db.one('SELECT count(*)::int AS n FROM calls WHERE organization_id = $1', [o.organization_id])).n as number;

async function minted(t: Test, body: Record<string, unknown>, key = org.api_key): Promise<string> {
  const r = await mint(body, key);
  t.equal(r.status, 201, `minted${r.status === 201 ? '' : ` (${r.text.slice(0, 300)})`}`);
  t.match(r.body.data.token, /^olct_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  return r.body.data.token;
}

t.test('mint: defaults and the answer', async (t) => {
  const r = await mint({ from_numbers: [org.from] });
  t.equal(r.status, 201);
  t.same(Object.keys(r.body.data).sort(), ['expires_in', 'from_numbers', 'scopes', 'to_numbers', 'token']);
  t.match(r.body.data, { expires_in: 900, from_numbers: [org.from], to_numbers: [], scopes: ['voice:webrtc'] });
  const r2 = await mint({ from_numbers: [org.from], to_numbers: ['+14155554567'], ttl_seconds: 60, scopes: ['calls:read', 'voice:webrtc'] });
  t.match(r2.body.data, { expires_in: 60, to_numbers: ['+14155554567'], scopes: ['calls:read', 'voice:webrtc'] });
});

t.test('mint: validation of every field', async (t) => {
  const bad = async (body: unknown, field: string, status = 400, code = 'validation_error') => {
    const r = await mint(body);
    t.equal(r.status, status, `${JSON.stringify(body)} -> ${status}`);
    t.equal(r.body.error?.code, code);
    t.ok(r.body.error?.fields?.[field], `fields.${field} (${JSON.stringify(r.body.error?.fields)})`);
  };
  await bad({}, 'from_numbers');
  await bad({ from_numbers: [] }, 'from_numbers');
  await bad({ from_numbers: 'x' }, 'from_numbers');
  await bad({ from_numbers: ['4155550100'] }, 'from_numbers[0]');
  await bad({ from_numbers: [org.from], to_numbers: ['911'] }, 'to_numbers[0]');
  await bad({ from_numbers: [org.from], to_numbers: 'x' }, 'to_numbers');
  for (const ttl of [59, 3601, 1.5, '900', -1]) await bad({ from_numbers: [org.from], ttl_seconds: ttl }, 'ttl_seconds');
  await bad({ from_numbers: [org.from], scopes: [] }, 'scopes');
  await bad({ from_numbers: [org.from], scopes: ['calls:fly'] }, 'scopes[0]');
  await bad({ from_numbers: [org.from], scopes: ['voice:webrtc', 'tokens:mint'] }, 'scopes[1]');
  await bad({ from_numbers: [org.from], extra: 1 }, 'extra');
  const r = await env.request('POST', '/v1/client-tokens', { key: org.api_key, rawBody: '{"from_numbers":', headers: { 'content-type': 'application/json' } });
  t.equal(r.status, 400);
});

t.test('mint: 403 outside the key\'s scopes, ceiling, ownership or activity; scope_missing without tokens:mint', async (t) => {
  const narrow = await env.createKey({ organizationId: org.organization_id, userId: org.user_id,
    scopes: ['tokens:mint', 'voice:webrtc'], allowedFrom: [org.phone_numbers[0]], allowedTo: ['+14155554567'] });
  const m = (body: unknown) => mint(body, narrow.apiKey);
  let r = await m({ from_numbers: [org.phone_numbers[0]], scopes: ['calls:write'] });
  t.equal(r.status, 403); t.equal(r.body.error.code, 'forbidden'); t.ok(r.body.error.fields['scopes[0]']);
  r = await m({ from_numbers: [org.phone_numbers[1]] });
  t.equal(r.status, 403); t.equal(r.body.error.code, 'forbidden'); t.ok(r.body.error.fields['from_numbers[0]']);
  r = await m({ from_numbers: [org.phone_numbers[0]], to_numbers: ['+14155559999'] });
  t.equal(r.status, 403); t.ok(r.body.error.fields['to_numbers[0]']);
  r = await m({ from_numbers: [org.phone_numbers[0]], to_numbers: ['+14155554567'] });
  t.equal(r.status, 201, 'inside the ceiling');
  // Not a number of the organization (another organization's, or nobody's).
  r = await mint({ from_numbers: [other.from] });
  t.equal(r.status, 403); t.equal(r.body.error.code, 'forbidden'); t.match(r.body.error.fields['from_numbers[0]'], /not a number of your organization/);
  r = await mint({ from_numbers: [org.from, '+14155550177'] });
  t.equal(r.status, 403); t.ok(r.body.error.fields['from_numbers[1]']);
  // Still provisioning (no workers run here, so a purchase stays PROVISIONING).
  const bought = await env.request('POST', '/v1/phone-numbers', { key: org.api_key, body: { area_code: '212' } });
  t.equal(bought.status, 202);
  r = await mint({ from_numbers: [bought.body.data.phone_number] });
  t.equal(r.status, 403); t.match(r.body.error.fields['from_numbers[0]'], /provisioning, not active/);
  const noMint = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['voice:webrtc'] });
  r = await mint({ from_numbers: [org.from] }, noMint.apiKey);
  t.equal(r.status, 403); t.equal(r.body.error.code, 'scope_missing');
});

t.test('use in place of the key: within bounds works, outside is 403 before any row or channel', async (t) => {
  const [from, otherFrom] = org.phone_numbers;
  const token = await minted(t, { from_numbers: [from], to_numbers: ['+14155554567', '+14155559999'],
    scopes: ['calls:write', 'calls:read', 'voice:webrtc'] });
  const me = await env.request('GET', '/v1/account', { key: token });
  t.equal(me.status, 403, 'no account:read'); t.equal(me.body.error.code, 'scope_missing');
  t.match(me.headers['www-authenticate'], /insufficient_scope/);

  const ok = await env.request('POST', '/v1/calls/dial', { key: token, body: { from_number: from, to_number: '+14155554567', connect_number: '+14155559999' } });
  t.equal(ok.status, 202, ok.text);
  const row = await env.db.one('SELECT organization_id, user_id, from_number, to_number FROM calls WHERE id = $1', [ok.body.data.call_id]);
  t.same(row, { organization_id: org.organization_id, user_id: org.user_id, from_number: from, to_number: '+14155554567' }, 'recorded with organization and issuing user');
  const read = await env.request('GET', `/v1/calls/${ok.body.data.call_id}`, { key: token });
  t.equal(read.status, 200);

  const n = await rows(org);
  const used = await channelsUsed(env, org.organization_id);
  const outside: [string, Record<string, unknown>, string][] = [
    ['/v1/calls/dial', { from_number: otherFrom, to_number: '+14155554567', connect_number: '+14155559999' }, 'from_number'],
    ['/v1/calls/dial', { from_number: from, to_number: '+14155551234', connect_number: '+14155559999' }, 'to_number'],
    ['/v1/calls/dial', { from_number: from, to_number: '+14155554567', connect_number: '+14155551234' }, 'connect_number'],
    ['/v1/calls', { from_number: from, to_number: '+14155551234', agent: { greeting: 'Hi' } }, 'to_number'],
    ['/v1/calls', { from_number: otherFrom, to_number: '+14155554567', agent: { greeting: 'Hi' } }, 'from_number'],
    ['/v1/webrtc-token', { from_number: from, to_number: '+14155551234' }, 'to_number'],
    ['/v1/webrtc-token', { from_number: otherFrom, to_number: '+14155554567' }, 'from_number'],
    ['/v1/room-token', { from_number: from, to_number: '+14155551234' }, 'to_number'],
  ];
  for (const [path, body, field] of outside) {
    const r = await env.request('POST', path, { key: token, body });
    t.equal(r.status, 403, `${path} ${field} outside`);
    t.equal(r.body.error?.code, 'forbidden');
    t.ok(r.body.error?.fields?.[field], `fields.${field}`);
  }
  t.equal(await rows(org), n, 'no call row');
  t.equal(await channelsUsed(env, org.organization_id), used, 'no channel taken');
});

t.test('a voice:webrtc token: tickets only; no hangup, no minting', async (t) => {
  const token = await minted(t, { from_numbers: [org.from] });
  const ticket = await env.request('POST', '/v1/webrtc-token', { key: token, body: { from_number: org.from, to_number: '+14155554567' } });
  t.equal(ticket.status, 201, ticket.text);
  const hang = await env.request('POST', `/v1/calls/${ticket.body.data.call_id}/hangup?mode=cancel_setup`, { key: token });
  t.equal(hang.status, 403); t.equal(hang.body.error.code, 'scope_missing'); t.equal(hang.body.error.fields.scope, 'requires calls:write');
  const again = await mint({ from_numbers: [org.from] }, token);
  t.equal(again.status, 403); t.equal(again.body.error.code, 'scope_missing', 'a client token cannot mint');
  const list = await env.request('GET', '/v1/calls', { key: token });
  t.equal(list.status, 403);
});

t.test('expiry, tampering, foreign secrets and a revoked minting key are 401', async (t) => {
  const signer = new ClientTokenSigner(SECRET_A);
  const claims = { o: org.organization_id, u: org.user_id, k: org.api_key_id, f: [org.from], t: [], s: ['calls:read' as const] };
  const now = Math.floor(Date.now() / 1000);
  const live = signer.sign({ ...claims, e: now + 600 });
  t.equal((await env.request('GET', '/v1/calls', { key: live })).status, 200, 'a token signed with the secret works');

  const expired = signer.sign({ ...claims, e: now - 1 });
  const r = await env.request('GET', '/v1/calls', { key: expired });
  t.equal(r.status, 401); t.equal(r.body.error.code, 'unauthorized'); t.match(r.headers['www-authenticate'], /invalid_token/);

  // Expires on its own, even while cached as valid.
  const short = signer.sign({ ...claims, e: now + 2 });
  t.equal((await env.request('GET', '/v1/calls', { key: short })).status, 200);
  await eventually(async () => (await env.request('GET', '/v1/calls', { key: short })).status === 401, 15_000, 200);

  const [payload, sig] = live.slice(5).split('.');
  const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString());
  const widened = Buffer.from(JSON.stringify({ ...decoded, s: ['calls:read', 'calls:write'] })).toString('base64url');
  for (const bad of [`olct_${widened}.${sig}`, `olct_${payload}.${sig.slice(0, -2)}AA`, `olct_${payload}`, `olct_.${sig}`, 'olct_x.y',
    new ClientTokenSigner(SECRET_B).sign({ ...claims, e: now + 600 })]) {
    const x = await env.request('GET', '/v1/calls', { key: bad });
    t.equal(x.status, 401, `tampered: ${bad.slice(0, 30)}…`);
  }

  // A token of a key that is revoked stops working (even one already cached: the revocation is broadcast).
  const k = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['tokens:mint', 'calls:read'] });
  const tok = await minted(t, { from_numbers: [org.from], scopes: ['calls:read'] }, k.apiKey);
  t.equal((await env.request('GET', '/v1/calls', { key: tok })).status, 200);
  await revokeAndAnnounce(env.db, env.redis, keyer(env.config.redisPrefix), k.apiKeyId);
  await eventually(async () => (await env.request('GET', '/v1/calls', { key: tok })).status === 401);
});

t.test('rotation: a gateway with a new secret still accepts tokens of the previous one', async (t) => {
  const token = await minted(t, { from_numbers: [org.from], scopes: ['calls:read'] });
  const start = async (extra: Record<string, string>) => {
    // A distinct URL per gateway: pg-promise warns about two handles of one URL.
    const url = `${env.env.DATABASE_URL}?application_name=gw${Object.keys(extra).length}`;
    const g = await startGateway(loadConfig({ ...process.env, ...env.env, DATABASE_URL: url, ...extra }), createLogger('gateway', 'warn'));
    t.teardown(() => g.stop());
    return g;
  };
  const rotated = await start({ CLIENT_TOKEN_SECRET: SECRET_B, CLIENT_TOKEN_PREVIOUS_SECRET: SECRET_A });
  t.equal((await httpCall(rotated.url, 'GET', '/v1/calls', { key: token })).status, 200, 'previous secret accepted');
  const fresh = await httpCall(rotated.url, 'POST', '/v1/client-tokens', { key: org.api_key, body: { from_numbers: [org.from], scopes: ['calls:read'] } });
  t.equal(fresh.status, 201);
  t.equal((await httpCall(rotated.url, 'GET', '/v1/calls', { key: fresh.body.data.token })).status, 200, 'new tokens work');
  t.equal((await env.request('GET', '/v1/calls', { key: fresh.body.data.token })).status, 401, 'a gateway without the new secret refuses them');
  const dropped = await start({ CLIENT_TOKEN_SECRET: SECRET_B });
  t.equal((await httpCall(dropped.url, 'GET', '/v1/calls', { key: token })).status, 401, 'once the previous secret is dropped, its tokens stop');
});

t.test('Idempotency-Keys are scoped to the credential: a token never replays its key\'s response, nor another token\'s', async (t) => {
  const body = { from_number: org.from, to_number: '+14155554567' };
  const headers = { 'idempotency-key': 'shared-key-between-credentials' };
  const viaKey = await env.request('POST', '/v1/webrtc-token', { key: org.api_key, body, headers });
  t.equal(viaKey.status, 201);
  const tokenA = await minted(t, { from_numbers: [org.from] });
  const tokenB = await minted(t, { from_numbers: [org.from], ttl_seconds: 120 });
  const a1 = await env.request('POST', '/v1/webrtc-token', { key: tokenA, body, headers });
  t.equal(a1.status, 201);
  t.notOk(a1.headers['idempotency-replay'], 'the token ran its own request');
  t.not(a1.body.data.call_id, viaKey.body.data.call_id, 'a call of its own, not the key\'s');
  const a2 = await env.request('POST', '/v1/webrtc-token', { key: tokenA, body, headers });
  t.equal(a2.headers['idempotency-replay'], 'true', 'the same token replays its own response');
  t.equal(a2.body.data.call_id, a1.body.data.call_id);
  const b1 = await env.request('POST', '/v1/webrtc-token', { key: tokenB, body, headers });
  t.equal(b1.status, 201);
  t.not(b1.body.data.call_id, a1.body.data.call_id, 'another token of the same key runs its own request');
});
