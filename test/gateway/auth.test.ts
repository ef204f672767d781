// Authentication: every 401 cause and its Bearer challenge, the RFC 9728 resource metadata the challenge points at,
// scope_missing (403 with insufficient_scope), and revocation that takes effect at once despite the key cache.
import t from 'tap';
import { revokeAndAnnounce } from '../../shared/accounts/revocation.ts';
import { keyer } from '../../shared/redis.ts';
import { SCOPES } from '../../shared/scopes.ts';
import { testEnv, type Response } from '../helpers/env.ts';
import { parseChallenge } from '../helpers/header-syntax.ts';
import { runAdmin } from '../helpers/admin-cli.ts';
import type { TapTest } from '../helpers/pool.ts';

const env = await testEnv(t);
const org = await env.bootstrap({ org: 'Auth Co', scopes: ['account:read'] });
const metadataUrl = `${env.url}/.well-known/oauth-protected-resource`;

function assertUnauthorized(t: TapTest, r: Response, error: string | null, why: string) {
  t.equal(r.status, 401, `${why}: 401`);
  t.equal(r.body?.error?.code, 'unauthorized', `${why}: code unauthorized`);
  t.type(r.body.error.message, 'string');
  t.same(Object.keys(r.body), ['error'], `${why}: error envelope only`);
  t.ok(r.headers['x-request-id'], `${why}: request id`);
  const header = r.headers['www-authenticate'];
  t.ok(header, `${why}: WWW-Authenticate present`);
  const c = parseChallenge(header);
  t.equal(c.scheme, 'Bearer', `${why}: Bearer challenge`);
  t.equal(c.params.resource_metadata, metadataUrl, `${why}: resource_metadata points at the RFC 9728 document`);
  if (error) t.equal(c.params.error, error, `${why}: error="${error}"`);
  else t.notOk('error' in c.params, `${why}: no error code when no credential was sent (RFC 6750 3.1)`);
  t.notOk('scope' in c.params, `${why}: no scope on a 401`);
}

t.test('a valid key is accepted (control)', async (t) => {
  const r = await env.request('GET', '/v1/account', { key: org.api_key });
  t.equal(r.status, 200);
  t.notOk(r.headers['www-authenticate'], 'no challenge on success');
});

t.test('missing Authorization header', async (t) => {
  assertUnauthorized(t, await env.request('GET', '/v1/account'), null, 'missing header');
  assertUnauthorized(t, await env.request('GET', '/v1/phone-numbers'), null, 'missing header, other route');
});

t.test('non-Bearer schemes and malformed Bearer values', async (t) => {
  const cases: Record<string, string> = {
    basic: `Basic ${Buffer.from(`user:${org.api_key}`).toString('base64')}`,
    token: `Token ${org.api_key}`,
    'bare key': org.api_key,
    'Bearer without token': 'Bearer',
    'Bearer with two tokens': `Bearer ${org.api_key} extra`,
  };
  for (const [why, value] of Object.entries(cases)) {
    assertUnauthorized(t, await env.request('GET', '/v1/account', { headers: { authorization: value } }), 'invalid_request', why);
  }
  for (const value of ['Bearer', 'Bearer ', 'bearer   ']) {
    const r = await env.request('GET', '/v1/account', { headers: { authorization: value } });
    assertUnauthorized(t, r, 'invalid_request', `empty token ${JSON.stringify(value)}`);
    t.match(r.body.error.message, /bearer token is empty/, 'the message says the token is empty');
  }
  const lower = await env.request('GET', '/v1/account', { headers: { authorization: `bearer ${org.api_key}` } });
  t.equal(lower.status, 200, 'the scheme name is case-insensitive (RFC 7235)');
});

t.test('unknown keys', async (t) => {
  assertUnauthorized(t, await env.request('GET', '/v1/account', { key: 'olk_' + 'x'.repeat(40) }), 'invalid_token', 'unknown key');
  assertUnauthorized(t, await env.request('GET', '/v1/account', { key: org.api_key.slice(0, -1) + (org.api_key.endsWith('a') ? 'b' : 'a') }),
    'invalid_token', 'key with one character changed');
  assertUnauthorized(t, await env.request('GET', '/v1/account', { key: 'olk_' + 'y'.repeat(1500) }), 'invalid_token', 'very long key');
  // Asked twice: the negative cache must answer the same.
  assertUnauthorized(t, await env.request('GET', '/v1/account', { key: 'olk_' + 'x'.repeat(40) }), 'invalid_token', 'unknown key again');
});

t.test('the resource_metadata document is served and is a valid RFC 9728 document', async (t) => {
  const denied = await env.request('GET', '/v1/account');
  const url = parseChallenge(denied.headers['www-authenticate']).params.resource_metadata;
  const r = await env.request('GET', new URL(url).pathname);
  t.equal(r.status, 200);
  t.match(r.headers['content-type'], /^application\/json/);
  const doc = r.body;
  t.type(doc, 'object');
  // RFC 9728 3.3: resource is required and must equal the identifier the well-known path was derived from.
  t.equal(doc.resource, env.url, 'resource is the protected resource identifier');
  t.equal(new URL(doc.resource).protocol, 'http:');
  t.notOk(new URL(doc.resource).hash, 'resource has no fragment');
  t.equal(url, `${doc.resource}/.well-known/oauth-protected-resource`, 'metadata URL is the well-known URL of resource');
  for (const k of ['authorization_servers', 'bearer_methods_supported', 'scopes_supported']) {
    if (k in doc) t.ok(Array.isArray(doc[k]) && doc[k].every((v: unknown) => typeof v === 'string'), `${k} is a string array`);
  }
  t.ok(doc.bearer_methods_supported.every((m: string) => ['header', 'body', 'query'].includes(m)), 'bearer methods are RFC 6750 methods');
  t.same(doc.bearer_methods_supported, ['header'], 'keys go in the Authorization header only');
  t.same([...doc.scopes_supported].sort(), [...SCOPES].sort(), 'every scope of the reference is listed');
  for (const k of ['resource_documentation', 'resource_policy_uri', 'resource_tos_uri', 'jwks_uri']) {
    if (k in doc) t.doesNotThrow(() => new URL(doc[k]), `${k} is a URL`);
  }
  if ('resource_name' in doc) t.type(doc.resource_name, 'string');
  const docs = await env.request('GET', new URL(doc.resource_documentation).pathname);
  t.equal(docs.status, 200, 'resource_documentation resolves');
});

