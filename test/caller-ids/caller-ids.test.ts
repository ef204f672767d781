// Caller IDs: add (validation, own numbers, duplicates, the cap, re-adding a removed one), the verification call
// and its code read back from the sandbox inbox, a wrong code, the lockout, expiry, the hourly bound on calls,
// removal; the code never stored in clear; tenant isolation and scopes on every route.
import t from 'tap';
import { CALLER_ID_LIMIT, MAX_CALLS_PER_HOUR, MAX_CODE_ATTEMPTS } from '../../shared/caller-ids/caller-ids.ts';
import { testEnv } from '../helpers/env.ts';
import { addCallerId, spokenCode } from './helpers.ts';

const env = await testEnv(t);
const org = await env.bootstrap({ org: 'Caller Co' });
const other = await env.bootstrap({ org: 'Other Co' });
const key = org.api_key;

const wrong = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');
const confirm = (id: string, code: string, k = key) => env.request('POST', `/v1/caller-ids/${id}/confirm`, { key: k, body: { code } });
const verify = (id: string, k = key) => env.request('POST', `/v1/caller-ids/${id}/verify`, { key: k });

t.test('add, verify with the spoken code, read, list, remove, add again', async (t) => {
  const r = await env.request('POST', '/v1/caller-ids', { key, body: { phone_number: '+12015550123', name: 'Dr. Lee mobile' } });
  t.equal(r.status, 201, r.text);
  const c = r.body.data;
  t.match(c, { phone_number: '+12015550123', name: 'Dr. Lee mobile', status: 'pending', verified_at: null,
    verification: { state: 'not_started', expires_at: null, attempts_remaining: null } });
  t.match(c.id, /^[0-9a-f-]{36}$/);

  const none = await confirm(c.id, '123456');
  t.equal(none.status, 409);
  t.equal(none.body.error.code, 'verification_not_started');

  const v = await verify(c.id);
  t.equal(v.status, 202, v.text);
  t.match(v.body.data.verification, { state: 'code_sent', attempts_remaining: MAX_CODE_ATTEMPTS });
  const expiresIn = Date.parse(v.body.data.verification.expires_at) - Date.now();
  t.ok(expiresIn > 8 * 60_000 && expiresIn <= 10 * 60_000 + 5000, `the code lives about 10 minutes (${expiresIn} ms)`);

  const inbox = await env.request('GET', '/v1/sandbox/inbox?phone_number=%2B12015550123', { key });
  t.equal(inbox.status, 200);
  t.equal(inbox.body.data.length, 1);
  t.match(inbox.body.data[0], { phone_number: '+12015550123', channel: 'voice', kind: 'caller_id_verification_call' });
  const code = await spokenCode(env, key, '+12015550123');
  t.match(code, /^\d{6}$/);

  const row = await env.db.one('SELECT code_hash FROM caller_ids WHERE id = $1', [c.id]);
  t.equal(row.code_hash.length, 32, 'a 32-byte hash is stored');
  t.notOk(JSON.stringify(await env.db.any('SELECT * FROM caller_ids')).includes(code), 'never the code itself');

  const ok = await confirm(c.id, code);
  t.equal(ok.status, 200, ok.text);
  t.match(ok.body.data, { id: c.id, status: 'verified', verification: null });
  t.ok(ok.body.data.verified_at);
  const again = await confirm(c.id, code);
  t.equal(again.status, 409, 'a verified caller ID has nothing to confirm');
  t.equal(again.body.error.code, 'caller_id_already_verified');
  t.match(again.body.error.message, /status verified/);
  t.equal((await verify(c.id)).body.error.code, 'caller_id_already_verified', 'nor to verify');

  const g = await env.request('GET', `/v1/caller-ids/${c.id}`, { key });
  t.same(g.body.data, ok.body.data);
  const l = await env.request('GET', '/v1/caller-ids', { key });
  t.same(l.body.data.map((x: { id: string }) => x.id), [c.id]);
  t.same((await env.request('GET', '/v1/caller-ids?status=pending', { key })).body.data, []);
  t.equal((await env.request('GET', '/v1/caller-ids?status=verified', { key })).body.data.length, 1);

  const d = await env.request('DELETE', `/v1/caller-ids/${c.id}`, { key });
  t.equal(d.status, 204);
  t.equal((await env.request('GET', `/v1/caller-ids/${c.id}`, { key })).status, 404);
  t.equal((await env.request('DELETE', `/v1/caller-ids/${c.id}`, { key })).status, 404);
  t.same((await env.request('GET', '/v1/caller-ids', { key })).body.data, []);

  const re = await env.request('POST', '/v1/caller-ids', { key, body: { phone_number: '+12015550123' } });
  t.equal(re.status, 201, 'a removed caller ID can be added again');
  t.not(re.body.data.id, c.id);
  t.equal(re.body.data.status, 'pending', 'and must be verified again');
  await env.request('DELETE', `/v1/caller-ids/${re.body.data.id}`, { key });
});

