// SIP benchmark: `npm run bench:sip`. Prints figures and writes bench/results/sip-cps.json and sip-rtp.json (sip-rtp-latching.json with BENCH_SIP_LATCHING=1); asserts nothing.
//
// Everything real, on this machine: SIPp plays the trunk (bench/fixtures/sip-trunk.xml, UDP, -rtp_echo), and the
// platform runs as in the Procfile with CARRIER=sip: gateway, workers, signaling (the SIP user agent) and media
// (MEDIA_WORKERS=1: one mediasoup worker), on a database and Redis prefix of their own. The organization's channel
// limit, call rate and spend cap, and the key's request rate limit, are raised out of the way. Two phases:
//
//   1. Calls per second, end to end: paced POST /v1/calls/dial at each rate of BENCH_SIP_RATES for
//      BENCH_SIP_STEP_SECONDS. Each call is a bridge of two SIP legs (connect leg, then destination leg: two INVITEs,
//      100/180/200, ACKs); SIPp hangs up the destination leg 1 s after its ACK (BYE from SIPp's side), the platform
//      then sends BYE on the connect leg, the call ends and its call_completed webhook arrives. A call counts as
//      completed only with that webhook and status completed / outcome answered. Per step: the rate completions
//      arrived at (webhooks over the time between the first and the last), failures, setup time (dial request
//      sent -> the call's answered_at, i.e. both legs answered) p50/p99, the load average. No RTP flows in this phase
//      (both legs answer at SIPp's echo port and nobody originates audio): it measures signaling and call handling.
//   2. Concurrent answered calls with RTP both ways: calls are added in steps (BENCH_SIP_CONCURRENT) and held. Each
//      connect leg's SDP answer names this bench's RTP generator as the far end; each destination leg answers at
//      SIPp's echo port (-rtp_echo). The generator sends each call 160-byte PCMU payloads at 50 packets/s (its call,
//      sequence and send time inside): mediasoup worker -> SIPp's echo -> worker -> generator, 2 worker crossings
//      each way (with BENCH_SIP_LATCHING=1 the media process runs SIP_RTP_LATCHING=1 and every crossing passes a
//      relay in the media process on each side: 4 relay crossings more each way). Over a window of
//      BENCH_SIP_WINDOW_SECONDS: loss (not back within 2 s), late (round trip > 300 ms), round trip p50/p99, the
//      CPU of the mediasoup worker (per call), the media process (the relays, when latching), SIPp and the generator
//      from /proc/<pid>/stat, and the legs' packet counters. (SIPp 3.6.1 plays rtp_stream from its echo socket, so a tone it
//      played would be echoed back into the bridge and loop: the bench sends the audio itself.)
//
// Settings: BENCH_SIP_RATES (default 10,25,50,100,150,200), BENCH_SIP_STEP_SECONDS (default 15), BENCH_SIP_CONCURRENT
// (default 100,200,300,400,500,600), BENCH_SIP_WINDOW_SECONDS (default 10), BENCH_SIP_SKIP (cps|media: skip one),
// BENCH_SIP_LATCHING (1: the media process latches RTP through its relays, SIP_RTP_LATCHING=1).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { createWriteStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bootstrapOrganization } from '../shared/accounts/bootstrap.ts';
import { createApiKey } from '../shared/accounts/keys.ts';
import { setLimits } from '../shared/calls/limits.ts';
import { loadConfig } from '../shared/config.ts';
import { createDb } from '../shared/db.ts';
import { randomToken } from '../shared/ids.ts';
import { MediaControlClient } from '../shared/media/control-client.ts';
import { parseRtp, PCMU_PAYLOAD_TYPE, writeRtpHeader } from '../shared/media/rtp.ts';
import { DEV_CONTROL_SECRET } from '../shared/media/settings.ts';
import { createRedis } from '../shared/redis.ts';
import { DEFAULT_ALL_SCOPES } from '../shared/scopes.ts';
import { prepareDatabase } from '../infra/prepare.ts';
import { startReceiver } from '../test/helpers/receiver.ts';
import { freePort } from '../test/sip/helpers.ts';
import { dropBenchData, post, waitHttp } from './harness.ts';
import { round, writeResult, type Figure } from './report.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SCENARIO = join(ROOT, 'bench/fixtures/sip-trunk.xml');
const list = (v: string | undefined, d: string) => (v ?? d).split(',').map(Number).filter((n) => n > 0);
const RATES = list(process.env.BENCH_SIP_RATES, '10,25,50,100,150,200');
const STEP_SECONDS = Number(process.env.BENCH_SIP_STEP_SECONDS ?? 15);
const CONCURRENT = list(process.env.BENCH_SIP_CONCURRENT, '100,200,300,400,500,600');
const WINDOW_SECONDS = Number(process.env.BENCH_SIP_WINDOW_SECONDS ?? 10);
const SKIP = process.env.BENCH_SIP_SKIP ?? '';
const LATCHING = process.env.BENCH_SIP_LATCHING === '1';
/** How phase 2's RTP reaches the worker, in its figures' names. */
const RTP_PATH = LATCHING ? 'through the latching relays (SIP_RTP_LATCHING=1)' : 'straight into the worker';
/** How long after a step's last dial its calls may still complete before the rest count as failed. */
const DRAIN_MS = 90_000;
const PACKETS_PER_SECOND = 50;
const CLOCK_TICKS = 100; // USER_HZ on Linux
// The dialed numbers pick SIPp's behaviour (bench/fixtures/sip-trunk.xml).
const HANGS_UP_AFTER_1S = '+14155550083';
const ECHOES = '+14155550082';
const TO_GENERATOR = '+14155550081';
/** How long after the window an echo still counts as arrived rather than lost; slower than LATE_MS counts as late. */
const GRACE_MS = 2000;
const LATE_MS = 300;
const TAG = 0x4f4c5331; // "OLS1": marks the generator's payloads