t.test('resource_metadata follows PUBLIC_URL when configured', async (t) => {
  const pub = await testEnv(t, { env: { PUBLIC_URL: 'https://api.example.test/' } });
  const r = await pub.request('GET', '/v1/account');
  t.equal(r.status, 401);
  t.equal(parseChallenge(r.headers['www-authenticate']).params.resource_metadata,
    'https://api.example.test/.well-known/oauth-protected-resource');
  const doc = await pub.request('GET', '/.well-known/oauth-protected-resource');
  t.equal(doc.body.resource, 'https://api.example.test');
});

t.test('scope_missing: 403 with an insufficient_scope challenge naming the scope', async (t) => {
  const r = await env.request('GET', '/v1/phone-numbers', { key: org.api_key });
  t.equal(r.status, 403);
  t.equal(r.body.error.code, 'scope_missing');
  const c = parseChallenge(r.headers['www-authenticate']);
  t.equal(c.scheme, 'Bearer');
  t.equal(c.params.error, 'insufficient_scope');
  t.equal(c.params.scope, 'phone_numbers:read');
  t.equal(c.params.resource_metadata, metadataUrl);

  const other = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['phone_numbers:read'] });
  const r2 = await env.request('GET', '/v1/account', { key: other.apiKey });
  t.equal(r2.status, 403);
  t.equal(r2.body.error.code, 'scope_missing');
  t.equal(parseChallenge(r2.headers['www-authenticate']).params.scope, 'account:read');
  t.equal((await env.request('GET', '/v1/phone-numbers', { key: other.apiKey })).status, 200, 'the scope it has works');

  const webrtcOnly = await env.createKey({ organizationId: org.organization_id, userId: null, scopes: ['voice:webrtc'] });
  for (const path of ['/v1/account', '/v1/me', '/v1/phone-numbers']) {
    const r3 = await env.request('GET', path, { key: webrtcOnly.apiKey });
    t.equal(r3.status, 403, `voice:webrtc-only key cannot read ${path}`);
  }
});

t.test('revocation through revokeAndAnnounce takes effect on the very next request', async (t) => {
  const k = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['account:read'] });
  const sibling = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['account:read'] });
  // Warm the in-process credential cache (60 s positive TTL) so only the broadcast can evict it.
  for (let i = 0; i < 3; i++) t.equal((await env.request('GET', '/v1/account', { key: k.apiKey })).status, 200);
  t.equal((await env.request('GET', '/v1/account', { key: sibling.apiKey })).status, 200);

  t.equal(await revokeAndAnnounce(env.db, env.redis, keyer(env.config.redisPrefix), k.apiKeyId), true);
  assertUnauthorized(t, await env.request('GET', '/v1/account', { key: k.apiKey }), 'invalid_token', 'revoked key');
  assertUnauthorized(t, await env.request('GET', '/v1/account', { key: k.apiKey }), 'invalid_token', 'revoked key, again');
  t.equal((await env.request('GET', '/v1/account', { key: sibling.apiKey })).status, 200, 'other keys of the org keep working');
  t.equal(await revokeAndAnnounce(env.db, env.redis, keyer(env.config.redisPrefix), k.apiKeyId), false, 'revoking twice is a no-op');
});

t.test('revocation through `admin key revoke` takes effect at once', async (t) => {
  const k = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['account:read'] });
  t.equal((await env.request('GET', '/v1/account', { key: k.apiKey })).status, 200, 'cached');
  const cli = await runAdmin(env.env, ['key', 'revoke', '--key-id', k.apiKeyId]);
  t.equal(cli.code, 0, cli.stderr);
  t.same(JSON.parse(cli.stdout), { api_key_id: k.apiKeyId, revoked: true });
  assertUnauthorized(t, await env.request('GET', '/v1/account', { key: k.apiKey }), 'invalid_token', 'revoked by CLI');
  const row = await env.db.one('SELECT revoked_at FROM api_keys WHERE id = $1', [k.apiKeyId]);
  t.ok(row.revoked_at, 'revoked_at recorded');

  const again = await runAdmin(env.env, ['key', 'revoke', '--key-id', k.apiKeyId]);
  t.equal(again.code, 2, 'revoking a revoked key is a usage error');
  t.equal(again.stderr.trim().split('\n').length, 1);
});

// The race between an in-flight lookup and a revocation is covered deterministically in test/gateway/auth-cache.test.ts.

t.test('public routes need no credential', async (t) => {
  for (const path of ['/healthz', '/readyz', '/v1/openapi.json', '/.well-known/oauth-protected-resource']) {
    const r = await env.request('GET', path);
    t.equal(r.status, 200, path);
    t.notOk(r.headers['www-authenticate'], `${path}: no challenge`);
  }
});
