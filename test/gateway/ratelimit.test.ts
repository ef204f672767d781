// Rate limits: every header on success and on 429 (X-RateLimit-*, RateLimit and RateLimit-Policy as RFC 8941
// structured fields, Retry-After), the 601st request of a normal key, the 121st of a demo key, an operator-set
// per-key limit (admin CLI), and one count shared by every gateway replica.
import t from 'tap';
import { startGateway } from '../../gateway/start.ts';
import { createLogger } from '../../shared/log.ts';
import { eventually, httpCall, testEnv, type Response } from '../helpers/env.ts';
import { parseSfList } from '../helpers/header-syntax.ts';
import { pool, type TapTest } from '../helpers/pool.ts';
import { runAdmin } from '../helpers/admin-cli.ts';

const env = await testEnv(t);
const org = await env.bootstrap({ org: 'Limits Co' });

interface Parsed { limit: number; remaining: number; reset: number; policy: string; r: number; t: number; q: number; w: number }

/** Checks the syntax of every rate-limit header and returns their values. */
function rateHeaders(t: TapTest, res: Response, sentAt: number): Parsed {
  const h = res.headers;
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'ratelimit', 'ratelimit-policy']) {
    if (!h[name]) t.fail(`${name} missing on ${res.status}`);
  }
  for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
    t.match(h[name], /^\d+$/, `${name} is a non-negative integer`);
  }
  const reset = Number(h['x-ratelimit-reset']);
  t.ok(reset > 1e12, 'X-RateLimit-Reset is in Unix milliseconds');
  t.ok(reset >= sentAt && reset <= Date.now() + 60_000, 'X-RateLimit-Reset lies within the one-minute window');
  const rl = parseSfList(h.ratelimit);
  const pol = parseSfList(h['ratelimit-policy']);
  t.equal(rl.length, 1, 'RateLimit: one item');
  t.equal(pol.length, 1, 'RateLimit-Policy: one item');
  t.type(rl[0].value, 'string', 'RateLimit names its policy with an sf-string');
  t.equal(rl[0].value, pol[0].value, 'RateLimit refers to the policy in RateLimit-Policy');
  for (const [what, item, keys] of [['RateLimit', rl[0], ['r', 't']], ['RateLimit-Policy', pol[0], ['q', 'w']]] as const) {
    for (const k of keys) t.ok(Number.isInteger(item.params[k]) && (item.params[k] as number) >= 0, `${what} ${k} is a non-negative sf-integer`);
  }
  const p: Parsed = {
    limit: Number(h['x-ratelimit-limit']), remaining: Number(h['x-ratelimit-remaining']), reset,
    policy: String(rl[0].value), r: rl[0].params.r as number, t: rl[0].params.t as number,
    q: pol[0].params.q as number, w: pol[0].params.w as number,
  };
  t.equal(p.r, p.remaining, 'RateLimit r equals X-RateLimit-Remaining');
  t.equal(p.q, p.limit, 'RateLimit-Policy q equals X-RateLimit-Limit');
  t.equal(p.w, 60, 'one-minute window');
  t.ok(p.t >= 1 && p.t <= 60, 'RateLimit t: seconds to reset');
  return p;
}

function assert429(t: TapTest, r: Response, sentAt: number, limit: number) {
  t.equal(r.status, 429);
  t.equal(r.body.error.code, 'rate_limited');
  const p = rateHeaders(t, r, sentAt);
  t.equal(p.limit, limit);
  t.equal(p.remaining, 0);
  t.match(r.headers['retry-after'], /^\d+$/, 'Retry-After in whole seconds');
  const ra = Number(r.headers['retry-after']);
  t.ok(ra >= 1 && ra <= 60, 'Retry-After within the window');
  t.equal(p.t, ra, 'RateLimit t agrees with Retry-After');
  t.ok(Math.abs(p.reset - (sentAt + ra * 1000)) <= 2000 + (Date.now() - sentAt), 'X-RateLimit-Reset agrees with Retry-After');
}

/** Sends n requests (16 in flight) and returns their statuses. */
async function burst(key: string, n: number, path = '/v1/account'): Promise<number[]> {
  return pool(Array.from({ length: n }), 16, async () => (await env.request('GET', path, { key })).status);
}

t.test('headers on a success, and Remaining counts down', async (t) => {
  const k = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['account:read'] });
  let prev = 600;
  for (let i = 0; i < 3; i++) {
    const sent = Date.now();
    const r = await env.request('GET', '/v1/account', { key: k.apiKey });
    t.equal(r.status, 200);
    const p = rateHeaders(t, r, sent);
    t.equal(p.limit, 600, 'a normal key has 600 per minute');
    t.equal(p.remaining, prev - 1, 'remaining decrements by one per request');
    prev = p.remaining;
    t.notOk(r.headers['retry-after'], 'no Retry-After on success');
  }
});