t.test('a wrong code counts an attempt; the last one locks the code until a new call', async (t) => {
  const c = await addCallerId(env, key, '+12015550124');
  await verify(c.id);
  const code = await spokenCode(env, key, '+12015550124');
  for (let i = 1; i < MAX_CODE_ATTEMPTS; i++) {
    const r = await confirm(c.id, wrong(code));
    t.equal(r.status, 422);
    t.equal(r.body.error.code, 'verification_code_incorrect');
    t.match(r.body.error.fields.code, `${MAX_CODE_ATTEMPTS - i} attempt`);
    t.equal((await env.request('GET', `/v1/caller-ids/${c.id}`, { key })).body.data.verification.attempts_remaining, MAX_CODE_ATTEMPTS - i);
  }
  const last = await confirm(c.id, wrong(code));
  t.equal(last.status, 423);
  t.equal(last.body.error.code, 'verification_locked');
  const right = await confirm(c.id, code);
  t.equal(right.status, 423, 'the right code no longer works once locked');
  t.equal(right.body.error.code, 'verification_locked');
  t.equal((await env.request('GET', `/v1/caller-ids/${c.id}`, { key })).body.data.verification.state, 'locked');
  t.equal((await env.db.one('SELECT code_hash FROM caller_ids WHERE id = $1', [c.id])).code_hash, null, 'the code is burned');

  const bad = await confirm(c.id, '12ab');
  t.equal(bad.status, 400, 'a malformed code is a validation error');
  t.match(bad.body.error.fields, { code: String });

  t.equal((await verify(c.id)).status, 202, 'a new call clears the lockout');
  const fresh = await spokenCode(env, key, '+12015550124');
  t.equal((await confirm(c.id, fresh)).status, 200);
});

t.test('concurrent wrong codes are all counted: the bound holds under concurrency', async (t) => {
  const c = await addCallerId(env, key, '+12015550132');
  await verify(c.id);
  const code = await spokenCode(env, key, '+12015550132');
  const tries = await Promise.all(Array.from({ length: MAX_CODE_ATTEMPTS + 3 }, () => confirm(c.id, wrong(code))));
  const codes = tries.map((r) => r.body.error.code).sort();
  t.equal(codes.filter((x) => x === 'verification_code_incorrect').length, MAX_CODE_ATTEMPTS - 1);
  t.equal(codes.filter((x) => x === 'verification_locked').length, 4, 'the 5th locks, the rest find it locked');
  t.equal((await confirm(c.id, code)).body.error.code, 'verification_locked');
});

t.test('an expired code is refused; an earlier code stops working after a new call', async (t) => {
  const c = await addCallerId(env, key, '+12015550125');
  await verify(c.id);
  const first = await spokenCode(env, key, '+12015550125');
  await verify(c.id);
  const second = await spokenCode(env, key, '+12015550125');
  if (first !== second) {
    const old = await confirm(c.id, first);
    t.equal(old.body.error.code, 'verification_code_incorrect', 'the first call\'s code was replaced');
  }
  // Codes live 10 minutes: move this one's expiry into the past rather than wait.
  await env.db.none(`UPDATE caller_ids SET code_expires_at = now() - interval '1 second' WHERE id = $1`, [c.id]);
  const r = await confirm(c.id, second);
  t.equal(r.status, 410);
  t.equal(r.body.error.code, 'verification_code_expired');
  t.equal((await env.request('GET', `/v1/caller-ids/${c.id}`, { key })).body.data.verification.state, 'expired');
  t.equal((await env.request('GET', `/v1/caller-ids/${c.id}`, { key })).body.data.status, 'pending');
});

