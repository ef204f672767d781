// Signaling benchmark: `npm run bench:signaling`. Prints figures; asserts nothing.
//
// Ticket redemptions per second through the real signaling process (signaling/main.ts, spawned as in the Procfile)
// over real WebSockets, against a database and Redis prefix of its own. Tickets are issued beforehand through the
// gateway's POST /v1/webrtc-token (not timed). Then BENCH_CONCURRENCY (default 100) client loops each open a
// WebSocket (bench/ws-client.ts, a minimal client: the client shares the 2 cores with the server it measures), send
// hello with the next ticket and wait for `welcome`; the socket stays open until the phase ends (closing it would
// abandon the call, which is not part of redeeming). No workers process runs, so redeemed calls stay QUEUED and
// nothing is dialed: the figure is the redemption itself (ticket row locked and marked used, browser leg and leg
// accounts, the dial job enqueued, the welcome frame).
// Two phases:
//   1. signaling only (SIGNALING_MEDIA=off): BENCH_TICKETS (default 2000) redemptions;
//   2. with media (a media process, MEDIA_WORKERS=1): BENCH_MEDIA_TICKETS (default 300) redemptions, each of which
//      also creates the call's mediasoup router before `welcome` (no transports: the browser's negotiation is
//      not part of it).
// Target: >= 1,000 redemptions/s (phase 1).
import { cpuSeconds } from './harness.ts';
import { callOrg } from '../test/calls/helpers.ts';
import { testEnv, type TestEnv, type Proc } from '../test/helpers/env.ts';
import { round, writeResult, type Figure } from './report.ts';
import { openWebSocket, type BenchSocket } from './ws-client.ts';

const figures: Figure[] = [];

const TICKETS = Number(process.env.BENCH_TICKETS ?? 2000);
const MEDIA_TICKETS = Number(process.env.BENCH_MEDIA_TICKETS ?? 300);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 100);

const pct = (xs: number[], p: number) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

const teardowns: (() => unknown)[] = [];
const env: TestEnv = await testEnv({ teardown: (fn) => { teardowns.push(fn); } }, {
  env: { SANDBOX_TIME_SCALE: '0.01', LOG_LEVEL: 'warn', TICKET_CLEANUP_SECONDS: '600', DATABASE_POOL_MAX: '' }, // '': each process's own pool size, not the tests' 5
});

async function issue(n: number): Promise<string[]> {
  const org = await callOrg(env, { channel_limit: 1_000_000, calls_per_minute: 1_000_000 });
  await env.db.none('UPDATE api_keys SET rate_limit_per_minute = 100000000 WHERE id = $1', [org.api_key_id]);
  const tokens: string[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < n) {
      next++;
      const r = await env.request('POST', '/v1/webrtc-token', { key: org.api_key, body: { from_number: org.from, to_number: '+14155550008' } });
      if (r.status !== 201) throw new Error(`webrtc-token: ${r.status} ${r.text}`);
      tokens.push(r.body.data.token);
    }
  }));
  return tokens;
}

function softphoneUrl(p: Proc): string {
  const m = /"softphone":"(ws:[^"]+)"/.exec(p.output);
  if (!m) throw new Error(`no softphone URL:\n${p.output}`);
  return m[1];
}

/** One redemption: open, hello, welcome. Resolves with the time hello→welcome and the whole time, and the socket. */
async function redeem(url: string, token: string): Promise<{ helloMs: number; totalMs: number; ws: BenchSocket }> {
  const t0 = performance.now();
  const ws = await openWebSocket(url);
  const t1 = performance.now();
  ws.send(JSON.stringify({ type: 'hello', v: 1, ticket: token }));
  for (;;) {
    const m = JSON.parse(await ws.next());
    if (m.type === 'welcome') {
      const now = performance.now();
      return { helloMs: now - t1, totalMs: now - t0, ws };
    }
    if (m.type === 'error') { ws.close(); throw new Error(`refused: ${m.code}`); }
  }
}