t.test('every answer after authentication carries the headers, errors included', async (t) => {
  const k = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['account:read'] });
  const sent = Date.now();
  const invalid = await env.request('GET', '/v1/account?bogus=1', { key: k.apiKey });
  t.equal(invalid.status, 400);
  t.equal(rateHeaders(t, invalid, sent).remaining, 599);
  const denied = await env.request('GET', '/v1/phone-numbers', { key: k.apiKey });
  t.equal(denied.status, 403);
  t.equal(rateHeaders(t, denied, sent).remaining, 598, 'a scope failure counts too');
  const unknown = await env.request('GET', '/v1/no-such-route', { key: k.apiKey });
  t.equal(unknown.status, 404);
  t.equal(rateHeaders(t, unknown, sent).remaining, 597, 'an unknown route counts against the key');
  const wrongMethod = await env.request('DELETE', '/v1/account', { key: k.apiKey });
  t.equal(wrongMethod.status, 405);
  t.equal(rateHeaders(t, wrongMethod, sent).remaining, 596, 'so does a wrong method');
  const anon = await env.request('GET', '/v1/account');
  t.equal(anon.status, 401);
  const pa = rateHeaders(t, anon, sent);
  t.not(pa.policy, 'default', 'unauthenticated requests are counted under their own policy');
});

t.test('the 601st request of a normal key is 429 rate_limited', async (t) => {
  const k = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['account:read', 'phone_numbers:read'] });
  const statuses = await burst(k.apiKey, 600);
  t.equal(statuses.filter((s) => s === 200).length, 600, 'the first 600 pass');
  const sent = Date.now();
  const r = await env.request('GET', '/v1/account', { key: k.apiKey });
  assert429(t, r, sent, 600);
  const other = await env.request('GET', '/v1/phone-numbers', { key: k.apiKey });
  t.equal(other.status, 429, 'the limit is per key across routes');
  const sibling = await env.request('GET', '/v1/account', { key: org.api_key });
  t.equal(sibling.status, 200, 'another key of the same organization has its own budget');
});

t.test('the 121st request of a demo key is 429', async (t) => {
  const k = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['account:read'], isDemo: true });
  const first = await env.request('GET', '/v1/account', { key: k.apiKey });
  t.equal(first.body.data.is_demo, true);
  t.equal(rateHeaders(t, first, Date.now() - 1000).limit, 120, 'a demo key has 120 per minute');
  const statuses = await burst(k.apiKey, 119);
  t.ok(statuses.every((s) => s === 200), 'requests 2..120 pass');
  const sent = Date.now();
  assert429(t, await env.request('GET', '/v1/account', { key: k.apiKey }), sent, 120);
});

t.test('an operator-set per-key limit (admin key create --rate-limit)', async (t) => {
  const cli = await runAdmin(env.env, ['key', 'create', '--org', org.organization_id, '--scopes', 'account:read', '--rate-limit', '7']);
  t.equal(cli.code, 0, cli.stderr);
  const { api_key } = JSON.parse(cli.stdout);
  const me = await env.request('GET', '/v1/me', { key: api_key });
  t.equal(me.body.data.api_key.rate_limit_per_minute, 7);
  t.equal(rateHeaders(t, me, Date.now() - 1000).limit, 7);
  const statuses = await burst(api_key, 6);
  t.ok(statuses.every((s) => s === 200), 'requests 2..7 pass');
  const sent = Date.now();
  assert429(t, await env.request('GET', '/v1/account', { key: api_key }), sent, 7);

  const demo = await runAdmin(env.env, ['key', 'create', '--org', org.organization_id, '--demo', '--rate-limit', '300']);
  t.equal(demo.code, 0, demo.stderr);
  const r = await env.request('GET', '/v1/account', { key: JSON.parse(demo.stdout).api_key });
  t.equal(r.headers['x-ratelimit-limit'], '300', 'the operator limit overrides the demo default');
});

t.test('the window resets: a new window starts with a full budget', async (t) => {
  const k = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['account:read'], rateLimitPerMinute: 2 });
  await burst(k.apiKey, 2);
  t.equal((await env.request('GET', '/v1/account', { key: k.apiKey })).status, 429);
  // Shorten the current window in Redis instead of waiting a minute.
  const counter = `${env.config.redisPrefix}:rl:key:${k.apiKeyId}`;
  t.equal(await env.redis.pexpire(counter, 1), 1, 'the counter lives under the key id');
  const r = await eventually(async () => {
    const x = await env.request('GET', '/v1/account', { key: k.apiKey });
    return x.status === 200 ? x : null;
  });
  t.equal(r.headers['x-ratelimit-remaining'], '1');
});

t.test('one count shared by every gateway replica', async (t) => {
  const second = await startGateway(env.config, createLogger('gateway', 'warn'));
  t.teardown(() => second.stop());
  const k = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['account:read'], rateLimitPerMinute: 10 });
  const viaFirst = await burst(k.apiKey, 5);
  const viaSecond = await pool(Array.from({ length: 5 }), 5, async () => (await httpCall(second.url, 'GET', '/v1/account', { key: k.apiKey })).status);
  t.ok([...viaFirst, ...viaSecond].every((s) => s === 200), '10 requests over two replicas pass');
  t.equal((await httpCall(second.url, 'GET', '/v1/account', { key: k.apiKey })).status, 429, 'the 11th is refused by replica 2');
  t.equal((await env.request('GET', '/v1/account', { key: k.apiKey })).status, 429, 'and by replica 1');
});