t.test('verification calls are bounded per hour', async (t) => {
  const c = await addCallerId(env, key, '+12015550126');
  for (let i = 0; i < MAX_CALLS_PER_HOUR; i++) t.equal((await verify(c.id)).status, 202);
  const r = await verify(c.id);
  t.equal(r.status, 429);
  t.equal(r.body.error.code, 'rate_limited');
  t.ok(Number(r.headers['retry-after']) > 3000, `Retry-After ${r.headers['retry-after']} s`);
  const calls = await env.db.one('SELECT count(*)::int AS n FROM caller_id_verification_calls WHERE caller_id_id = $1', [c.id]);
  t.equal(calls.n, MAX_CALLS_PER_HOUR, 'the refused call was not placed');
  const inbox = await env.request('GET', '/v1/sandbox/inbox?phone_number=%2B12015550126', { key });
  t.equal(inbox.body.data.length, MAX_CALLS_PER_HOUR);
});

t.test('what a caller ID may be', async (t) => {
  const before = (await env.db.one('SELECT count(*)::int AS n FROM caller_ids')).n;
  const bad = async (body: unknown, field: string, match: RegExp | string) => {
    const r = await env.request('POST', '/v1/caller-ids', { key, body });
    t.equal(r.status, 400, JSON.stringify(body));
    t.equal(r.body.error.code, 'validation_error');
    t.match(r.body.error.fields[field], match);
  };
  await bad({ phone_number: '2015550123' }, 'phone_number', /E\.164/);
  await bad({ phone_number: '911' }, 'phone_number', /E\.164/);
  await bad({ phone_number: '+19005551234' }, 'phone_number', /premium/);
  await bad({ phone_number: '+442071838750' }, 'phone_number', /international/);
  await bad({}, 'phone_number', 'is required');
  await bad({ phone_number: '+12015550199', colour: 'red' }, 'colour', 'is not a recognized field');
  t.equal((await env.db.one('SELECT count(*)::int AS n FROM caller_ids')).n, before, 'nothing written');

  const own = await env.request('POST', '/v1/caller-ids', { key, body: { phone_number: org.phone_numbers[0] } });
  t.equal(own.status, 409);
  t.equal(own.body.error.code, 'caller_id_exists');
  t.match(own.body.error.message, /already a number of your organization/);

  const c = await addCallerId(env, key, '+12015550127');
  const dup = await env.request('POST', '/v1/caller-ids', { key, body: { phone_number: '+12015550127' } });
  t.equal(dup.status, 409);
  t.equal(dup.body.error.code, 'caller_id_exists');
  t.equal(dup.body.error.fields.conflicts_with, c.id);
  t.equal((await env.request('POST', '/v1/caller-ids', { key: other.api_key, body: { phone_number: '+12015550127' } })).status, 201,
    'another organization may add the same external number');
});

t.test('at most CALLER_ID_LIMIT caller IDs, also under concurrency', async (t) => {
  const capped = await env.bootstrap({ org: 'Capped Co' });
  const tries = await Promise.all(Array.from({ length: CALLER_ID_LIMIT + 5 }, (_, i) =>
    env.request('POST', '/v1/caller-ids', { key: capped.api_key, body: { phone_number: `+1201777${String(1000 + i)}` } })));
  t.equal(tries.filter((r) => r.status === 201).length, CALLER_ID_LIMIT);
  const refused = tries.filter((r) => r.status !== 201);
  t.equal(refused.length, 5);
  t.ok(refused.every((r) => r.status === 409 && r.body.error.code === 'caller_id_limit_exceeded'));
  const one = tries.find((r) => r.status === 201)!.body.data.id;
  await env.request('DELETE', `/v1/caller-ids/${one}`, { key: capped.api_key });
  t.equal((await env.request('POST', '/v1/caller-ids', { key: capped.api_key, body: { phone_number: '+12017779999' } })).status, 201,
    'removing one makes room');
});

