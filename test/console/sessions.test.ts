// Console sign-in, sessions, CSRF, lockout, members, invitations, password resets and self-serve keys over a real
// gateway, PostgreSQL and Redis.
import t from 'tap';
import { createUser } from '../../shared/users/members.ts';
import { eventually, testEnv, type TestEnv } from '../helpers/env.ts';

const PASSWORD = 'correct horse battery staple';

const cookieOf = (setCookie: string | string[] | undefined) => {
  const v = Array.isArray(setCookie) ? setCookie[0] : setCookie ?? '';
  return /ol_session=([^;]*)/.exec(v)?.[1] ?? '';
};

async function signIn(env: TestEnv, email: string, password = PASSWORD, headers: Record<string, string> = {}) {
  const r = await env.request('POST', '/v1/session', { body: { email, password }, headers });
  return { r, cookie: `ol_session=${cookieOf(r.headers['set-cookie'])}`, csrf: r.body?.data?.csrf_token as string };
}

t.test('console sessions', async (t) => {
  const env = await testEnv(t);
  const a = await env.bootstrap({ org: 'Console A' });
  const b = await env.bootstrap({ org: 'Console B' });
  const owner = await createUser(env.db, { organizationId: a.organization_id, email: 'Owner.A@example.com', role: 'owner', password: PASSWORD });
  await createUser(env.db, { organizationId: a.organization_id, email: 'viewer.a@example.com', role: 'viewer', password: PASSWORD });
  await createUser(env.db, { organizationId: b.organization_id, email: 'owner.b@example.com', role: 'owner', password: PASSWORD });

  await t.test('sign in, who am I, sign out; the cookie is HttpOnly SameSite=Lax', async (t) => {
    const { r, cookie, csrf } = await signIn(env, 'owner.a@EXAMPLE.com');
    t.equal(r.status, 200);
    t.match(String(r.headers['set-cookie']), /HttpOnly/);
    t.match(String(r.headers['set-cookie']), /SameSite=Lax/);
    t.notMatch(String(r.headers['set-cookie']), /Secure/, 'no Secure without an https PUBLIC_URL');
    t.equal(r.body.data.role, 'owner');
    t.equal(r.body.data.user.id, owner.user.id);
    const me = await env.request('GET', '/v1/session', { headers: { cookie } });
    t.equal(me.status, 200);
    t.equal(me.body.data.csrf_token, csrf);
    const out = await env.request('DELETE', '/v1/session', { headers: { cookie, 'x-csrf-token': csrf } });
    t.equal(out.status, 204);
    const again = await env.request('GET', '/v1/session', { headers: { cookie } });
    t.equal(again.status, 401, 'a cookie reused after sign-out is refused');
  });

  await t.test('session fixation: every sign-in makes a new session and ends the one presented', async (t) => {
    const first = await signIn(env, 'owner.a@example.com');
    const second = await signIn(env, 'owner.a@example.com', PASSWORD, { cookie: first.cookie });
    t.not(first.cookie, second.cookie);
    t.equal((await env.request('GET', '/v1/session', { headers: { cookie: first.cookie } })).status, 401);
    t.equal((await env.request('GET', '/v1/session', { headers: { cookie: second.cookie } })).status, 200);
  });

  await t.test('wrong password and unknown email answer alike', async (t) => {
    const wrong = await env.request('POST', '/v1/session', { body: { email: 'owner.b@example.com', password: 'not the password' } });
    const unknown = await env.request('POST', '/v1/session', { body: { email: 'nobody@example.com', password: 'not the password' } });
    t.equal(wrong.status, 401);
    t.equal(unknown.status, 401);
    t.same(wrong.body, unknown.body);
    t.notOk(wrong.headers['set-cookie']);
  });

  await t.test('CSRF: a write with a session needs the token; nothing is written without it', async (t) => {
    const { cookie, csrf } = await signIn(env, 'owner.a@example.com');
    const body = { name: 'csrf probe', scopes: ['calls:read'] };
    const none = await env.request('POST', '/v1/api-keys', { headers: { cookie }, body });
    t.equal(none.status, 403);
    t.equal(none.body.error.code, 'forbidden');
    t.match(none.body.error.message, /X-CSRF-Token/);
    const wrong = await env.request('POST', '/v1/api-keys', { headers: { cookie, 'x-csrf-token': 'x'.repeat(43) }, body });
    t.equal(wrong.status, 403);
    const n = await env.db.one(`SELECT count(*)::int AS n FROM api_keys WHERE name = 'csrf probe'`);
    t.equal(n.n, 0, 'nothing written');
    const ok = await env.request('POST', '/v1/api-keys', { headers: { cookie, 'x-csrf-token': csrf }, body });
    t.equal(ok.status, 201);
    // A bearer key alongside the cookie: the key is used (no CSRF needed).
    const both = await env.request('POST', '/v1/api-keys', { key: a.api_key, headers: { cookie }, body: { name: 'by key', scopes: ['calls:read'] } });
    t.equal(both.status, 201);
    t.equal(both.body.data.created_by_user_id, a.user_id);
  });

  await t.test('keys: made by a user, with ceilings, shown once, revoked at once', async (t) => {
    const { cookie, csrf } = await signIn(env, 'owner.a@example.com');
    const h = { cookie, 'x-csrf-token': csrf };
    const made = await env.request('POST', '/v1/api-keys', { headers: h,
      body: { name: 'crm', scopes: ['calls:read', 'account:read'], allowed_from: [a.phone_numbers[0]], allowed_to: ['+14155550123'] } });
    t.equal(made.status, 201);
    t.match(made.body.data.key, /^olk_/);
    t.equal(made.body.data.created_by_user_id, owner.user.id);
    t.same(made.body.data.allowed_from, [a.phone_numbers[0]]);
    const me = await env.request('GET', '/v1/me', { key: made.body.data.key });
    t.equal(me.status, 200);
    t.equal(me.body.data.user.id, owner.user.id);
    const list = await env.request('GET', '/v1/api-keys', { headers: { cookie } });
    t.equal(list.status, 200);
    t.notMatch(list.text, made.body.data.key, 'the plaintext is never answered again');
    const listed = list.body.data.find((k: any) => k.id === made.body.data.id);
    // The use's last_used_at is written after its answer (never on the request's path), so it shows a moment later.
    const used = await eventually(async () => (await env.request('GET', '/v1/api-keys', { headers: { cookie } }))
      .body.data.find((k: any) => k.id === made.body.data.id && k.last_used_at));
    t.ok(used.last_used_at, 'last_used_at set by the use above');
    t.same(listed.allowed_to, ['+14155550123']);
    const replay = await env.request('POST', '/v1/api-keys', { headers: { ...h, 'idempotency-key': 'k-1' }, body: { name: 'x', scopes: ['calls:read'] } });
    t.equal(replay.status, 400, 'an Idempotency-Key is refused: the answer is never stored');
    // Beyond the creator: a key with a ceiling cannot make a key without it, nor with more scopes.
    const narrow = await env.request('POST', '/v1/api-keys', { key: made.body.data.key, body: { name: 'x', scopes: ['calls:read'] } });
    t.equal(narrow.status, 403, 'the key lacks api_keys:write');
    const rev = await env.request('DELETE', `/v1/api-keys/${made.body.data.id}`, { headers: h });
    t.equal(rev.status, 200);
    t.ok(rev.body.data.revoked_at);
    t.equal((await env.request('GET', '/v1/me', { key: made.body.data.key })).status, 401, 'revoked at once');
    // Another organization's key id: 404; a credential without the scope: 403.
    const bOwner = await signIn(env, 'owner.b@example.com');
    t.equal((await env.request('DELETE', `/v1/api-keys/${a.api_key_id}`, { headers: { cookie: bOwner.cookie, 'x-csrf-token': bOwner.csrf } })).status, 404);
    const viewer = await signIn(env, 'viewer.a@example.com');
    t.equal((await env.request('DELETE', `/v1/api-keys/${a.api_key_id}`, { headers: { cookie: viewer.cookie, 'x-csrf-token': viewer.csrf } })).status, 403);
  });

  await t.test('scopes beyond the creator are refused', async (t) => {
    const dev = await createUser(env.db, { organizationId: a.organization_id, email: 'dev.a@example.com', role: 'developer', password: PASSWORD });
    t.ok(dev.user.id);
    const s = await signIn(env, 'dev.a@example.com');
    const r = await env.request('POST', '/v1/api-keys', { headers: { cookie: s.cookie, 'x-csrf-token': s.csrf }, body: { name: 'x', scopes: ['members:write'] } });
    t.equal(r.status, 400);
    t.match(r.body.error.fields.scopes, /beyond your own scopes/);
  });

  await t.test('a viewer cannot change anything', async (t) => {
    const v = await signIn(env, 'viewer.a@example.com');
    const h = { cookie: v.cookie, 'x-csrf-token': v.csrf };
    // Every write route of the gateway (path ids filled with a foreign uuid): refused before anything runs.
    const writes = env.gateway!.gateway.router.routes.filter((r: any) => r.scope && r.method !== 'GET');
    t.ok(writes.length > 40, `${writes.length} write routes`);
    for (const r of writes as any[]) {
      const path = r.path.replace(/\{[^}]+\}/g, '0193a4c2-7e5b-7d21-9f3a-6c8e2b1d4f70');
      // Read-scoped writes (sign-out, DELETE /v1/session, and searches) are a viewer's too; a route may name several scopes.
      if ([r.scope].flat().every((s: string) => s.endsWith(':read'))) continue;
      const res = await env.request(r.method, path, { headers: h, body: {} });
      t.equal(res.status, 403, `${r.method} ${r.path}`);
    }
    const n = await env.db.one(`SELECT count(*)::int AS n FROM users WHERE email = 'new@example.com'`);
    t.equal(n.n, 0);
    t.equal((await env.request('GET', '/v1/api-keys', { headers: { cookie: v.cookie } })).status, 200, 'reads work');
  });

  await t.test('organization A\'s session reading B\'s ids answers 404', async (t) => {
    const s = await signIn(env, 'owner.a@example.com');
    const bMembers = await env.request('GET', '/v1/members', { key: b.api_key });
    const bUser = bMembers.body.data[0].id;
    const h = { cookie: s.cookie, 'x-csrf-token': s.csrf };
    t.equal((await env.request('PATCH', `/v1/members/${bUser}`, { headers: h, body: { role: 'viewer' } })).status, 404);
    t.equal((await env.request('DELETE', `/v1/members/${bUser}`, { headers: h })).status, 404);
    t.equal((await env.request('DELETE', `/v1/api-keys/${b.api_key_id}`, { headers: h })).status, 404);
    const list = await env.request('GET', '/v1/members', { headers: { cookie: s.cookie } });
    t.notOk(list.body.data.some((m: any) => m.id === bUser));
  });

  await t.test('invitation and password reset through the sandbox inbox', async (t) => {
    const s = await signIn(env, 'owner.a@example.com');
    const h = { cookie: s.cookie, 'x-csrf-token': s.csrf };
    const inv = await env.request('POST', '/v1/members', { headers: h, body: { email: 'sam@example.com', role: 'agent' } });
    t.equal(inv.status, 201);
    t.equal(inv.body.data.status, 'invited');
    const dup = await env.request('POST', '/v1/members', { headers: h, body: { email: 'SAM@example.com', role: 'agent' } });
    t.equal(dup.status, 409);
    t.equal(dup.body.error.code, 'member_exists');
    const inbox = await env.request('GET', '/v1/sandbox/inbox?email=sam@example.com', { key: a.api_key });
    t.equal(inbox.status, 200);
    const text: string = inbox.body.data[0].text;
    t.match(text, `${env.url}/console/accept-invitation#token=`);
    const token = /#token=([A-Za-z0-9_-]+)/.exec(text)![1];
    const acc = await env.request('POST', '/v1/invitations/accept', { body: { token, password: 'short', name: 'Sam' } });
    t.equal(acc.status, 400);
    const ok = await env.request('POST', '/v1/invitations/accept', { body: { token, password: 'sams long passphrase', name: 'Sam' } });
    t.equal(ok.status, 200);
    t.equal(ok.body.data.role, 'agent');
    const samCookie = `ol_session=${cookieOf(ok.headers['set-cookie'])}`;
    t.equal((await env.request('GET', '/v1/session', { headers: { cookie: samCookie } })).status, 200);
    t.equal((await env.request('POST', '/v1/invitations/accept', { body: { token, password: 'sams long passphrase', name: 'Sam' } })).status, 400, 'once');

    // Reset: always 202; the link signs out every session.
    t.equal((await env.request('POST', '/v1/password-reset', { body: { email: 'nobody@example.com' } })).status, 202);
    t.equal((await env.request('POST', '/v1/password-reset', { body: { email: 'sam@example.com' } })).status, 202);
    // The email goes out after the answer (its timing must not tell who has an account).
    const reset = await eventually(async () => (await env.request('GET', '/v1/sandbox/inbox?email=sam@example.com', { key: a.api_key }))
      .body.data.find((e: any) => e.kind === 'password_reset'));
    t.ok(reset);
    const rt = /#token=([A-Za-z0-9_-]+)/.exec(reset.text)![1];
    t.equal((await env.request('POST', '/v1/password-reset/confirm', { body: { token: rt, password: 'a brand new passphrase' } })).status, 204);
    t.equal((await env.request('GET', '/v1/session', { headers: { cookie: samCookie } })).status, 401, 'signed out everywhere');
    t.equal((await signIn(env, 'sam@example.com', 'sams long passphrase')).r.status, 401);
    t.equal((await signIn(env, 'sam@example.com', 'a brand new passphrase')).r.status, 200);

    // Reset requests are limited per email (3 an hour), known or not, and say when to retry. Each email above asked once.
    for (const email of ['sam@example.com', 'nobody@example.com']) {
      for (let i = 0; i < 2; i++) t.equal((await env.request('POST', '/v1/password-reset', { body: { email } })).status, 202, `${email}: within the limit`);
      const over = await env.request('POST', '/v1/password-reset', { body: { email } });
      t.equal(over.status, 429, `${email}: past the limit`);
      t.equal(over.body.error.code, 'rate_limited');
      t.ok(Number(over.headers['retry-after']) > 0, 'Retry-After');
    }
  });

  await t.test('agent sees only own calls', async (t) => {
    const agent = await env.db.one(`SELECT id FROM users WHERE email = 'sam@example.com' AND disabled_at IS NULL`);
    const s = await signIn(env, 'sam@example.com', 'a brand new passphrase');
    // One call by the owner's key, one row attributed to the agent (placed through a key of theirs).
    const placed = await env.request('POST', '/v1/calls/dial', { key: a.api_key,
      body: { from_number: a.phone_numbers[0], to_number: '+14155550123', connect_number: '+14155550124' } });
    t.equal(placed.status, 202, placed.text);
    const ownerCallId = placed.body.data?.call_id ?? placed.body.data?.id;
    const list = await env.request('GET', '/v1/calls', { headers: { cookie: s.cookie } });
    t.equal(list.status, 200);
    t.notOk(list.body.data.some((c: any) => c.id === ownerCallId), 'not the owner\'s call');
    t.equal((await env.request('GET', `/v1/calls/${ownerCallId}`, { headers: { cookie: s.cookie } })).status, 404);
    const full = await env.request('GET', `/v1/calls/${ownerCallId}`, { key: a.api_key });
    t.equal(full.body.data.issued_by_user_id, a.user_id);
    t.equal(full.body.data.api_key_id, a.api_key_id);
    await env.db.none('UPDATE calls SET user_id = $1 WHERE id = $2', [agent.id, ownerCallId]);
    const mine = await env.request('GET', '/v1/calls', { headers: { cookie: s.cookie } });
    t.ok(mine.body.data.some((c: any) => c.id === ownerCallId), 'now it is theirs');
  });

  await t.test('last owner protection; only owners manage owners', async (t) => {
    const s = await signIn(env, 'owner.b@example.com');
    const h = { cookie: s.cookie, 'x-csrf-token': s.csrf };
    const members = (await env.request('GET', '/v1/members', { headers: { cookie: s.cookie } })).body.data;
    const me = members.find((m: any) => m.email === 'owner.b@example.com');
    const boot = members.find((m: any) => m.id === b.user_id);
    // Org B has two owners (bootstrap's and owner.b): demote the bootstrap one, then the last one is protected.
    t.equal((await env.request('PATCH', `/v1/members/${boot.id}`, { headers: h, body: { role: 'admin' } })).status, 200);
    const last = await env.request('PATCH', `/v1/members/${me.id}`, { headers: h, body: { role: 'admin' } });
    t.equal(last.status, 409);
    t.equal(last.body.error.code, 'last_owner');
    t.equal((await env.request('DELETE', `/v1/members/${me.id}`, { headers: h })).status, 409);
    // An admin cannot touch owners.
    await createUser(env.db, { organizationId: b.organization_id, email: 'admin.b@example.com', role: 'admin', password: PASSWORD });
    const ad = await signIn(env, 'admin.b@example.com');
    const r = await env.request('DELETE', `/v1/members/${me.id}`, { headers: { cookie: ad.cookie, 'x-csrf-token': ad.csrf } });
    t.equal(r.status, 403);
    // Removing a member ends their sessions at once.
    const rm = await env.request('DELETE', `/v1/members/${(await env.db.one(`SELECT id FROM users WHERE email = 'admin.b@example.com'`)).id}`, { headers: h });
    t.equal(rm.status, 204);
    t.equal((await env.request('GET', '/v1/session', { headers: { cookie: ad.cookie } })).status, 401);
  });
});

