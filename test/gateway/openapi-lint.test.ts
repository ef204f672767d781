// The served OpenAPI document passes Redocly's linter (recommended rules, redocly.yaml) with no error and no warning:
// the document is fetched from a real gateway, written to a temporary file and linted by the @redocly/cli binary.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ROOT, testEnv } from '../helpers/env.ts';

interface Problem { ruleId: string; severity: 'error' | 'warn'; message: string; location: { pointer?: string }[] }

// With the LiveKit carrier configured, so that its webhook (served only then) is in the document too.
const env = await testEnv(t, {
  env: { CARRIER: 'livekit', LIVEKIT_URL: 'http://127.0.0.1:9', LIVEKIT_API_KEY: 'APIlinttest', LIVEKIT_API_SECRET: 'lint-test-secret-0123456789-0123456789',
    LIVEKIT_SIP_TRUNK_ID: 'ST_x' },
});
const res = await env.request('GET', '/v1/openapi.json');
const dir = await mkdtemp(join(tmpdir(), 'openapi-lint-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

/** Runs `redocly lint --format=json` on a document; its problems (the CLI exits non-zero when there are errors). */
async function lint(doc: unknown): Promise<Problem[]> {
  const file = join(dir, `openapi-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(file, JSON.stringify(doc));
  const bin = join(ROOT, 'node_modules', '.bin', 'redocly');
  const out = await new Promise<string>((resolve, reject) => {
    execFile(bin, ['lint', file, '--format=json', `--config=${join(ROOT, 'redocly.yaml')}`],
      { cwd: dir, maxBuffer: 64 * 1024 * 1024, timeout: 170_000, env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } },
      (err, stdout, stderr) => {
        const start = stdout.indexOf('{');
        if (start < 0) reject(new Error(`redocly printed no JSON (exit ${err?.code ?? 0}): ${stderr.slice(0, 2000)}`));
        else resolve(stdout.slice(start));
      });
  });
  return (JSON.parse(out) as { problems: Problem[] }).problems;
}

const show = (ps: Problem[]) => ps.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? '?'}`).join('\n');

t.test('the served document lints clean', async (t) => {
  t.equal(res.status, 200);
  const problems = await lint(res.body);
  t.same(show(problems.filter((p) => p.severity === 'error')), '', 'no errors');
  t.same(show(problems.filter((p) => p.severity === 'warn')), '', 'no warnings');
});

t.test('the linter catches a broken document (the check can fail)', async (t) => {
  const broken = structuredClone(res.body);
  const [path] = Object.keys(broken.paths);
  const method = Object.keys(broken.paths[path])[0];
  delete broken.paths[path][method].description;
  broken.paths[path][method].responses['200'] = { $ref: '#/components/responses/Missing' };
  // An example that does not match its schema.
  broken.paths['/v1/calls/dial'].post.requestBody.content['application/json'].example = { to_number: 12125550187, extra: true };
  const problems = await lint(broken);
  t.ok(problems.some((p) => p.severity === 'error' && p.ruleId === 'no-unresolved-refs'), `unresolved ref reported:\n${show(problems)}`);
  t.ok(problems.some((p) => p.severity === 'error' && p.ruleId === 'operation-description'), 'missing description reported');
  t.ok(problems.some((p) => p.severity === 'error' && p.ruleId === 'no-invalid-media-type-examples'), 'invalid example reported');
});

/** Paths (JSON pointers) of object properties without a description, anywhere under a schema. */
function undescribed(schema: any, at: string, out: string[] = []): string[] {
  if (!schema || typeof schema !== 'object') return out;
  for (const [name, prop] of Object.entries<any>(schema.properties ?? {})) {
    if (!prop?.description && !prop?.$ref) out.push(`${at}/properties/${name}`);
    undescribed(prop, `${at}/properties/${name}`, out);
  }
  if (schema.items) undescribed(schema.items, `${at}/items`, out);
  for (const k of ['anyOf', 'oneOf', 'allOf'] as const) (schema[k] ?? []).forEach((s: unknown, i: number) => undescribed(s, `${at}/${k}/${i}`, out));
  return out;
}

t.test('every operation has a summary, a description, examples and its error codes with their meanings', async (t) => {
  const doc = res.body;
  const missing: string[] = [];
  for (const [path, ops] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(ops)) {
      const label = `${method.toUpperCase()} ${path}`;
      if (!op.summary || !(op.description?.length > 40)) missing.push(`${label}: summary/description`);
      const body = op.requestBody?.content?.['application/json'];
      if (body) {
        if (body.example === undefined) missing.push(`${label}: request example`);
        missing.push(...undescribed(body.schema, `${label} request`));
      }
      for (const [status, r] of Object.entries<any>(op.responses)) {
        const json = r.content?.['application/json'];
        if (status.startsWith('2') && json) {
          if (json.example === undefined) missing.push(`${label}: ${status} example`);
          missing.push(...undescribed(json.schema, `${label} ${status}`));
        }
        if (/^[45]/.test(status) && json && json.schema?.$ref !== '#/components/schemas/Error') {
          // A public route's own JSON (the collector's): an example and a described schema, like a success.
          if (json.example === undefined) missing.push(`${label}: ${status} example`);
          missing.push(...undescribed(json.schema, `${label} ${status}`));
        } else if (/^[45]/.test(status) && json) {
          // Each listed code is explained in the description and has an example envelope.
          const codes = Object.keys(json.examples ?? {});
          if (!codes.length) missing.push(`${label}: ${status} lists no codes`);
          for (const c of codes) if (!new RegExp(`\`${c}\`: \\S`).test(r.description)) missing.push(`${label}: ${status} ${c} meaning`);
        }
      }
      for (const p of op.parameters ?? []) if (!p.$ref && !p.description) missing.push(`${label}: parameter ${p.name}`);
    }
  }
  missing.push(...undescribed(doc.components.schemas.Error, 'components Error'));
  t.same(missing, [], 'nothing missing');
  t.ok(doc.info.description.length > 500, 'info.description is a guide');
  for (const h of ['## Authentication', '## Envelopes', '## Pagination', '## Idempotency', '## Rate limits', '## Errors']) {
    t.ok(doc.info.description.includes(h), `guide has ${h}`);
  }
  for (const tag of doc.tags) t.ok(tag.description, `tag ${tag.name} described`);
});

t.test('error codes per operation: the pipeline\'s and the route\'s own', async (t) => {
  const doc = res.body;
  const codesOf = (path: string, method: string) => Object.values<any>(doc.paths[path][method].responses)
    .flatMap((r) => Object.keys(r.content?.['application/json']?.examples ?? {}));
  const dial = codesOf('/v1/calls/dial', 'post');
  for (const c of ['validation_error', 'unauthorized', 'scope_missing', 'rate_limited', 'internal_error', 'idempotency_conflict',
    'destination_missing', 'destination_invalid', 'channel_limit_exceeded', 'spend_cap_reached', 'forbidden']) t.ok(dial.includes(c), `dial lists ${c}`);
  t.notOk(dial.includes('not_found'), 'dial (no id in the path) does not list not_found');
  const getCall = codesOf('/v1/calls/{id}', 'get');
  t.ok(getCall.includes('not_found'), 'an id route lists not_found');
  t.ok(getCall.includes('service_unavailable') && dial.includes('service_unavailable'), 'every pipeline route lists service_unavailable (a store outage)');
  t.match(doc.paths['/v1/calls/{id}'].get.responses['503'].description, /`service_unavailable`: .*database or Redis cannot be reached/);
  t.notOk(getCall.includes('idempotency_conflict'), 'a GET does not list idempotency_conflict');
  t.ok(codesOf('/v1/calls/{id}/transcript', 'get').includes('content_policy_forbidden'));
  t.ok(codesOf('/v1/phone-numbers', 'post').includes('number_unavailable'));
  t.ok(codesOf('/api/v1/webhook_subscriptions', 'post').includes('subscription_exists'));
  t.match(doc.paths['/v1/calls/dial'].post.responses['409'].description, /`channel_limit_exceeded`: .*channel limit/);
  const forbidden = doc.paths['/v1/calls/dial'].post.responses['403'].description as string;
  const line = (c: string) => forbidden.split('\n').find((l) => l.startsWith(`- \`${c}\``)) ?? '';
  t.match(line('outside_call_window'), /\*\*Retryable\*\*/, 'a retryable code says so (the reference\'s Retryable column)');
  t.notMatch(line('destination_blocked'), /Retryable/, 'a code that is not retryable does not');
  const lk = doc.paths['/v1/carriers/livekit/webhook'].post;
  t.same(lk.security, [{ livekitWebhook: [] }], 'the LiveKit webhook is documented with its own signature scheme');
  t.same(codesOf('/v1/carriers/livekit/webhook', 'post').sort(), ['internal_error', 'unauthorized']);
});
