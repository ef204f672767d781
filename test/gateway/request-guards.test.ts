// Rules every route obeys, checked over the gateway's whole route table (a route added later is covered without
// touching this file): NUL (U+0000) in path ids, query values and every string of a body, and an unpaired surrogate
// in every string of a body, is 400 validation_error naming the field; an undecodable path id is 400 on its own route
// (never 405); numeric ids and query numbers are exact decimal; __proto__ / constructor / toString / hasOwnProperty
// keys are plain data, named in `fields`. The public raw routes (Optimize tag and collector, softphone page, LiveKit
// webhook) answer the same inputs with their own documented 4xx, never a 500 or an error log line.
import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import type { TSchema } from '@sinclair/typebox';
import { ParticipantInfo, ParticipantInfo_Kind } from '@livekit/protocol';
import { AccessToken, WebhookEvent } from 'livekit-server-sdk';
import { pino } from 'pino';
import t from 'tap';
import { startGateway } from '../../gateway/start.ts';
import { loadConfig } from '../../shared/config.ts';
import { SCOPES } from '../../shared/scopes.ts';
import { NUL_MESSAGE, SURROGATE_MESSAGE, UNDECODABLE_MESSAGE } from '../../gateway/http/request-guards.ts';
import type { AnyRoute } from '../../gateway/http/types.ts';
import { httpCall, testEnv, type Response } from '../helpers/env.ts';
import type { TapTest } from '../helpers/pool.ts';

const env = await testEnv(t);
const org = await env.bootstrap();
// Every scope (compliance:write too, which no key gets by default), and room for the few hundred requests below.
const { apiKey: key } = await env.createKey({
  organizationId: org.organization_id, userId: org.user_id, scopes: [...SCOPES], rateLimitPerMinute: 100_000,
});
const routes: AnyRoute[] = env.gateway!.gateway.router.routes;
const PROTO_KEYS = ['__proto__', 'constructor', 'toString', 'hasOwnProperty'];