/** The processes a call goes through (CPU per call is reported for each). */
const STACK = ['gateway', 'workers', 'signaling', 'media', 'sipp', 'redis'] as const;
const IDLE_SECONDS = 10;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const RMEM_DEFAULT = '/proc/sys/net/core/rmem_default';
/** Raises the kernel's default UDP receive buffer (sockets made from now on get it); answers how to put it back. */
function raiseReceiveBufferDefault(bytes: number): () => void {
  let before: string;
  try {
    before = readFileSync(RMEM_DEFAULT, 'utf8').trim();
    if (Number(before) >= bytes) return () => undefined;
    writeFileSync(RMEM_DEFAULT, String(bytes));
  } catch {
    say(`cannot raise ${RMEM_DEFAULT} (not root?): SIPp's echo socket keeps the default buffer and may drop packets at high rates`);
    return () => undefined;
  }
  return () => writeFileSync(RMEM_DEFAULT, before);
}

/** Until something listens on UDP `port` on loopback (SIPp's echo socket), at most 10 s. */
async function waitUdpBound(port: number): Promise<void> {
  const until = Date.now() + 10_000;
  while (Date.now() < until) {
    const probe = spawnSync('ss', ['-ulnH', `sport = :${port}`], { encoding: 'utf8' });
    if (probe.status === 0 && probe.stdout.trim()) return;
    await sleep(50);
  }
  throw new Error(`SIPp did not bind its echo port ${port} within 10 s`);
}
const say = (line: string) => process.stdout.write(`${line}\n`);
const pct = (xs: number[], p: number) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');
/** Resident memory of a process in MB (/proc/<pid>/status). */
function rssMb(pid: number): number {
  try { return Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024; } catch { return NaN; }
}
function cpuTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(f[11]) + Number(f[12]);
  } catch { return NaN; }
}

/** A process of the platform (or SIPp), its output in a log file and, for readiness, in memory. */
function start(cmd: string, args: string[], env: Record<string, string>, log: string, cwd = ROOT): { child: ChildProcess; output: () => string } {
  const child = spawn(cmd, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const file = createWriteStream(log);
  let head = '';
  const take = (d: Buffer) => { if (head.length < 200_000) head += d; file.write(d); };
  child.stdout!.on('data', take);
  child.stderr!.on('data', take);
  return { child, output: () => head };
}

const startNode = (proc: string, env: Record<string, string>, dir: string) => start(process.execPath, ['--import', 'tsx', `${proc}/main.ts`], env, join(dir, `${proc}.log`));

async function ready(p: { child: ChildProcess; output: () => string }, what: string, test: (out: string) => boolean, timeoutMs = 90_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!test(p.output())) {
    if (p.child.exitCode !== null) throw new Error(`${what} exited (${p.child.exitCode}):\n${p.output()}`);
    if (Date.now() > until) throw new Error(`${what} not ready in ${timeoutMs} ms:\n${p.output()}`);
    await sleep(100);
  }
}