t.test('lockout per email and per address', async (t) => {
  const env = await testEnv(t, { env: { SIGNIN_MAX_FAILURES_PER_EMAIL: '3', SIGNIN_MAX_FAILURES_PER_ADDRESS: '6' } });
  const a = await env.bootstrap({ org: 'Lockout' });
  await createUser(env.db, { organizationId: a.organization_id, email: 'lock@example.com', role: 'owner', password: PASSWORD });
  for (let i = 0; i < 3; i++) t.equal((await signIn(env, 'lock@example.com', 'wrong password')).r.status, 401);
  const locked = await signIn(env, 'lock@example.com');
  t.equal(locked.r.status, 429, 'locked even with the right password');
  t.equal(locked.r.body.error.code, 'rate_limited');
  t.ok(Number(locked.r.headers['retry-after']) > 0);
  for (let i = 0; i < 3; i++) await signIn(env, 'ghost@example.com', 'wrong password');
  const ghost = await signIn(env, 'ghost@example.com', 'wrong password');
  t.equal(ghost.r.status, 429, 'unknown emails lock the same way');
  // The address has 6 failures now: a fresh email from it is refused too.
  const fresh = await signIn(env, 'fresh@example.com', 'wrong password');
  t.equal(fresh.r.status, 429, 'per address');
});
