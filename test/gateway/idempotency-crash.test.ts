// Idempotency across a gateway crash (real gateway processes, real SIGKILL): a retry after the call row committed
// replays the original 202 at once and never places the call twice (likewise for other transactional endpoints);
// a burst of keyed dials survives a kill; non-ASCII keys are refused.
import { connect } from 'node:net';
import t from 'tap';
import { setLimits } from '../../shared/calls/limits.ts';
import { eventually, httpCall, testEnv, type Proc, type Response } from '../helpers/env.ts';

// Claims of a killed gateway lapse after IDEMPOTENCY_LEASE_MS; shortened here so that keys whose first attempt never
// committed become retryable within the test (the default is 60 s).
const env = await testEnv(t, { gateway: false, env: { IDEMPOTENCY_LEASE_MS: '3000' } });
// Six gateway start-ups on a shared 2-core machine: allow more than the default 180 s.
t.setTimeout(360_000);
/** The gateway that serves whatever comes next (each subtest may kill it and start another). */
let live: { proc: Proc; url: string } | null = null;
t.teardown(() => live?.proc.kill());

async function gateway(extra: Record<string, string> = {}): Promise<{ proc: Proc; url: string }> {
  const proc = env.spawn('gateway', extra);
  await proc.ready();
  const url = /"url":"(http:\/\/[^"]+)"/.exec(proc.output)?.[1];
  if (!url) throw new Error(`no url in the ready line:\n${proc.output}`);
  return { proc, url };
}

async function callOrg() {
  const org = await env.bootstrap({ numbers: 1 });
  await setLimits(env.db, org.organization_id, { channel_limit: 10_000, calls_per_minute: 100_000, daily_spend_cap_cents: 100_000_000 });
  await env.db.none('UPDATE api_keys SET rate_limit_per_minute = 100000 WHERE id = $1', [org.api_key_id]);
  return { ...org, from: org.phone_numbers[0] };
}
type Org = Awaited<ReturnType<typeof callOrg>>;

const dialBody = (org: Org, i: number) => ({ from_number: org.from, to_number: `+1415555${String(1000 + i).slice(-4)}`, connect_number: '+14155550199' });
const dial = (url: string, org: Org, idem: string, body: unknown) =>
  httpCall(url, 'POST', '/v1/calls/dial', { key: org.api_key, body, headers: { 'idempotency-key': idem } });

t.test('killed after the effect committed, before the response was stored: the retry replays it at once', async (t) => {
  const org = await callOrg();
  // One transactional endpoint after another, each on a gateway that SIGKILLs itself right after the commit.
  const cases = [
    { path: '/v1/calls/dial', body: dialBody(org, 1), idOf: (d: any) => d?.call_id,
      rows: 'SELECT id::text FROM calls WHERE organization_id = $1' },
    { path: '/v1/agents', body: { name: 'Crash agent' }, idOf: (d: any) => d?.id,
      rows: 'SELECT id::text FROM agents WHERE organization_id = $1' },
    { path: '/v1/phone-numbers', body: { area_code: '212' }, idOf: (d: any) => String(d?.id),
      rows: `SELECT id::text FROM phone_numbers WHERE organization_id = $1 AND phone_number LIKE '+1212%'` },
  ];
  const send = (url: string, c: typeof cases[number], body: unknown = c.body) =>
    httpCall(url, 'POST', c.path, { key: org.api_key, body, headers: { 'idempotency-key': `crash${c.path}` } });
  const committed: string[] = [];
  for (const c of cases) {
    const doomed = await gateway({ GATEWAY_FAULT: 'kill-after-commit' });
    const answered = await send(doomed.url, c).then((r) => `${r.status} ${r.text}`, () => null);
    if (answered) doomed.proc.kill();
    t.equal(answered, null, `${c.path}: no answer, the gateway killed itself after the commit`);
    t.equal(await doomed.proc.exited, null, `${c.path}: killed by a signal`);
    const rows = await env.db.any<{ id: string }>(c.rows, [org.organization_id]);
    t.equal(rows.length, 1, `${c.path}: the effect committed before the kill`);
    committed.push(rows[0].id);
  }

  live = await gateway();
  for (const [i, c] of cases.entries()) {
    const retry = await send(live.url, c);
    t.ok(retry.status >= 200 && retry.status < 300, `${c.path}: the first retry after the restart is the original ${retry.status}, not 409 in progress`);
    t.equal(retry.headers['idempotency-replay'], 'true', `${c.path}: marked as a replay`);
    t.equal(c.idOf(retry.body?.data), committed[i], `${c.path}: of the committed row`);
    const again = await send(live.url, c);
    t.equal(again.text, retry.text, `${c.path}: replays stay byte-identical`);
    t.same((await env.db.any<{ id: string }>(c.rows, [org.organization_id])).map((r) => r.id), [committed[i]], `${c.path}: still one row`);
  }
  const other = await send(live.url, cases[0], dialBody(org, 2));
  t.equal(other.status, 409, 'the same key with another body is still a conflict');
  t.equal(other.body?.error?.code, 'idempotency_conflict');
});