/** The far end of every connect leg in phase 2: one UDP socket that sends each call's connect leg 160-byte PCMU payloads
 *  at 50 packets/s (skipping, not bursting, after a stall, as a real-time sender does) and receives them back after
 *  the round trip through the bridge and SIPp's echo. Each payload carries its call, sequence and send time. Each
 *  call sends at a phase of its own within the 20 ms period, as independent phones do: sending every call's packet
 *  at the same instant would make bursts of hundreds of packets that overflow SIPp's single echo socket (its default
 *  212 KB receive buffer; measured: 3,434 drops there in one 300-call step), a bench artefact, not the platform's. */
class Generator {
  private readonly calls = new Map<string, { index: number; port: number; seq: number; nextAt: number }>();
  private readonly ports: number[] = [];
  private sent = 0;
  private received = 0;
  private late = 0;
  private rtts: number[] = [];
  private window = { start: Infinity, end: Infinity };
  private readonly timer: NodeJS.Timeout;

  private constructor(private readonly socket: Socket) {
    socket.on('message', (msg) => this.onEcho(msg));
    this.timer = setInterval(() => this.tick(performance.now()), 2);
  }

  static async open(): Promise<Generator> {
    const socket = createSocket({ type: 'udp4', recvBufferSize: 8 * 1024 * 1024, sendBufferSize: 8 * 1024 * 1024 });
    await new Promise<void>((r) => socket.bind(0, '127.0.0.1', r));
    return new Generator(socket);
  }

  get port(): number { return this.socket.address().port; }
  has(callId: string): boolean { return this.calls.has(callId); }
  add(callId: string, port: number): void {
    this.calls.set(callId, { index: this.ports.length, port, seq: 0, nextAt: performance.now() + Math.random() * 20 });
    this.ports.push(port);
  }

  /** Counts what is sent from now for `ms`, and what of it comes back. */
  measure(ms: number): { start: number } {
    this.sent = 0; this.received = 0; this.late = 0; this.rtts = [];
    const start = performance.now();
    this.window = { start, end: start + ms };
    return { start };
  }

  result(): { sent: number; loss: number; late: number; rtts: number[] } {
    const r = { sent: this.sent, loss: this.sent ? Math.max(0, (1 - this.received / this.sent) * 100) : 100,
      late: this.sent ? (this.late / this.sent) * 100 : 0, rtts: this.rtts };
    this.window = { start: Infinity, end: Infinity };
    return r;
  }

  close(): void { clearInterval(this.timer); this.socket.close(); }

  private tick(now: number): void {
    for (const c of this.calls.values()) {
      if (now - c.nextAt > 40) c.nextAt = now;
      while (c.nextAt <= now) {
        const packet = Buffer.alloc(12 + 160, 0xff);
        writeRtpHeader(packet, { payloadType: PCMU_PAYLOAD_TYPE, sequenceNumber: c.seq & 0xffff, timestamp: (c.seq * 160) >>> 0, ssrc: 0x5000 + c.index });
        packet.writeUInt32BE(TAG, 12);
        packet.writeUInt32BE(c.index, 16);
        packet.writeDoubleBE(now, 20);
        this.socket.send(packet, c.port, '127.0.0.1');
        if (now >= this.window.start && now < this.window.end) this.sent++;
        c.seq++;
        c.nextAt += 20;
      }
    }
  }

  private onEcho(msg: Buffer): void {
    const rtp = parseRtp(msg);
    if (!rtp || rtp.payloadLength !== 160 || msg.readUInt32BE(rtp.payloadOffset) !== TAG) return;
    const sentAt = msg.readDoubleBE(rtp.payloadOffset + 8);
    if (sentAt < this.window.start || sentAt >= this.window.end) return;
    const rtt = performance.now() - sentAt;
    this.received++;
    if (rtt > LATE_MS) this.late++;
    this.rtts.push(rtt);
  }
}

