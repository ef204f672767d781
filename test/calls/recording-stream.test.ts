// GET /v1/calls/{id}/recording for a long recording (a one-hour sandbox call ended by its length limit): rendered
// once into RECORDINGS_DIR, the same bytes whole and by ranges (206, Content-Range; 416 past the end), 20 slow
// concurrent downloads keep a spawned gateway's memory bounded while GET /v1/account still answers, and the
// per-gateway stream limit answers 503 with Retry-After until a stream ends or its client leaves.
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { sandboxRecordingWav } from '../../shared/calls/recording.ts';
import { callForContent } from '../../shared/calls/store.ts';
import { eventually, httpCall } from '../helpers/env.ts';
import { aiCall, callEnv, callOrg, settled } from './helpers.ts';

const dir = mkdtempSync(join(tmpdir(), 'ol-rec-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
// 0.001: the one-hour call ends after 3.6 s. The in-process gateway may stream two recordings at once.
const { env } = await callEnv(t, { SANDBOX_TIME_SCALE: '0.001', RECORDINGS_DIR: dir, RECORDING_STREAMS_MAX: '2' });
const MINUTES = 60;
const org = await callOrg(env, { max_call_minutes: MINUTES });
const placed = await aiCall(env, org, '+14155550008', { record: true }); // never hangs up: ended by the limit
const call = await settled(env, org, placed.body.data.call_id, 60_000);
const path = `/v1/calls/${call.id}/recording`;
const SIZE = 58 + MINUTES * 60 * 8000;

// A second gateway as its own process, so that its memory can be read from /proc while clients download.
const gw = env.spawn('gateway', { RECORDING_STREAMS_MAX: '32' });
await gw.ready();
const gwUrl = /"url":"([^"]+)"/.exec(gw.output)![1];
const rss = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${gw.child.pid}/status`, 'utf8'))![1]) * 1024;

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

interface Download { req: ClientRequest; res: IncomingMessage }
function open(base: string, headers: Record<string, string> = {}): Promise<Download> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(base + path, { agent: false, headers: { connection: 'close', authorization: `Bearer ${org.api_key}`, ...headers } },
      (res) => resolve({ req, res }));
    req.on('error', reject);
    req.end();
  });
}

t.test('a one-hour recording: 20 concurrent slow downloads, bounded memory, rendered once', async (t) => {
  t.equal(call.duration_seconds, MINUTES * 60);
  const before = rss();
  let peak = before;
  const sampler = setInterval(() => { peak = Math.max(peak, rss()); }, 50);
  try {
    // Twenty clients that read one piece and then stop reading: the gateway must wait for them, not buffer.
    const downloads = await Promise.all(Array.from({ length: 20 }, () => open(gwUrl)));
    for (const d of downloads) {
      t.equal(d.res.statusCode, 200);
      t.equal(Number(d.res.headers['content-length']), SIZE, 'Content-Length is the whole file');
      t.equal(d.res.headers['accept-ranges'], 'bytes');
      d.res.pause();
    }
    const account = await httpCall(gwUrl, 'GET', '/v1/account', { key: org.api_key });
    t.equal(account.status, 200, 'GET /v1/account answers while 20 downloads are stalled');
    peak = Math.max(peak, rss());
    // Then they read on; every one receives the same bytes.
    const hashes = await Promise.all(downloads.map(async (d) => {
      const h = createHash('sha256');
      let n = 0;
      d.res.resume();
      for await (const c of d.res) { h.update(c); n += c.length; }
      return `${n}:${h.digest('hex')}`;
    }));
    const whole = sandboxRecordingWav(await callForContent(env.db, org.organization_id, call.id));
    t.equal(whole.length, SIZE);
    t.same(new Set(hashes), new Set([`${SIZE}:${sha(whole)}`]), 'all 20 equal the recording rendered in memory');
  } finally {
    clearInterval(sampler);
  }
  const growth = peak - before;
  t.comment(`gateway RSS ${Math.round(before / 2 ** 20)} MB before, peak ${Math.round(peak / 2 ** 20)} MB (+${Math.round(growth / 2 ** 20)} MB) for 20 x ${Math.round(SIZE / 2 ** 20)} MB`);
  t.ok(growth < 128 * 2 ** 20, `RSS growth ${Math.round(growth / 2 ** 20)} MB < 128 MB (20 copies would be ${Math.round(20 * SIZE / 2 ** 20)} MB)`);
  t.equal(gw.output.match(/"msg":"recording rendered"/g)?.length, 1, 'rendered once for 20 concurrent first requests');
  t.same(readdirSync(dir), [`${call.id}.v1.wav`], 'one file, no temporary left behind');
});

t.test('the same bytes whole and by ranges', async (t) => {
  const whole = await env.request('GET', path, { key: org.api_key });
  t.equal(whole.status, 200);
  t.equal(whole.raw.length, SIZE);
  t.equal(whole.headers['content-type'], 'audio/wav');
  t.equal(whole.headers['accept-ranges'], 'bytes');
  t.notOk(whole.headers['content-range']);
  const cases: [string, number, number][] = [
    ['bytes=0-57', 0, 57], ['bytes=0-0', 0, 0], ['bytes=1000000-1999999', 1000000, 1999999], ['bytes=-1000', SIZE - 1000, SIZE - 1],
    [`bytes=${SIZE - 70000}-`, SIZE - 70000, SIZE - 1], [`bytes=100-${SIZE + 5000}`, 100, SIZE - 1], ['bytes=65535-131073', 65535, 131073],
  ];
  for (const [range, start, end] of cases) {
    const r = await env.request('GET', path, { key: org.api_key, headers: { range } });
    t.equal(r.status, 206, `${range}: 206`);
    t.equal(r.headers['content-range'], `bytes ${start}-${end}/${SIZE}`, `${range}: Content-Range`);
    t.equal(Number(r.headers['content-length']), end - start + 1, `${range}: Content-Length`);
    t.ok(r.raw.equals(whole.raw.subarray(start, end + 1)), `${range}: the same bytes`);
  }
  for (const range of [`bytes=${SIZE}-`, `bytes=${SIZE + 1}-${SIZE + 10}`, 'bytes=-0']) {
    const r = await env.request('GET', path, { key: org.api_key, headers: { range } });
    t.equal(r.status, 416, `${range}: 416`);
    t.equal(r.headers['content-range'], `bytes */${SIZE}`);
    t.equal(r.body.error.code, 'validation_error');
    t.ok(r.body.error.fields.Range);
  }
  // Forms a server may ignore (RFC 9110 14.2): the whole file.
  for (const range of ['bytes=5-1', 'bytes=0-1,5-6', 'items=0-1', 'bytes=x-']) {
    const r = await env.request('GET', path, { key: org.api_key, headers: { range } });
    t.equal(r.status, 200, `${range}: ignored, 200`);
    t.equal(r.raw.length, SIZE);
  }
});

t.test('the stream limit: 503 with Retry-After beyond it, a slot back when a client leaves', async (t) => {
  const slots = env.gateway!.gateway.fileStreams;
  const held = [await open(env.url), await open(env.url)];
  for (const d of held) { t.equal(d.res.statusCode, 200); d.res.pause(); }
  t.equal(slots.inUse, 2);
  const over = await env.request('GET', path, { key: org.api_key });
  t.equal(over.status, 503);
  t.equal(over.body.error.code, 'service_unavailable');
  t.equal(over.headers['retry-after'], '1');
  t.equal((await env.request('GET', '/v1/account', { key: org.api_key })).status, 200, 'other routes are not limited');
  for (const d of held) d.req.destroy();
  await eventually(async () => slots.inUse === 0, 15_000);
  const again = await env.request('GET', path, { key: org.api_key, headers: { range: 'bytes=0-3' } });
  t.equal(again.status, 206, 'served again once the clients left');
  t.equal(again.text, 'RIFF');
  // The client has every byte slightly before the stream's own bookkeeping ends.
  t.ok(await eventually(async () => slots.inUse === 0, 15_000), 'a finished stream gives its slot back');
});

t.test('recording_url never reflects the Host, hostile or well-formed', async (t) => {
  for (const host of ['evil.example", error="x', 'api.example.com']) {
    const r = await httpCall(env.url, 'GET', `/v1/calls/${call.id}`, { key: org.api_key, headers: { host, 'x-forwarded-proto': 'https' } });
    t.equal(r.status, 200);
    t.equal(r.body.data.recording_url, `${env.url}${path}`, `${host}: the listen address instead`);
  }
});
