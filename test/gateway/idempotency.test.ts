// Idempotency-Key on mutating requests, through a test-only POST route registered with testEnv's `plugins`: replay,
// conflict, concurrent same-key requests (one execution), failures that do not poison the key, invalid keys, scope
// per API key and the 24-hour retention.
import { Type } from '@sinclair/typebox';
import t from 'tap';
import type { Plugin, Reply } from '../../gateway/http/types.ts';
import { createAgent, type AgentRow } from '../../shared/agents/agents.ts';
import { DomainError } from '../../shared/errors.ts';
import { sha256hex } from '../../shared/ids.ts';
import { IDEMPOTENCY_RETENTION_MS } from '../../shared/idempotency/idempotency-store.ts';
import { eventually, testEnv, type Response } from '../helpers/env.ts';
import { pool } from '../helpers/pool.ts';

/** The success envelope of this file's test-only routes (checked by the suite's response check). */
const Data = Type.Object({ data: Type.Object({}) });

/** Executions per body.name; a gate that holds `wait` requests; failure modes for the first execution. */
const executions = new Map<string, number>();
let gate: Promise<void> = Promise.resolve();
let openGate: () => void = () => undefined;
const closeGate = () => { gate = new Promise((r) => { openGate = r; }); };
const ran = (name: string) => executions.get(name) ?? 0;

const widgets: Plugin = (routes) => {
  routes.add({
    method: 'POST', path: '/v1/test/widgets', scope: 'account:read', tag: 'Test', summary: 'Test-only: counts executions.',
    body: Type.Object({
      name: Type.String({ minLength: 1 }),
      size: Type.Optional(Type.Integer()),
      wait: Type.Optional(Type.Boolean()),
      fail_first: Type.Optional(Type.Union([Type.Literal('500'), Type.Literal('403')])),
    }, { additionalProperties: false }),
    response: { status: 201, schema: Data }, errors: ['forbidden'],
    handler: async ({ body, requestId }) => {
      const n = ran(body.name) + 1;
      executions.set(body.name, n);
      if (body.wait) await gate;
      if (body.fail_first && n === 1) {
        if (body.fail_first === '500') throw new Error('simulated crash on the first attempt');
        throw new DomainError('forbidden', 'simulated refusal on the first attempt');
      }
      return { status: 201, body: { data: { name: body.name, size: body.size ?? null, execution: n, created_by: requestId } },
        headers: { Location: `/v1/test/widgets/${body.name}` } };
    },
  });
  // A durable effect: an agent row, with the request's idempotency record in the same transaction.
  routes.add({
    method: 'POST', path: '/v1/test/agents', scope: 'account:read', tag: 'Test', summary: 'Test-only: a transactional effect.',
    body: Type.Object({ name: Type.String({ minLength: 1 }), wait: Type.Optional(Type.Boolean()) }, { additionalProperties: false }),
    response: { status: 201, schema: Data },
    handler: async (ctx) => {
      executions.set(ctx.body.name, ran(ctx.body.name) + 1);
      if (ctx.body.wait) await gate;
      const reply = (a: AgentRow) => ({ status: 201, body: { data: { id: a.id, created_by: ctx.requestId } } });
      return reply(await createAgent(ctx.deps.db, ctx.principal.organizationId, { name: ctx.body.name }, ctx.idempotent(reply)));
    },
  });
};

/** A second gate, for the attempt that must run after the first one committed. */
let gate2: Promise<void> = Promise.resolve();
let openGate2: () => void = () => undefined;
const closeGate2 = () => { gate2 = new Promise((r) => { openGate2 = r; }); };