t.test('an Idempotency-Key replays the first answer', async (t) => {
  const headers = { 'idempotency-key': 'add-caller-id-1' };
  const a = await env.request('POST', '/v1/caller-ids', { key, headers, body: { phone_number: '+12015550131' } });
  const b = await env.request('POST', '/v1/caller-ids', { key, headers, body: { phone_number: '+12015550131' } });
  t.equal(a.status, 201);
  t.equal(b.status, 201, 'not caller_id_exists');
  t.equal(b.headers['idempotency-replay'], 'true');
  t.equal(b.body.data.id, a.body.data.id);
  const vh = { 'idempotency-key': 'verify-1' };
  t.equal((await env.request('POST', `/v1/caller-ids/${a.body.data.id}/verify`, { key, headers: vh })).status, 202);
  t.equal((await env.request('POST', `/v1/caller-ids/${a.body.data.id}/verify`, { key, headers: vh })).status, 202);
  const calls = await env.db.one('SELECT count(*)::int AS n FROM caller_id_verification_calls WHERE caller_id_id = $1', [a.body.data.id]);
  t.equal(calls.n, 1, 'one call placed');
});

t.test('tenant isolation on every route', async (t) => {
  const c = await addCallerId(env, key, '+12015550128');
  await verify(c.id);
  const code = await spokenCode(env, key, '+12015550128');
  const o = other.api_key;
  t.equal((await env.request('GET', `/v1/caller-ids/${c.id}`, { key: o })).status, 404);
  t.equal((await verify(c.id, o)).status, 404);
  t.equal((await confirm(c.id, code, o)).status, 404, 'not even with the right code');
  t.equal((await env.request('DELETE', `/v1/caller-ids/${c.id}`, { key: o })).status, 404);
  t.notOk((await env.request('GET', '/v1/caller-ids', { key: o })).body.data.some((x: { id: string }) => x.id === c.id));
  const inbox = await env.request('GET', '/v1/sandbox/inbox?phone_number=%2B12015550128', { key: o });
  t.equal(inbox.status, 200);
  t.same(inbox.body.data, [], 'another organization does not hear our verification calls');
  t.equal((await env.request('GET', '/v1/caller-ids/not-a-uuid', { key })).status, 404);
  t.equal((await env.request('GET', `/v1/caller-ids/${c.id}`, { key })).body.data.status, 'pending', 'untouched');
});

t.test('scopes on every route', async (t) => {
  const c = await addCallerId(env, key, '+12015550129');
  const ro = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['voice:read'] });
  const wo = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['voice:write'] });
  const none = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['calls:read'] });
  const routes: [string, string, unknown, 'voice:read' | 'voice:write'][] = [
    ['GET', '/v1/caller-ids', undefined, 'voice:read'],
    ['GET', `/v1/caller-ids/${c.id}`, undefined, 'voice:read'],
    ['GET', '/v1/sandbox/inbox?phone_number=%2B12015550129', undefined, 'voice:read'],
    ['POST', '/v1/caller-ids', { phone_number: '+12015550130' }, 'voice:write'],
    ['POST', `/v1/caller-ids/${c.id}/verify`, undefined, 'voice:write'],
    ['POST', `/v1/caller-ids/${c.id}/confirm`, { code: '000000' }, 'voice:write'],
    ['DELETE', `/v1/caller-ids/${c.id}`, undefined, 'voice:write'],
  ];
  for (const [method, path, body, scope] of routes) {
    const lacking = scope === 'voice:read' ? wo.apiKey : ro.apiKey;
    for (const k of [lacking, none.apiKey]) {
      const r = await env.request(method, path, { key: k, body });
      t.equal(r.status, 403, `${method} ${path} without ${scope}`);
      t.equal(r.body.error.code, 'scope_missing');
    }
  }
  t.equal((await env.request('GET', '/v1/caller-ids', { key: ro.apiKey })).status, 200);
  t.equal((await env.request('POST', `/v1/caller-ids/${c.id}/verify`, { key: wo.apiKey })).status, 202);
  t.equal((await env.request('GET', '/v1/sandbox/inbox?phone_number=2015550129', { key })).status, 400, 'the inbox wants E.164');
});