/** The legs' packet counters summed over the calls (GET stats of each session). */
async function legCounters(media: MediaControlClient, calls: string[]) {
  const sum = { fromFarEnd: 0, toFarEnd: 0, dropped: 0 };
  for (let i = 0; i < calls.length; i += 50) {
    await Promise.all(calls.slice(i, i + 50).map((c) => media.stats(c).then((s) => {
      for (const l of s.carrierLegs) { sum.fromFarEnd += l.fromFarEnd; sum.toFarEnd += l.toFarEnd; sum.dropped += l.dropped ?? 0; }
    }, () => undefined)));
  }
  return sum;
}

interface Completed { at: number; answeredAt: number | null; ok: boolean; how: string }

async function main(): Promise<void> {
  if (spawnSync('sh', ['-c', 'command -v sipp']).status !== 0) throw new Error('bench:sip needs SIPp (apt-get install -y sip-tester)');
  const id = randomToken(8).toLowerCase();
  const dir = mkdtempSync(join(tmpdir(), 'bench-sip-'));
  const children: ChildProcess[] = [];
  // SIPp: its signaling port, and its echo port (-mp); rtp_stream takes its ports upwards from there.
  const sipPort = await freePort();
  const echoPort = 12000 + 2 * Math.floor(Math.random() * 1000);
  const gen = await Generator.open();
  // SIPp's echo socket takes every call's RTP (25,000 packets/s at 500 calls) with the kernel's default receive buffer
  // (-buff_size sizes only its SIP sockets): a buffer of 212 KB overflows on scheduling hiccups and the bench would
  // count SIPp's drops as the platform's loss. A socket's buffer is fixed when it is made, so the default is raised
  // only while SIPp starts (as root; otherwise said and left).
  const restoreBuffers = raiseReceiveBufferDefault(4 * 1024 * 1024);
  const sipp = start('sipp', ['-sf', SCENARIO, '-i', '127.0.0.1', '-p', String(sipPort), '-cp', String(await freePort()), '-mp', String(echoPort), '-rtp_echo',
    '-set', 'genport', String(gen.port),
    '-t', 'u1', '-nostdin', '-buff_size', String(4 * 1024 * 1024), '-trace_err', '-error_file', join(dir, 'sipp-errors.log')], {}, join(dir, 'sipp.log'), dir);
  children.push(sipp.child);
  try {
    await waitUdpBound(echoPort);
  } finally {
    restoreBuffers();
  }

  const [port, redisPort] = [await freePort(), await freePort()];
  // A Redis server of the bench's own: the machine's shared one is flushed now and then by other work's tests, which
  // would drop this run's queues mid-step; its own process also makes Redis's CPU per call measurable.
  const redisServer = start('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {}, join(dir, 'redis.log'), dir);
  children.push(redisServer.child);
  await ready(redisServer, 'redis-server', (o) => /Ready to accept connections/.test(o), 30_000);
  const env: Record<string, string> = {
    REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    DATABASE_URL: `postgres://127.0.0.1:5432/ol_bench_sip_${id}`, REDIS_PREFIX: `olb_${id}`,
    PORT: String(port), WORKERS_PORT: '0', SIGNALING_PORT: '0', MEDIA_PORT: '0', METRICS_PORT: '0',
    CARRIER: 'sip', SIP_TRUNK_URI: `sip:127.0.0.1:${sipPort}`, SIP_LISTEN: '127.0.0.1:0',
    MEDIA_WORKERS: '1', MEDIA_RTC_MIN_PORT: '20000', MEDIA_RTC_MAX_PORT: '39999', SIP_RTP_LATCHING: LATCHING ? '1' : '0',
    WEBHOOK_ALLOW_INSECURE: '1', LOG_LEVEL: 'info', DATABASE_POOL_MAX: '4',
  };
  const config = loadConfig({ ...process.env, ...env });
  await prepareDatabase(config);
  const db = createDb(config.databaseUrl, 4);
  const redis = createRedis(config.redisUrl);
  const completed = new Map<string, Completed>();
  const rx = await startReceiver(undefined, {
    record: false,
    onRequest: (r) => {
      const d = r.body?.data;
      if (r.body?.event_type !== 'call_completed' || !d?.id || completed.has(d.id)) return;
      completed.set(d.id, { at: r.at, answeredAt: d.answered_at ? Date.parse(d.answered_at) : null, ok: d.status === 'COMPLETED' && d.call_outcome === 'answered',
        how: `${d.status}/${d.call_outcome}/${d.disconnection_reason}` });
    },
  });
  let media: MediaControlClient | null = null;
  // Each phase writes a results file of its own (sip-cps.json; sip-rtp.json, or sip-rtp-latching.json), so running one
  // phase leaves the other's figures, with their own date and load, in place.
  const cps: Figure[] = [];
  const rtp: Figure[] = [];
  let atBest: Figure[] = [];
  const notes: string[] = [];
  try {
    const mediaProc = startNode('media', env, dir);
    children.push(mediaProc.child);
    await ready(mediaProc, 'media', (o) => /"control":"http:[^"]+"/.test(o));
    const controlUrl = /"control":"(http:[^"]+)"/.exec(mediaProc.output())![1];
    media = new MediaControlClient({ url: controlUrl, secret: DEV_CONTROL_SECRET, timeoutMs: 60_000 });
    const platformEnv = { ...env, MEDIA_CONTROL_URL: controlUrl };
    const procs = Object.fromEntries(['signaling', 'workers', 'gateway'].map((p) => [p, startNode(p, platformEnv, dir)]));
    for (const p of Object.values(procs)) children.push(p.child);
    await Promise.all(Object.entries(procs).map(([name, p]) => ready(p, name, (o) => /"status":"ready"/.test(o))));
    const base = `http://127.0.0.1:${port}`;
    await waitHttp(`${base}/readyz`);
    if (sipp.child.exitCode !== null) throw new Error(`SIPp exited (${sipp.child.exitCode}): ${sipp.output()}`);
    const info = await media.workers();
    const workerPid = info.workers[0].pid;
    const pids = { worker: workerPid, media: info.processPid, sipp: sipp.child.pid!, signaling: procs.signaling.child.pid!,
      workers: procs.workers.child.pid!, gateway: procs.gateway.child.pid!, redis: redisServer.child.pid! };

    const org = await bootstrapOrganization(db, { org: `Bench SIP ${id}`, scopes: [...DEFAULT_ALL_SCOPES], numbers: 1 });
    await setLimits(db, org.organization_id, { channel_limit: 1_000_000, calls_per_minute: 10_000_000, daily_spend_cap_cents: 1_000_000_000_000 });
    const { apiKey } = await createApiKey(db, { organizationId: org.organization_id, userId: org.user_id, scopes: [...DEFAULT_ALL_SCOPES], rateLimitPerMinute: 100_000_000 });
    const agent = new Agent({ keepAlive: true, maxSockets: 32 });
    const sub = await post(agent, base, '/api/v1/webhook_subscriptions', apiKey, { webhook_url: rx.url('/calls'), event_type: 'call_completed' });
    if (sub.status !== 201) throw new Error(`subscription failed: ${sub.status} ${JSON.stringify(sub.body)}`);
    const dial = (to: string, connect: string) => post(agent, base, '/v1/calls/dial', apiKey, { from_number: org.phone_numbers[0], to_number: to, connect_number: connect });

    say(`bench:sip — gateway, workers, signaling, media (1 mediasoup worker, pid ${workerPid}) and SIPp on ${availableParallelism()} cores; load average at start ${load()}`);
    say('the machine is shared with other helpers\' tests: every figure carries the load average (1, 5, 15 min) when it was taken\n');

    // Warm-up: JIT, pools, BullMQ queues; 20 calls end to end.
    const warm = await Promise.all(Array.from({ length: 20 }, () => dial(HANGS_UP_AFTER_1S, ECHOES)));
    const warmIds = warm.filter((r) => r.status === 202).map((r) => r.body.data.call_id as string);
    if (warmIds.length !== warm.length) throw new Error(`warm-up dials refused: ${JSON.stringify(warm.find((r) => r.status !== 202)?.body)}`);
    const warmUntil = Date.now() + 60_000;
    while (warmIds.some((c) => !completed.has(c)) && Date.now() < warmUntil) await sleep(200);
    if (warmIds.some((c) => !completed.get(c)?.ok)) throw new Error(`warm-up calls did not complete answered (${warmIds.filter((c) => completed.get(c)?.ok).length}/20): see ${dir}`);

    // 1. Calls per second.
    if (SKIP !== 'cps') {
      // What each process spends with no call at all (heartbeats, queue polling, SIPp's loop), per second: taken off
      // the CPU per call below, which otherwise counts it against the calls of a slow step.
      const idle0 = Object.fromEntries(STACK.map((k) => [k, cpuTicks(pids[k])]));
      const idleStart = performance.now();
      await sleep(IDLE_SECONDS * 1000);
      const idleSeconds = (performance.now() - idleStart) / 1000;
      const idlePerSecond = Object.fromEntries(STACK.map((k) => [k, (cpuTicks(pids[k]) - idle0[k]) / idleSeconds]));
      say(`idle CPU (no calls), % of a core: ${STACK.map((k) => `${k} ${idlePerSecond[k].toFixed(1)}`).join(', ')}`);
      say('1. calls set up and torn down end to end (dial -> 2 INVITEs answered -> 1 s -> SIPp BYE -> our BYE -> call_completed webhook)');
      say('offered/s  dialed  refused  completed  failed  completions/s  setup p50 ms  setup p99 ms  dial->webhook p99 s  load avg');
      let best = 0;
      for (const rate of RATES) {
        const sent = new Map<string, number>();
        const cpuBefore = Object.fromEntries(STACK.map((k) => [k, cpuTicks(pids[k])]));
        const stepStart = performance.now();
        let refused = 0;
      let measured = false;
        const t0 = Date.now();
        const total = rate * STEP_SECONDS;
        const inflight: Promise<void>[] = [];
        for (let i = 0; i < total; i++) {
          const due = t0 + (i * 1000) / rate;
          if (due > Date.now()) await sleep(due - Date.now());
          const at = Date.now();
          inflight.push(dial(HANGS_UP_AFTER_1S, ECHOES).then((r) => {
            if (r.status === 202) sent.set(r.body.data.call_id, at); else refused++;
          }, () => { refused++; }));
        }
        await Promise.all(inflight);
        const until = Date.now() + DRAIN_MS;
        while ([...sent.keys()].some((c) => !completed.has(c)) && Date.now() < until) await sleep(250);
        const done = [...sent.keys()].filter((c) => completed.get(c)?.ok).map((c) => ({ dialed: sent.get(c)!, ...completed.get(c)! }));
        const failed = sent.size - done.length + refused;
        const times = done.map((d) => d.at).sort((a, b) => a - b);
        const perSecond = times.length > 1 ? (times.length - 1) / ((times[times.length - 1] - times[0]) / 1000) : 0;
        const setup = done.filter((d) => d.answeredAt).map((d) => d.answeredAt! - d.dialed);
        const life = done.map((d) => (d.at - d.dialed) / 1000);
        const l = loadavg();
        // CPU each process spent per call over the step and its drain (PostgreSQL is shared with other work on the
        // machine and not counted). Unlike the rates, this depends little on the load.
        // Divided by every call that ended (completed or not); calls still unfinished at the drain's end make it an
        // overestimate.
        const ended = [...sent.keys()].filter((c) => completed.has(c)).length;
        const stepSeconds = (performance.now() - stepStart) / 1000;
        const cpuMs = Object.fromEntries(STACK.map((k) => [k, ended
          ? Math.max(0, cpuTicks(pids[k]) - cpuBefore[k] - idlePerSecond[k] * stepSeconds) * (1000 / CLOCK_TICKS) / ended : NaN]));
        const cpuTotal = STACK.reduce((sum, k) => sum + cpuMs[k], 0);
        say([String(rate).padStart(9), String(total).padStart(7), String(refused).padStart(8), String(done.length).padStart(10),
          String(failed).padStart(7), perSecond.toFixed(1).padStart(14), pct(setup, 50).toFixed(0).padStart(13), pct(setup, 99).toFixed(0).padStart(13),
          pct(life, 99).toFixed(2).padStart(20), `  ${load()}`].join(' '));
        // Sustained: every call completed with its webhook, at (nearly) the offered rate, with no backlog building up.
        const sustained = failed === 0 && perSecond >= 0.95 * rate && pct(setup, 99) < 3000;
        if (sustained) best = Math.max(best, rate);
        cps.push(
          { name: `${rate} calls/s offered: completed calls/s (webhooks)`, value: round(perSecond, 1), unit: 'calls/s' },
          { name: `${rate} calls/s offered: failed calls`, value: failed, unit: 'calls' },
          { name: `${rate} calls/s offered: setup time p50`, value: round(pct(setup, 50), 0), unit: 'ms' },
          { name: `${rate} calls/s offered: setup time p99`, value: round(pct(setup, 99), 0), unit: 'ms' },
          { name: `${rate} calls/s offered: load average (1 min) at the end`, value: round(l[0]), unit: '' },
          { name: `${rate} calls/s offered: CPU per call, gateway + workers + signaling + media + SIPp + Redis`, value: round(cpuTotal, 1), unit: 'ms' },
          ...STACK.map((k) => ({ name: `${rate} calls/s offered: CPU per call, ${k}`, value: round(cpuMs[k], 1), unit: 'ms' })),
        );
        say(`           CPU per call (over ${ended} ended calls, idle CPU taken off): ${STACK.map((k) => `${k} ${cpuMs[k].toFixed(1)} ms`).join(', ')}; total ${cpuTotal.toFixed(1)} ms `
          + `(${availableParallelism()} cores of our own would carry about ${((availableParallelism() * 1000) / cpuTotal).toFixed(0)} calls/s before PostgreSQL)`);
        if (failed) {
          const why = new Map<string, number>([['refused by the API', refused]]);
          for (const c of sent.keys()) if (!completed.get(c)?.ok) { const k = completed.get(c)?.how ?? 'no webhook yet'; why.set(k, (why.get(k) ?? 0) + 1); }
          say(`           failed: ${[...why].filter(([, n]) => n).map(([k, n]) => `${n} ${k}`).join(', ')}`);
        }
        if (!sustained && failed > 0.05 * total) break; // beyond the knee: a higher rate only builds a backlog
        await sleep(3000);
      }
      say(`highest rate sustained (all completed with webhooks, >= 95 % of the offered rate, setup p99 < 3 s): ${best} calls/s`);
      say(`resident memory after the steps: signaling ${rssMb(pids.signaling).toFixed(0)} MB, media ${rssMb(pids.media).toFixed(0)} MB, workers ${rssMb(pids.workers).toFixed(0)} MB\n`);
      cps.unshift({ name: 'SIP calls set up and torn down end to end, sustained', value: best, unit: 'calls/s', target: '>= 200/s', met: best >= 200 });
    }

    // 2. Concurrent answered calls with RTP both ways through one mediasoup worker.
    if (SKIP !== 'media') {
      say(`2. concurrent answered calls, RTP both ways ${RTP_PATH}, one mediasoup worker (50 pkt/s per call from the generator, echoed by SIPp)`);
      say('calls  up  pkts/s out  loss %  late %  rtt ms p50/p99  worker CPU %  worker %/call  media proc %  SIPp %  generator %  load avg');
      const live: string[] = [];
      let best = 0;
      let failures = 0;
      let refused = 0;
      let measured = false;
      for (const target of CONCURRENT) {
        while (live.length < target && refused < 25) {
          const batch = await Promise.all(Array.from({ length: Math.min(25, target - live.length) }, () => dial(ECHOES, TO_GENERATOR)));
          for (const r of batch) if (r.status === 202) live.push(r.body.data.call_id); else refused++;
          await sleep(250);
        }
        if (live.length < target) { say(`       ${refused} dials refused (the API answered non-202): stopping`); break; }
        measured = true;
        // Both legs answered and bridged (the call's answered_at), within a minute; then the generator starts sending
        // to each new call's connect leg (its RTP port: creating the leg again answers the existing one).
        const until = Date.now() + 60_000;
        let upIds: string[] = [];
        while (Date.now() < until) {
          upIds = (await db.any('SELECT id FROM calls WHERE id = ANY($1::uuid[]) AND answered_at IS NOT NULL AND ended_at IS NULL', [live])).map((r) => r.id as string);
          if (upIds.length === live.length) break;
          await sleep(500);
        }
        const up = upIds.length;
        for (let i = 0; i < upIds.length; i += 25) {
          await Promise.all(upIds.slice(i, i + 25).filter((c) => !gen.has(c)).map(async (c) => {
            const leg = await media!.createCarrierLeg(c, `${c}-connect`).catch(() => null); // ended meanwhile
            if (leg) gen.add(c, leg.port);
          }));
        }
        await sleep(2000);
        const cpu0 = { worker: cpuTicks(pids.worker), media: cpuTicks(pids.media), sipp: cpuTicks(pids.sipp) };
        const gen0 = process.cpuUsage();
        const w = gen.measure(WINDOW_SECONDS * 1000);
        await sleep(WINDOW_SECONDS * 1000);
        const wall = (performance.now() - w.start) / 1000;
        const cpu = (k: keyof typeof cpu0) => ((cpuTicks(pids[k]) - cpu0[k]) / CLOCK_TICKS / wall) * 100;
        const [workerCpu, mediaCpu, sippCpu] = [cpu('worker'), cpu('media'), cpu('sipp')];
        const g = process.cpuUsage(gen0);
        const genCpu = ((g.user + g.system) / 1e6 / wall) * 100;
        await sleep(GRACE_MS); // late is not lost
        const m = gen.result();
        const l = loadavg();
        const rtt = `${pct(m.rtts, 50).toFixed(1)}/${pct(m.rtts, 99).toFixed(1)}`;
        say([String(target).padStart(5), String(up).padStart(4), (m.sent / wall).toFixed(0).padStart(11), m.loss.toFixed(3).padStart(7),
          m.late.toFixed(2).padStart(7), rtt.padStart(15), workerCpu.toFixed(1).padStart(13), (workerCpu / target).toFixed(3).padStart(14),
          mediaCpu.toFixed(1).padStart(13), sippCpu.toFixed(1).padStart(7), genCpu.toFixed(1).padStart(12), `  ${load()}`].join(' '));
        const legs = await legCounters(media, live);
        say(`       legs (all, since answer): from the far ends ${legs.fromFarEnd}, to the far ends ${legs.toFarEnd}${LATCHING ? `, dropped by the relays ${legs.dropped}` : ''}`);
        if (up === target && m.loss < 0.1) {
          best = target;
          const at = `at ${target} calls`;
          atBest = [
            { name: `${at}: loss (round trip generator -> worker -> SIPp echo -> back, ${RTP_PATH})`, value: round(m.loss, 3), unit: '%' },
            { name: `${at}: round trip p50`, value: round(pct(m.rtts, 50), 1), unit: 'ms' },
            { name: `${at}: round trip p99`, value: round(pct(m.rtts, 99), 1), unit: 'ms' },
            { name: `${at}: mediasoup worker CPU`, value: round(workerCpu, 1), unit: '% of a core' },
            { name: `${at}: mediasoup worker CPU per call`, value: round(workerCpu / target, 3), unit: '% of a core' },
            { name: `${at}: media process CPU${LATCHING ? ' (the RTP relays)' : ''}`, value: round(mediaCpu, 1), unit: '% of a core' },
            { name: `${at}: SIPp CPU (signaling + echo)`, value: round(sippCpu, 1), unit: '% of a core' },
            { name: `${at}: load average (1 min)`, value: round(l[0]), unit: '' },
          ];
        } else if (++failures >= 2) break;
      }
      say(`highest count with every call up and loss < 0.1 %: ${best} concurrent calls on one mediasoup worker\n`);
      // Nothing measured (the API refused the first dials): no figure rather than a 0.
      if (measured) rtp.push({ name: `concurrent answered SIP calls, RTP both ways ${RTP_PATH}, one mediasoup worker, loss < 0.1 %`, value: best, unit: 'calls', ...(LATCHING ? {} : { target: '>= 500', met: best >= 500 }) }, ...atBest); // the target is the default path's
    }
    notes.push(`2-core machine: load average per figure; SIPp -rtp_echo on UDP; MEDIA_WORKERS=1; SIP_RTP_LATCHING=${LATCHING ? 1 : 0}; step ${STEP_SECONDS} s; window ${WINDOW_SECONDS} s`);
    for (const [file, figures] of [['sip-cps', cps], [LATCHING ? 'sip-rtp-latching' : 'sip-rtp', rtp]] as const) {
      if (figures.length) say(`figures written to ${writeResult('sip', figures, { note: notes.join('; '), file })}`);
    }
  } finally {
    for (const c of children) if (c !== redisServer.child && c.exitCode === null) c.kill('SIGKILL');
    gen.close();
    media?.close();
    await rx.close();
    await dropBenchData(redis, db, config.databaseUrl, env.REDIS_PREFIX);
    redisServer.child.kill('SIGKILL');
    if (!process.env.BENCH_KEEP_LOGS) rmSync(dir, { recursive: true, force: true }); else say(`logs in ${dir}`);
  }
}

await main();