// An effect that refuses a duplicate with 409 (as a subscription of a URL already subscribed, or a number already
// held, do): an attempt that runs after its twin committed conflicts with the twin's own effect.
const uniqueAgents: Plugin = (routes) => {
  routes.add({
    method: 'POST', path: '/v1/test/unique-agents', scope: 'account:read', tag: 'Test', summary: 'Test-only: refuses a duplicate name.',
    body: Type.Object({ name: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
    response: { status: 201, schema: Data }, errors: ['subscription_exists'],
    handler: async (ctx) => {
      executions.set(ctx.body.name, ran(ctx.body.name) + 1);
      await gate; // the gate current when the attempt arrives
      const taken = await ctx.deps.db.oneOrNone('SELECT id FROM agents WHERE organization_id = $1 AND name = $2 AND deleted_at IS NULL',
        [ctx.principal.organizationId, ctx.body.name]);
      if (taken) throw new DomainError('subscription_exists', `${ctx.body.name} exists.`, { fields: { name: 'exists' } });
      const reply = (a: AgentRow) => ({ status: 201, body: { data: { id: a.id } } });
      return reply(await createAgent(ctx.deps.db, ctx.principal.organizationId, { name: ctx.body.name }, ctx.idempotent(reply)));
    },
  });
};

const env = await testEnv(t, { plugins: [widgets, uniqueAgents] });
const org = await env.bootstrap({ scopes: ['account:read'] });
let seq = 0;
const fresh = (p: string) => `${p}-${++seq}-${Date.now()}`;
const post = (body: unknown, idem?: string, key = org.api_key, raw?: string) => env.request('POST', '/v1/test/widgets', {
  key, body: raw === undefined ? body : undefined, rawBody: raw,
  headers: { ...(idem !== undefined ? { 'idempotency-key': idem } : {}), ...(raw !== undefined ? { 'content-type': 'application/json' } : {}) },
});

function conflict(t: { equal: Function; ok: Function }, r: Response, original: string, why: string) {
  t.equal(r.status, 409, `${why}: 409`);
  t.equal(r.body?.error?.code, 'idempotency_conflict', `${why}: idempotency_conflict`);
  t.equal(r.body?.error?.fields?.conflicts_with, original, `${why}: conflicts_with is the original request id`);
}

t.test('without a key every POST executes', async (t) => {
  const name = fresh('plain');
  t.equal((await post({ name })).status, 201);
  t.equal((await post({ name })).status, 201);
  t.equal(ran(name), 2);
});

t.test('replay: same key and body return the stored response verbatim', async (t) => {
  const name = fresh('replay');
  const idem = fresh('idem');
  const first = await post({ name, size: 3 }, idem);
  t.equal(first.status, 201);
  t.notOk(first.headers['idempotency-replay'], 'the first response is not a replay');
  const originalId = first.headers['x-request-id'];
  t.equal(first.body.data.created_by, originalId);

  for (let i = 0; i < 2; i++) {
    const again = await post({ name, size: 3 }, idem);
    t.equal(again.status, 201, 'same status');
    t.equal(again.text, first.text, 'byte-identical body');
    t.equal(again.headers['idempotency-replay'], 'true');
    t.equal(again.headers.location, first.headers.location, 'the handler\'s headers are replayed too');
    t.ok(again.headers['x-request-id'] && again.headers['x-request-id'] !== originalId, 'the replay has its own request id');
  }
  const reordered = await post({ size: 3, name }, idem, org.api_key, `{ "size": 3, "name": ${JSON.stringify(name)} }`);
  t.equal(reordered.headers['idempotency-replay'], 'true', 'the same parameters in another order and spacing are the same request');
  t.equal(ran(name), 1, 'executed once');
});

t.test('conflict: same key with a different body is 409 idempotency_conflict', async (t) => {
  const name = fresh('conflict');
  const idem = fresh('idem');
  const first = await post({ name, size: 1 }, idem);
  t.equal(first.status, 201);
  const original = first.headers['x-request-id'];
  conflict(t, await post({ name, size: 2 }, idem), original, 'different size');
  conflict(t, await post({ name: `${name}-x`, size: 1 }, idem), original, 'different name');
  t.equal(ran(name), 1, 'the conflicting requests did not execute');
  t.equal((await post({ name, size: 1 }, idem)).headers['idempotency-replay'], 'true', 'the original still replays');
});

t.test('the key is scoped to the API key', async (t) => {
  const other = await env.createKey({ organizationId: org.organization_id, userId: org.user_id, scopes: ['account:read'] });
  const name = fresh('scoped');
  const idem = fresh('idem');
  t.equal((await post({ name }, idem)).status, 201);
  const r = await post({ name }, idem, other.apiKey);
  t.equal(r.status, 201);
  t.notOk(r.headers['idempotency-replay'], 'another key does not see the first key\'s record');
  t.equal(ran(name), 2);
});

t.test('concurrent requests with one key execute once', async (t) => {
  const name = fresh('concurrent');
  const idem = fresh('idem');
  closeGate();
  t.teardown(() => openGate());
  const N = 8;
  const results: (Response | null)[] = new Array(N).fill(null);
  const all = Promise.all(Array.from({ length: N }, (_, i) => post({ name, wait: true }, idem).then((r) => { results[i] = r; })));
  // Every request but the one that claimed the key answers while the claimant is still held at the gate.
  await eventually(async () => results.filter(Boolean).length === N - 1 && ran(name) === 1);
  const early = results.filter((r): r is Response => r !== null);
  t.equal(ran(name), 1, 'only one execution started');
  openGate();
  await all;
  const winner = results.find((r) => r!.status === 201)!;
  t.ok(winner, 'the claimant succeeded');
  t.equal(results.filter((r) => r!.status === 201).length, 1, 'exactly one 201');
  for (const r of early) {
    conflict(t, r, winner.headers['x-request-id'], 'request while the first runs');
    t.match(r.headers['retry-after'], /^\d+$/, 'tells the client when to retry');
  }
  const retry = await post({ name, wait: true }, idem);
  t.equal(retry.status, 201);
  t.equal(retry.headers['idempotency-replay'], 'true', 'a retry after completion gets the stored response');
  t.equal(retry.text, winner.text);
  t.equal(ran(name), 1, 'one execution in all');
});

t.test('a failed first attempt does not poison the key', async (t) => {
  for (const mode of ['500', '403'] as const) {
    const name = fresh(`fail${mode}`);
    const idem = fresh('idem');
    const first = await post({ name, fail_first: mode }, idem);
    t.equal(first.status, Number(mode), `first attempt fails with ${mode}`);
    t.equal(first.body.error.code, mode === '500' ? 'internal_error' : 'forbidden');
    const second = await post({ name, fail_first: mode }, idem);
    t.equal(second.status, 201, 'the retry with the same key executes');
    t.notOk(second.headers['idempotency-replay']);
    t.equal(second.body.data.execution, 2);
    const third = await post({ name, fail_first: mode }, idem);
    t.equal(third.headers['idempotency-replay'], 'true', 'and its success is then stored');
    t.equal(third.text, second.text);
    t.equal(ran(name), 2);
  }

  const name = fresh('invalid-first');
  const idem = fresh('idem');
  const bad = await post({ name, size: 'big' }, idem);
  t.equal(bad.status, 400, 'a request that fails validation');
  const good = await post({ name, size: 5 }, idem);
  t.equal(good.status, 201, 'does not claim the key: a corrected body runs, no conflict');
  t.equal(ran(name), 1);
});

t.test('two attempts past a lost claim: one commits, the other rolls back and replays it', async (t) => {
  const name = fresh('durable');
  const idem = fresh('idem');
  const record = `${env.config.redisPrefix}:idem:${org.api_key_id}:${sha256hex(idem)}`;
  const send = () => env.request('POST', '/v1/test/agents', { key: org.api_key, body: { name, wait: true }, headers: { 'idempotency-key': idem } });
  closeGate();
  const a = send();
  await eventually(async () => ran(name) === 1);
  // The claim disappears while the first attempt still runs (as when a lease lapses under a slow request).
  await env.redis.del(record);
  const b = send();
  await eventually(async () => ran(name) === 2);
  openGate();
  const [ra, rb] = await Promise.all([a, b]);
  t.equal(ra.status, 201);
  t.equal(rb.status, 201);
  t.equal(ra.text, rb.text, 'both answer the committed response');
  t.equal([ra, rb].filter((r) => r.headers['idempotency-replay'] === 'true').length, 1, 'the loser\'s answer is a replay');
  const rows = await env.db.any('SELECT id FROM agents WHERE organization_id = $1 AND name = $2 AND deleted_at IS NULL', [org.organization_id, name]);
  t.same(rows.map((r) => r.id), [ra.body.data.id], 'one agent row: the loser\'s transaction rolled back');
  const later = await send();
  t.equal(later.text, ra.text, 'a later retry replays it too');
  t.equal(ran(name), 2, 'and does not execute');
});

t.test('an attempt refused (409) because its twin with the same key committed first replays the twin', async (t) => {
  const name = fresh('twin');
  const idem = fresh('idem');
  const record = `${env.config.redisPrefix}:idem:${org.api_key_id}:${sha256hex(idem)}`;
  closeGate();
  closeGate2();
  const a = env.request('POST', '/v1/test/unique-agents', { key: org.api_key, body: { name }, headers: { 'idempotency-key': idem } });
  await eventually(async () => ran(name) === 1);
  await env.redis.del(record); // the first claim lapses while it still runs
  // The second attempt (same key, same body) passes the claim before the first commits, and waits on a gate of its
  // own, so it checks for a duplicate only after the first committed.
  gate = gate2;
  const b = env.request('POST', '/v1/test/unique-agents', { key: org.api_key, body: { name }, headers: { 'idempotency-key': idem } });
  await eventually(async () => ran(name) === 2);
  openGate();
  const ra = await a;
  t.equal(ra.status, 201, 'the first attempt committed');
  openGate2();
  const rb = await b;
  t.equal(rb.status, 201, 'the second answers the committed 201, not its own 409');
  t.equal(rb.headers['idempotency-replay'], 'true');
  t.equal(rb.text, ra.text, 'the same response');
  const rows = await env.db.any('SELECT id FROM agents WHERE organization_id = $1 AND name = $2 AND deleted_at IS NULL', [org.organization_id, name]);
  t.equal(rows.length, 1, 'one row');
  // Without a twin a 409 stays a 409.
  const other = await env.request('POST', '/v1/test/unique-agents', { key: org.api_key, body: { name }, headers: { 'idempotency-key': fresh('idem') } });
  t.equal(other.status, 409, 'a new key hitting the duplicate is refused');
});

t.test('a committed effect whose Redis record was lost replays from PostgreSQL', async (t) => {
  const name = fresh('lost');
  const idem = fresh('idem');
  const send = () => env.request('POST', '/v1/test/agents', { key: org.api_key, body: { name }, headers: { 'idempotency-key': idem } });
  const first = await send();
  t.equal(first.status, 201);
  await env.redis.del(`${env.config.redisPrefix}:idem:${org.api_key_id}:${sha256hex(idem)}`);
  const again = await send();
  t.equal(again.status, 201);
  t.equal(again.text, first.text, 'the original response');
  t.equal(again.headers['idempotency-replay'], 'true');
  t.equal(ran(name), 1, 'not executed again');
  const other = await env.request('POST', '/v1/test/agents', { key: org.api_key, body: { name: `${name}-x` }, headers: { 'idempotency-key': idem } });
  conflict(t, other, first.headers['x-request-id'], 'another body against the durable record');
});

t.test('invalid Idempotency-Key values are 400 validation_error naming the header', async (t) => {
  const name = fresh('badkey');
  const cases: Record<string, string> = {
    empty: '',
    'too long (256)': 'k'.repeat(256),
    'contains a space': 'has space',
    // Non-ASCII bytes inside the value. (uWebSockets.js trims bytes >= 0x80 at the very end of a header value as if
    // they were whitespace, so a key ending in them reaches the gateway shortened; they are tested mid-value.)
    'non-ASCII (latin1 byte)': 'caf\u00e9-key',
    'non-ASCII (UTF-8 bytes)': Buffer.from('caf\u00e9-key', 'utf8').toString('latin1'),
    'control character': 'tab\there',
  };
  for (const [why, value] of Object.entries(cases)) {
    const r = await post({ name }, value);
    t.equal(r.status, 400, `${why}: 400`);
    t.equal(r.body?.error?.code, 'validation_error', `${why}: validation_error`);
    t.ok(r.body?.error?.fields?.['Idempotency-Key'], `${why}: fields names Idempotency-Key`);
  }
  t.equal(ran(name), 0, 'none executed');
  const max = await post({ name }, 'K'.repeat(255));
  t.equal(max.status, 201, '255 printable characters are fine');
});

t.test('records are kept 24 hours after the first success, then the key is fresh', async (t) => {
  const name = fresh('ttl');
  const idem = fresh('idem');
  const first = await post({ name }, idem);
  t.equal(first.status, 201);
  const record = `${env.config.redisPrefix}:idem:${org.api_key_id}:${sha256hex(idem)}`;
  const ttl = await env.redis.pttl(record);
  t.ok(ttl > IDEMPOTENCY_RETENTION_MS - 60_000 && ttl <= IDEMPOTENCY_RETENTION_MS, `kept 24 hours (pttl ${ttl})`);
  t.equal(IDEMPOTENCY_RETENTION_MS, 24 * 3600_000);
  // Let the record lapse instead of waiting a day.
  await env.redis.pexpire(record, 1);
  const after = await eventually(async () => {
    const r = await post({ name, size: 9 }, idem);
    return r.status === 201 ? r : null;
  });
  t.notOk(after.headers['idempotency-replay'], 'after expiry the key is treated as fresh');
  t.equal(ran(name), 2);
});

t.test('non-mutating methods ignore Idempotency-Key', async (t) => {
  const r = await env.request('GET', '/v1/account', { key: org.api_key, headers: { 'idempotency-key': 'x' } });
  t.equal(r.status, 200);
  const again = await env.request('GET', '/v1/account', { key: org.api_key, headers: { 'idempotency-key': 'x' } });
  t.notOk(again.headers['idempotency-replay']);
});

t.test('many different keys in parallel each execute once', async (t) => {
  const base = fresh('parallel');
  const res = await pool(Array.from({ length: 20 }, (_, i) => i), 10, (i) => post({ name: `${base}-${i % 5}` }, `${base}-idem-${i % 5}`));
  t.equal(res.filter((r) => r.status === 201).length >= 5, true);
  for (let i = 0; i < 5; i++) t.equal(ran(`${base}-${i}`), 1, `key ${i}: one execution`);
  t.ok(res.every((r) => r.status === 201 || r.status === 409), 'every answer is a result, a replay or an in-progress 409');
});