const paramNames = (r: AnyRoute) => [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
const fill = (r: AnyRoute, values: Record<string, string>) => r.path.replace(/\{(\w+)\}/g, (_, n) => values[n] ?? '1');
const schemaProps = (s: TSchema | undefined): Record<string, TSchema> => (s as { properties?: Record<string, TSchema> })?.properties ?? {};

/** Paths (as the validator names them) of every string a body schema accepts, with a body holding only it. */
function stringLeaves(schema: TSchema, at: string[] = []): string[][] {
  const s = schema as { type?: string; anyOf?: TSchema[]; items?: TSchema };
  if (s.type === 'string') return [at];
  if (s.type === 'object') return Object.entries(schemaProps(schema)).flatMap(([k, p]) => stringLeaves(p, [...at, k]));
  if (s.type === 'array' && s.items) return stringLeaves(s.items, [...at, '0']);
  if (s.anyOf) return stringLeaves(s.anyOf.find((b) => ['string', 'object', 'array'].includes((b as { type?: string }).type ?? '')) ?? {} as TSchema, at);
  return [];
}
const fieldName = (path: string[]) => path.reduce((acc, seg) => (/^\d+$/.test(seg) ? `${acc}[${seg}]` : acc ? `${acc}.${seg}` : seg), '');
function bodyAt(path: string[], leaf: unknown): unknown {
  if (!path.length) return leaf;
  const [head, ...rest] = path;
  return /^\d+$/.test(head) ? [bodyAt(rest, leaf)] : { [head]: bodyAt(rest, leaf) };
}

function rejected(t: TapTest, r: Response, field: string, message: string | RegExp, why: string) {
  t.equal(r.status, 400, r.status === 400 ? `${why}: 400` : `${why}: 400 (got ${r.status} ${r.text.slice(0, 200)})`);
  t.equal(r.body?.error?.code, 'validation_error', `${why}: validation_error`);
  const fields = r.body?.error?.fields;
  t.ok(fields && Object.prototype.hasOwnProperty.call(fields, field), `${why}: fields names ${JSON.stringify(field)} (${JSON.stringify(fields)})`);
  if (fields && Object.prototype.hasOwnProperty.call(fields, field)) {
    if (typeof message === 'string') t.equal(fields[field], message, `${why}: message`);
    else t.match(fields[field], message, `${why}: message`);
  }
}

const send = (r: AnyRoute, path: string, o: { body?: unknown; rawBody?: string } = {}) =>
  env.request(r.method, path, { key, ...(o.rawBody !== undefined ? { rawBody: o.rawBody, headers: { 'content-type': 'application/json' } } : o) });

const counts = () => env.db.one(`SELECT (SELECT count(*) FROM agents)::int AS agents,
  (SELECT count(*) FROM webhook_subscriptions)::int AS subscriptions, (SELECT count(*) FROM phone_numbers)::int AS numbers,
  (SELECT count(*) FROM calls)::int AS calls`);
const before = await counts();

t.test('the route table is the gateway\'s', async (t) => {
  t.ok(routes.length >= 20, `${routes.length} routes`);
  t.ok(routes.some((r) => r.path === '/v1/agents/{id}'), 'includes parameterised routes');
});

t.test('NUL and undecodable bytes in path ids: 400 naming the id, on the matched route', async (t) => {
  for (const r of routes) {
    for (const name of paramNames(r)) {
      for (const [raw, message] of [['%00', NUL_MESSAGE], ['a%00b', NUL_MESSAGE], ['%ff', UNDECODABLE_MESSAGE],
        ['%E0%A4%A', UNDECODABLE_MESSAGE], ['%', UNDECODABLE_MESSAGE]] as const) {
        const res = await send(r, fill(r, { [name]: raw }), r.body ? { body: {} } : {});
        rejected(t, res, name, message, `${r.method} ${r.path} with ${name}=${raw}`);
        t.notOk(res.headers.allow, 'not a 405');
      }
    }
  }
});

t.test('numeric path ids are exact decimal', async (t) => {
  for (const r of routes) {
    for (const [name, schema] of Object.entries(schemaProps(r.params))) {
      if ((schema as { type?: string }).type !== 'integer') continue;
      for (const raw of ['0x10', '%20%2010', '10%20', '1e1', '+10', '10.0', '0b1', '9007199254740993', '']) {
        if (raw === '') continue; // an empty segment does not match the route at all
        rejected(t, await send(r, fill(r, { [name]: raw }), r.body ? { body: {} } : {}), name, /decimal integer/,
          `${r.method} ${r.path} with ${name}=${raw}`);
      }
    }
  }
  const ok = await env.request('GET', '/v1/phone-numbers/999999', { key });
  t.equal(ok.status, 404, 'a well-formed id that does not exist is not_found');
});

t.test('NUL in query values, numbers in the query are exact decimal', async (t) => {
  for (const r of routes) {
    const names = Object.keys(schemaProps(r.query));
    for (const name of [...names, 'note']) {
      rejected(t, await send(r, `${fill(r, {})}?${name}=a%00b`, r.body ? { body: {} } : {}), name, NUL_MESSAGE,
        `${r.method} ${r.path}?${name}=NUL`);
    }
    for (const [name, schema] of Object.entries(schemaProps(r.query))) {
      if ((schema as { type?: string }).type !== 'integer') continue;
      rejected(t, await send(r, `${fill(r, {})}?${name}=0x10`), name, /decimal integer/, `${r.method} ${r.path}?${name}=0x10`);
    }
  }
});

t.test('NUL in any string of a body', async (t) => {
  for (const r of routes.filter((x) => x.body)) {
    const leaves = stringLeaves(r.body!);
    t.ok(leaves.length, `${r.method} ${r.path} has string fields`);
    for (const leaf of leaves) {
      const field = fieldName(leaf);
      rejected(t, await send(r, fill(r, {}), { body: bodyAt(leaf, 'a\u0000b') }), field, NUL_MESSAGE, `${r.method} ${r.path} ${field}`);
    }
    rejected(t, await send(r, fill(r, {}), { body: { 'na\u0000me': 'x' } }), 'na\\u0000me', NUL_MESSAGE, `${r.method} ${r.path} NUL in a key`);
  }
  // The names the hardening issue lists.
  const agent = routes.find((r) => r.method === 'POST' && r.path === '/v1/calls')!;
  rejected(t, await send(agent, '/v1/calls', { body: { to_number: '+14155550001', agent: { name: 'A\u0000', greeting: 'Hi' } } }),
    'agent.name', NUL_MESSAGE, 'POST /v1/calls agent.name');
});

t.test('an unpaired surrogate in any string or key of a body (PostgreSQL refuses it in jsonb; text would store U+FFFD)', async (t) => {
  for (const r of routes.filter((x) => x.body)) {
    for (const leaf of stringLeaves(r.body!)) {
      const field = fieldName(leaf);
      // JSON.stringify writes an unpaired surrogate as the escape \ud800, as a client's JSON would carry it.
      for (const bad of ['a\ud800b', '\udfff']) {
        rejected(t, await send(r, fill(r, {}), { body: bodyAt(leaf, bad) }), field, SURROGATE_MESSAGE, `${r.method} ${r.path} ${field}`);
      }
    }
    rejected(t, await send(r, fill(r, {}), { body: { 'na\udc00me': 'x' } }), 'na\\udc00me', SURROGATE_MESSAGE,
      `${r.method} ${r.path} unpaired surrogate in a key`);
  }
  // The case: a jsonb column (the goal) and a text column (the name) of one Optimize test.
  const create = routes.find((r) => r.method === 'POST' && r.path === '/v1/optimize/tests')!;
  const res = await send(create, '/v1/optimize/tests', { rawBody: '{"name":"T\\ud800","page_url":"https://site.example.com/",'
    + '"goal":{"type":"cta_click","selector":"#b\\uDC00"},"variants":[{"name":"A"},{"name":"B"}]}' });
  rejected(t, res, 'name', SURROGATE_MESSAGE, 'POST /v1/optimize/tests name');
  t.equal(res.body.error.fields['goal.selector'], SURROGATE_MESSAGE, 'and goal.selector');
  // A pair (an emoji written as two escapes) is text like any other: here only the unknown field is refused.
  const agents = routes.find((r) => r.method === 'POST' && r.path === '/v1/agents')!;
  const pair = await send(agents, '/v1/agents', { rawBody: '{"name":"Bot \\ud83d\\ude00","bogus":1}' });
  t.equal(pair.status, 400);
  t.same(Object.keys(pair.body.error.fields), ['bogus'], 'the surrogate pair is not named');
});

t.test('__proto__, constructor, toString, hasOwnProperty are named as unknown fields, never a prototype', async (t) => {
  for (const r of routes) {
    for (const k of PROTO_KEYS) {
      const q = await send(r, `${fill(r, {})}?${k}=1`, r.body ? { body: {} } : {});
      rejected(t, q, k, /not a recognized/, `${r.method} ${r.path}?${k}=1`);
      if (!r.body) continue;
      rejected(t, await send(r, fill(r, {}), { rawBody: `{${JSON.stringify(k)}: "x"}` }), k, /not a recognized field/,
        `${r.method} ${r.path} body key ${k}`);
      for (const [prop, schema] of Object.entries(schemaProps(r.body))) {
        const inner = (schema as { type?: string; anyOf?: { type?: string }[] });
        if (inner.type !== 'object') continue;
        rejected(t, await send(r, fill(r, {}), { rawBody: `{"${prop}": {${JSON.stringify(k)}: {"polluted": true}}}` }),
          `${prop}.${k}`, /not a recognized field/, `${r.method} ${r.path} body key ${prop}.${k}`);
      }
    }
  }
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype untouched (in-process gateway)');
});

t.test('a GET with an undecodable id answers 400, not 405 (the issue\'s case)', async (t) => {
  const r = await env.request('GET', '/v1/agents/%ff', { key });
  rejected(t, r, 'id', UNDECODABLE_MESSAGE, 'GET /v1/agents/%ff');
  t.notOk(r.headers.allow);
});

t.test('public raw routes: NUL, unpaired surrogates and bytes that are not UTF-8 get their documented 4xx, no 500, no error log',
  async (t) => {
    // A gateway of its own: with the LiveKit webhook served, and its log lines kept to be read.
    const LK_KEY = 'APIguardtest';
    const LK_SECRET = 'guard-test-secret-0123456789-0123456789';
    const config = loadConfig({ ...process.env, ...env.env, CARRIER: 'livekit', LIVEKIT_URL: 'http://127.0.0.1:9',
      LIVEKIT_API_KEY: LK_KEY, LIVEKIT_API_SECRET: LK_SECRET, LIVEKIT_SIP_TRUNK_ID: 'ST_x' });
    let logged = '';
    const sink = new Writable({ write(chunk, _enc, done) { logged += String(chunk); done(); } });
    const g = await startGateway(config, pino({ level: 'warn' }, sink));
    t.teardown(() => g.stop());
    logged = ''; // only what the requests below cause
    const call = (method: string, path: string, o: Parameters<typeof httpCall>[3] = {}) => httpCall(g.url, method, path, o);

    const prop = (await env.request('POST', '/v1/optimize/properties', { key, body: { domain: 'guards.example.com' } })).body.data;
    const testId = '0193a4d0-5c2e-7b8a-9d41-6f3e2a1b0c98';
    const beacon = { k: prop.public_key, v: 'visitor-000001', e: [{ t: 'i', x: testId }] };
    const collect = (body: unknown) => call('POST', '/v1/optimize/collect', {
      rawBody: Buffer.isBuffer(body) ? body : JSON.stringify(body),
      headers: { 'content-type': 'text/plain;charset=UTF-8', 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0' },
    });
    const collectorCases: [string, unknown, number, string][] = [
      ['NUL in k (the issue\'s case)', { ...beacon, k: 'a\u0000b' }, 400, 'bad key'],
      ['NUL after a real key', { ...beacon, k: `${prop.public_key}\u0000` }, 400, 'bad key'],
      ['unpaired surrogate in k', { ...beacon, k: 'olpk_\ud800' }, 400, 'bad key'],
      ['NUL in v', { ...beacon, v: 'visitor\u0000001' }, 400, 'bad visitor id'],
      ['unpaired surrogate in v', { ...beacon, v: 'visitor-\udfff1' }, 400, 'bad visitor id'],
      ['NUL in an event kind', { ...beacon, e: [{ t: 'i\u0000', x: testId }] }, 400, 'bad event'],
      ['NUL in a test id', { ...beacon, e: [{ t: 'i', x: `${testId}\u0000` }] }, 400, 'bad event'],
      ['unpaired surrogate in a test id', { ...beacon, e: [{ t: 'g', x: `\ud800${testId.slice(1)}` }] }, 400, 'bad event'],
      ['NUL in a key name', { 'k\u0000': prop.public_key, v: beacon.v, e: beacon.e }, 400, 'bad key'],
      ['bytes that are not UTF-8 in k', Buffer.concat([Buffer.from('{"k":"olpk_'), Buffer.from([0xff, 0xfe]), Buffer.from('","v":"visitor-000001","e":[]}')]), 400, 'bad key'],
      ['a raw NUL byte', Buffer.from(`{"k":"${prop.public_key}\u0000"}`), 400, 'not JSON'],
      ['an unknown field holding NUL (never read)', { ...beacon, pad: 'a\u0000\ud800' }, 202, ''],
    ];
    for (const [why, body, status, reason] of collectorCases) {
      const r = await collect(body);
      t.equal(r.status, status, `collector, ${why}: ${status} (got ${r.status} ${r.text.slice(0, 120)})`);
      t.match(r.headers['content-type'], /^application\/json/, `collector, ${why}: JSON`);
      if (reason) t.same(r.body, { status, accepted: 0, ignored: 0, reason }, `collector, ${why}: reason`);
    }

    for (const k of ['a%00b', `${prop.public_key}%00`, 'olpk_%ED%A0%80', 'olpk_%F0%28', '%C0%80']) {
      const r = await call('GET', `/v1/optimize/tag.js?k=${k}`);
      t.equal(r.status, 404, `tag.js?k=${k}: 404`);
      t.equal(r.text, '/* unknown property key */\n', `tag.js?k=${k}: the documented comment`);
    }

    for (const path of ['/softphone?ticket=%00', '/softphone?ticket=%ED%A0%80', '/softphone/sdk.js?v=%00%ff']) {
      t.equal((await call('GET', path)).status, 200, `${path}: the page (its query is read by the browser only)`);
    }

    // The webhook verifies LiveKit's signature first: anything unsigned is 401 whatever it holds; a signed event's
    // text only names jobs and Redis keys (the leg identity must match <call id>-<role>), never a PostgreSQL value,
    // and the SDK refuses a signed event holding an unpaired surrogate ("invalid UTF8"): 401 like any bad delivery.
    const signed = async (id: string, identity: string) => {
      const ev = new WebhookEvent({ id, createdAt: BigInt(1_800_000_000), room: { name: 'call-0190a4a4-0000-7000-8000-0000000000aa' },
        participant: new ParticipantInfo({ identity, kind: ParticipantInfo_Kind.SIP, attributes: { 'sip.callStatus': 'ringing' } }) } as never);
      ev.event = 'participant_joined';
      const body = JSON.stringify(ev.toJson());
      const at = new AccessToken(LK_KEY, LK_SECRET);
      at.sha256 = createHash('sha256').update(body).digest('base64');
      return { body, auth: await at.toJwt() };
    };
    const hook = (body: string, auth: string) => call('POST', '/v1/carriers/livekit/webhook', {
      rawBody: body, headers: { authorization: auth, 'content-type': 'application/webhook+json' } });
    const leg = '0190a4a4-0000-7000-8000-0000000000aa-destination';
    const unsigned = await hook(JSON.stringify({ event: 'participant_joined\u0000', id: 'EV_\ud800' }), '');
    t.equal(unsigned.status, 401, 'webhook, unsigned with NUL and a surrogate: 401');
    t.equal(unsigned.body?.error?.code, 'unauthorized');
    for (const [why, id, identity, mapped] of [['NUL in the event id', 'EV_a\u0000b', leg, true],
      ['NUL in the identity', 'EV_c', `${leg}\u0000`, false]] as const) {
      const { body, auth } = await signed(id, identity);
      const r = await hook(body, auth);
      t.equal(r.status, 200, `webhook, signed, ${why}: 200 (got ${r.status} ${r.text.slice(0, 120)})`);
      t.same(r.body, { received: true, mapped }, `webhook, signed, ${why}: mapped ${mapped}`);
    }
    for (const [why, id, identity] of [['an unpaired surrogate in the event id', 'EV_\ud800', leg],
      ['an unpaired surrogate in the identity', 'EV_d', `\udc00${leg}`]] as const) {
      const { body, auth } = await signed(id, identity);
      const r = await hook(body, auth);
      t.equal(r.status, 401, `webhook, signed, ${why}: 401 (got ${r.status} ${r.text.slice(0, 120)})`);
      t.equal(r.body?.error?.code, 'unauthorized');
    }

    const errors = logged.split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((l) => l.level >= 50);
    t.same(errors, [], 'no error-level log line (no stack trace)');
  });

t.test('nothing was written, nothing was a 500', async (t) => {
  t.same(await counts(), before);
  const metrics = await httpCall(env.gateway!.metricsUrl, 'GET', '/metrics');
  t.match(metrics.text, /http_requests_total\{/, 'the scrape answered the request counters');
  t.notMatch(metrics.text, /http_requests_total\{[^}]*status="5\d\d"/, 'no 5xx recorded');
});