async function phase(name: string, url: string, tokens: string[], pid: number) {
  const sigCpu0 = cpuSeconds(pid);
  const selfCpu0 = process.cpuUsage();
  const sockets: BenchSocket[] = [];
  const hello: number[] = [];
  const total: number[] = [];
  let next = 0;
  let failed = 0;
  const start = performance.now();
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, tokens.length) }, async () => {
    while (next < tokens.length) {
      const token = tokens[next++];
      try {
        const r = await redeem(url, token);
        hello.push(r.helloMs);
        total.push(r.totalMs);
        sockets.push(r.ws);
      } catch {
        failed++;
      }
    }
  }));
  const seconds = (performance.now() - start) / 1000;
  const ok = hello.length;
  const sigCpu = cpuSeconds(pid) - sigCpu0;
  const self = process.cpuUsage(selfCpu0);
  console.log(`${name}: ${ok} redemptions (${failed} failed) in ${seconds.toFixed(2)} s = ${(ok / seconds).toFixed(0)} redemptions/s; ` +
    `hello→welcome p50 ${pct(hello, 50).toFixed(1)} ms, p99 ${pct(hello, 99).toFixed(1)} ms; ` +
    `connect+hello→welcome p50 ${pct(total, 50).toFixed(1)} ms, p99 ${pct(total, 99).toFixed(1)} ms ` +
    `(concurrency ${Math.min(CONCURRENCY, tokens.length)}); CPU: signaling ${(100 * sigCpu / seconds).toFixed(0)} % of a core ` +
    `(${(1000 * sigCpu / ok).toFixed(2)} ms per redemption), this client ${(100 * (self.user + self.system) / 1e6 / seconds).toFixed(0)} %`);
  figures.push(
    { name: `${name}: ticket redemptions (${failed} failed)`, value: Math.round(ok / seconds), unit: 'redemptions/s', target: '>= 1,000/s', met: ok / seconds >= 1000 },
    { name: `${name}: hello → welcome p50`, value: round(pct(hello, 50), 1), unit: 'ms' },
    { name: `${name}: hello → welcome p99`, value: round(pct(hello, 99), 1), unit: 'ms' },
    { name: `${name}: signaling CPU per redemption`, value: round(1000 * sigCpu / ok), unit: 'ms' },
    { name: `${name}: signaling's share of a core`, value: Math.round(100 * sigCpu / seconds), unit: '%' });
  for (const ws of sockets) ws.close();
  return ok / seconds;
}

try {
  const load = (await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ');
  console.log(`bench:signaling — ${TICKETS} + ${MEDIA_TICKETS} tickets, concurrency ${CONCURRENCY}, load average ${load}`);

  let tokens = await issue(TICKETS);
  const sig = env.spawn('signaling', { SIGNALING_MEDIA: 'off' });
  await sig.ready();
  await phase('signaling only', softphoneUrl(sig), tokens, sig.child.pid!);
  for (const l of sig.output.split('\n')) if (l.includes('TIMING')) console.log(l);
  await sig.kill('SIGTERM');

  if (MEDIA_TICKETS > 0) {
    const media = env.spawn('media', { MEDIA_WORKERS: '1' });
    await media.ready(60_000);
    const controlUrl = /"control":"(http:[^"]+)"/.exec(media.output)![1];
    tokens = await issue(MEDIA_TICKETS);
    const sigM = env.spawn('signaling', { MEDIA_CONTROL_URL: controlUrl });
    await sigM.ready();
    await phase('with media (router per call)', softphoneUrl(sigM), tokens, sigM.child.pid!);
    await sigM.kill('SIGTERM');
    await media.kill('SIGTERM');
  }
  console.log(`load average after: ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')}`);
  writeResult('signaling', figures, { note: `${TICKETS} + ${MEDIA_TICKETS} tickets, concurrency ${CONCURRENCY}` });
} finally {
  for (const fn of teardowns.reverse()) await fn();
}