t.test('SIGKILL in the middle of a burst of keyed dials: every key ends with one call row', async (t) => {
  const org = await callOrg();
  const N = 200;
  const keys = Array.from({ length: N }, (_, i) => `burst-${i}`);
  const first = live ?? await gateway();
  let answered = 0;
  let killed = false;
  const firstAnswers = new Map<number, Response>();
  let next = 0;
  // 64 clients in parallel; the gateway is killed once a quarter of the dials have been answered, with dozens in flight.
  await Promise.all(Array.from({ length: 64 }, async () => {
    while (next < N && !killed) {
      const i = next++;
      try {
        const r = await dial(first.url, org, keys[i], dialBody(org, i));
        firstAnswers.set(i, r);
        if (++answered >= N / 4 && !killed) { killed = true; first.proc.kill('SIGKILL'); }
      } catch { /* in flight at the kill */ }
    }
  }));
  await first.proc.exited;
  t.ok(firstAnswers.size >= N / 4 && firstAnswers.size < N, `killed mid-burst (${firstAnswers.size} of ${N} answered)`);

  live = await gateway();
  const gw = live;
  const final = new Map<number, Response>();
  // Every key is retried (16 at a time) until it answers something other than 409 in progress.
  await eventually(async () => {
    const pending = keys.map((_, i) => i).filter((i) => !final.has(i));
    await Promise.all(Array.from({ length: 16 }, async () => {
      for (let i = pending.shift(); i !== undefined; i = pending.shift()) {
        const r = await dial(gw.url, org, keys[i], dialBody(org, i));
        if (r.status !== 409) final.set(i, r);
      }
    }));
    return final.size === N;
  }, 90_000, 200);

  const rows = await env.db.any<{ to_number: string; n: number; ids: string[] }>(
    `SELECT to_number, count(*)::int AS n, array_agg(id::text) AS ids FROM calls WHERE organization_id = $1 GROUP BY to_number`,
    [org.organization_id]);
  const byTo = new Map(rows.map((r) => [r.to_number, r]));
  let wrong = 0;
  for (let i = 0; i < N; i++) {
    const r = final.get(i)!;
    const row = byTo.get(dialBody(org, i).to_number);
    const ok = r.status === 202 && row?.n === 1 && r.body?.data?.call_id === row.ids[0]
      && (!firstAnswers.has(i) || firstAnswers.get(i)!.body?.data?.call_id === row.ids[0]);
    if (!ok) {
      wrong++;
      if (wrong <= 5) t.fail(`key ${i}: status ${r.status}, ${row?.n ?? 0} rows, call_id ${r.body?.data?.call_id} vs ${row?.ids}`);
    }
  }
  t.equal(wrong, 0, 'every key: exactly one call row, and every answer carries that row\'s call_id');
  t.equal(rows.reduce((s, r) => s + r.n, 0), N, `${N} call rows in all`);
});

/** Sends a request with raw header bytes (Node's client would refuse or re-encode them). */
function rawPost(url: string, apiKey: string, idemKey: Buffer, body: string): Promise<{ status: number; body: any }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = connect(Number(u.port), u.hostname, () => {
      s.write(Buffer.concat([
        Buffer.from(`POST /v1/agents HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: Bearer ${apiKey}\r\nContent-Type: application/json\r\n`
          + `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\nIdempotency-Key: `),
        idemKey, Buffer.from(`\r\n\r\n${body}`)]));
    });
    let data = Buffer.alloc(0);
    s.on('data', (c) => { data = Buffer.concat([data, c]); });
    s.on('error', reject);
    s.on('end', () => {
      const text = data.toString('latin1');
      const status = Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1]);
      const payload = text.slice(text.indexOf('\r\n\r\n') + 4);
      let parsed: any = payload;
      try { parsed = JSON.parse(payload); } catch { /* not JSON */ }
      resolve({ status, body: parsed });
    });
  });
}

t.test('a non-ASCII Idempotency-Key is refused, never aliased to its ASCII part', async (t) => {
  const org = await callOrg();
  const gw = live ?? (live = await gateway());
  const post = (key: Buffer, name: string) => rawPost(gw.url, org.api_key, key, JSON.stringify({ name }));
  // Bytes >= 0x80 inside the value reach the gateway (as U+FFFD or the decoded character) and are refused.
  const inside: Record<string, Buffer> = {
    'UTF-8 in the middle': Buffer.from('caf\u00e9-key', 'utf8'),
    'latin1 byte in the middle': Buffer.from('caf\u00e9-key', 'latin1'),
  };
  // uWebSockets.js 20.30 trims them at either end of a header value before JS sees it (HttpParser.h compares a
  // signed char with < 33, so 0x80-0xFF count as whitespace): the gateway cannot tell 'key-caf\xc3\xa9' from
  // 'key-caf'. Refusing these needs a fixed uWS build; kept here as todo so the gap stays visible.
  const edges: Record<string, Buffer> = {
    'UTF-8 at the end': Buffer.from('key-caf\u00e9', 'utf8'),
    'latin1 byte at the end': Buffer.from('key-cafe\u00e9', 'latin1'),
    'UTF-8 at the start': Buffer.from('\u00e9-key', 'utf8'),
  };
  for (const [why, bytes] of Object.entries(inside)) {
    const r = await post(bytes, `agent ${why}`);
    t.equal(r.status, 400, `${why}: 400`);
    t.equal(r.body?.error?.code, 'validation_error', `${why}: validation_error`);
    t.ok(r.body?.error?.fields?.['Idempotency-Key'], `${why}: fields names Idempotency-Key`);
  }
  const todo = 'uWebSockets.js trims bytes >= 0x80 at the ends of header values before JS sees them';
  for (const [why, bytes] of Object.entries(edges)) {
    const r = await post(bytes, `agent ${why}`);
    t.equal(r.status, 400, `${why}: 400`, { todo });
  }
  const n = await env.db.one('SELECT count(*)::int AS n FROM agents WHERE organization_id = $1 AND name LIKE $2', [org.organization_id, '%middle']);
  t.equal(n.n, 0, 'nothing was created for the refused keys');
});
