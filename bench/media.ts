// npm run bench:media — how many concurrent sandbox audio calls ONE mediasoup worker carries.
//
// Spawns the real media process with MEDIA_WORKERS=1 and ramps calls in steps. Each call is a real session: a
// simulated browser (a UDP socket here, on a plain browser transport) sends 160-byte PCMU payloads at 50 packets/s
// into its producer; the router forwards them over the carrier PlainTransport to the session's sandbox far end,
// which echoes them back through the router to the browser. Each payload carries its send time, so the generator
// measures, per step: loss, RFC 3550 interarrival jitter and round-trip time of the echo, the CPU of the worker (from
// /proc/<pid>/stat), of the media process (it runs the far ends) and of this generator. Prints a table per step and
// the highest count whose loss stays under 1 %. Figures only: nothing here asserts a timing.
//
// Settings: BENCH_MEDIA_STEPS (default 50,100,...,600), BENCH_MEDIA_SECONDS (measurement window per step,
// default 5), BENCH_MEDIA_STOP_AFTER (steps at >= 1 % loss before stopping, default 2: the machine may be shared).
import { spawn } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { MediaControlClient } from '../shared/media/control-client.ts';
import { InterarrivalJitter, parseRtp, PCMU_PAYLOAD_TYPE, writeRtpHeader } from '../shared/media/rtp.ts';
import { round, writeResult, type Figure } from './report.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const STEPS = (process.env.BENCH_MEDIA_STEPS ?? '50,100,150,200,250,300,350,400,450,500,550,600').split(',').map(Number);
const WINDOW_MS = Number(process.env.BENCH_MEDIA_SECONDS ?? 5) * 1000;
const STOP_AFTER = Number(process.env.BENCH_MEDIA_STOP_AFTER ?? 2);
const TONE_MS = 500;
/** How long after the window an echo still counts as arrived rather than lost. */
const GRACE_MS = 2000;
/** An echo slower than this round trip counts as late: 150 ms one way is ITU-T G.114's limit for good speech. */
const LATE_MS = 300;
const PAYLOAD_BYTES = 160;
const PACKET_MS = 20;
const TAG = 0x4f4c4231; // "OLB1": marks the generator's own payloads in the echo (the tone has other bytes)
const CLOCK_TICKS = 100; // USER_HZ on Linux

const say = (line: string) => process.stdout.write(`${line}\n`);

class SimulatedBrowser {
  readonly jitter = new InterarrivalJitter();
  sentInWindow = 0;
  receivedInWindow = 0;
  lateInWindow = 0;
  private sent = 0;
  private sequenceNumber = 0;
  private readonly template = Buffer.alloc(12 + PAYLOAD_BYTES, 0x7f);
  private readonly startedAt = performance.now();
  private nextAt = this.startedAt;

  constructor(readonly index: number, readonly callId: string, readonly socket: Socket, readonly ssrc: number,
    readonly target: { ip: string; port: number }, private readonly bench: Bench) {
    socket.on('message', (msg) => this.onEcho(msg));
  }

  /** Sends the packets due by `now`, 20 ms apart; after a stall longer than two packets the missed ones are
   *  skipped, as a real-time sender does, instead of bursting them. */
  tick(now: number): void {
    if (now - this.nextAt > 2 * PACKET_MS) this.nextAt = now;
    while (this.nextAt <= now) {
      const timestamp = Math.round((this.nextAt - this.startedAt) / PACKET_MS) * 160;
      // A fresh buffer per packet: dgram may still hold the previous one when the kernel's queue was full.
      const packet = Buffer.from(this.template);
      writeRtpHeader(packet, { payloadType: PCMU_PAYLOAD_TYPE, sequenceNumber: this.sequenceNumber, timestamp, ssrc: this.ssrc });
      packet.writeUInt32BE(TAG, 12);
      packet.writeUInt32BE(this.sent, 16);
      packet.writeDoubleBE(now, 20);
      this.socket.send(packet, this.target.port, this.target.ip);
      this.sequenceNumber = (this.sequenceNumber + 1) & 0xffff;
      this.sent++;
      this.nextAt += PACKET_MS;
      if (now >= this.bench.windowStart && now < this.bench.windowEnd) this.sentInWindow++;
    }
  }

  private onEcho(msg: Buffer): void {
    const rtp = parseRtp(msg);
    if (!rtp || rtp.payloadLength !== PAYLOAD_BYTES || msg.readUInt32BE(rtp.payloadOffset) !== TAG) return;
    const sentAt = msg.readDoubleBE(rtp.payloadOffset + 8);
    const now = performance.now();
    if (!this.bench.measuring || sentAt < this.bench.windowStart || sentAt >= this.bench.windowEnd) return;
    this.receivedInWindow++;
    if (now - sentAt > LATE_MS) this.lateInWindow++;
    this.jitter.update(now, sentAt);
    this.bench.rtts.push(now - sentAt);
  }
}

class Bench {
  measuring = false;
  windowStart = Infinity;
  windowEnd = Infinity;
  rtts: number[] = [];
}

function cpuTicks(pid: number): number {
  // Fields after the command name (which may contain spaces): utime and stime are the 14th and 15th fields.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

function percentile(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : NaN;
}

async function main(): Promise<void> {
  const secret = randomBytes(12).toString('hex');
  const media = spawn(process.execPath, ['--import', 'tsx', 'media/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env, HOST: '127.0.0.1', MEDIA_PORT: '0', MEDIA_WORKERS: '1', LOG_LEVEL: 'info', MEDIA_CONTROL_SECRET: secret,
      MEDIA_SANDBOX_TONE_MS: String(TONE_MS), MEDIA_RTC_MIN_PORT: '20000', MEDIA_RTC_MAX_PORT: '39999',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const onData = (d: Buffer) => {
      out += d;
      const m = /"control":"([^"]+)"/.exec(out);
      if (m) { media.stdout!.off('data', onData); media.stdout!.resume(); resolve(m[1]); }
    };
    media.stdout!.on('data', onData);
    media.once('exit', (code) => reject(new Error(`media exited (${code}) before it was ready:\n${out}`)));
  });
  const client = new MediaControlClient({ url, secret, timeoutMs: 60_000 });
  const info = await client.workers();
  const workerPid = info.workers[0].pid;
  const mediaPid = info.processPid;
  const cores = availableParallelism();
  say(`bench:media — one mediasoup worker (pid ${workerPid}), media process pid ${mediaPid}, ${cores} cores, ` +
    `${PAYLOAD_BYTES}-byte PCMU payloads at ${1000 / PACKET_MS} packets/s per call each way, ${WINDOW_MS / 1000} s per step`);
  say('loss, late, jitter and rtt are of the round trip browser → worker → far end → worker → browser; CPU is % of one core');
  say(`late: arrived, but more than ${LATE_MS} ms after it was sent (not counted as lost)`);
  say('');
  say(`calls  pkts/s out  loss %  late %   jitter ms (mean/max)  rtt ms (p50/p99)  worker CPU %  worker %/call  media proc %  generator %  load avg`);

  const bench = new Bench();
  const calls: SimulatedBrowser[] = [];
  // One timer for every call: a tick sends each call's due packet(s).
  const timer = setInterval(() => {
    const now = performance.now();
    for (const c of calls) c.tick(now);
  }, PACKET_MS);

  const addCall = async (index: number) => {
    const callId = `bench_${index}`;
    const session = await client.createSession(callId);
    const transport = await client.createBrowserTransport(callId, 'plain');
    const socket = createSocket({ type: 'udp4', recvBufferSize: 256 * 1024 });
    await new Promise<void>((r) => socket.bind(0, '127.0.0.1', r));
    await client.connectBrowserTransport(callId, { ip: '127.0.0.1', port: socket.address().port });
    const ssrc = 0x10000 + index;
    await client.produce(callId, { codecs: [{ mimeType: 'audio/PCMU', payloadType: PCMU_PAYLOAD_TYPE, clockRate: 8000 }], encodings: [{ ssrc }] });
    await client.consume(callId, session.rtpCapabilities);
    await client.resumeConsumer(callId);
    await client.attachSandboxFarEnd(callId);
    const call = new SimulatedBrowser(index, callId, socket, ssrc, transport, bench);
    calls.push(call);
  };

  let best = 0;

  let atBest: Figure[] = [];
  let bestOnTime = 0;
  let failures = 0;
  try {
    for (const target of STEPS) {
      // Add the step's calls, 16 set-ups at a time.
      const pending: number[] = [];
      for (let i = calls.length; i < target; i++) pending.push(i);
      while (pending.length) await Promise.all(pending.splice(0, 16).map(addCall));
      // Tone plays, then the echo settles.
      await new Promise((r) => setTimeout(r, TONE_MS + 1500));

      for (const c of calls) { c.sentInWindow = 0; c.receivedInWindow = 0; c.lateInWindow = 0; c.jitter.jitter = 0; }
      bench.rtts = [];
      const workerBefore = cpuTicks(workerPid);
      const mediaBefore = cpuTicks(mediaPid);
      const genBefore = process.cpuUsage();
      const wallBefore = performance.now();
      bench.windowStart = wallBefore;
      bench.windowEnd = wallBefore + WINDOW_MS;
      bench.measuring = true;
      await new Promise((r) => setTimeout(r, WINDOW_MS));
      const wall = (performance.now() - wallBefore) / 1000;
      const workerCpu = ((cpuTicks(workerPid) - workerBefore) / CLOCK_TICKS / wall) * 100;
      const mediaCpu = ((cpuTicks(mediaPid) - mediaBefore) / CLOCK_TICKS / wall) * 100;
      const gen = process.cpuUsage(genBefore);
      const genCpu = ((gen.user + gen.system) / 1e6 / wall) * 100;
      // Stragglers sent inside the window may still be on their way back: late is not lost.
      await new Promise((r) => setTimeout(r, GRACE_MS));
      bench.measuring = false;

      const sent = calls.reduce((s, c) => s + c.sentInWindow, 0);
      const received = calls.reduce((s, c) => s + c.receivedInWindow, 0);
      const loss = sent ? Math.max(0, (1 - received / sent) * 100) : 100;
      const late = sent ? (calls.reduce((s, c) => s + c.lateInWindow, 0) / sent) * 100 : 0;
      const jitters = calls.map((c) => c.jitter.jitter);
      const rtts = bench.rtts.sort((a, b) => a - b);
      say([
        String(target).padStart(5),
        (sent / wall).toFixed(0).padStart(11),
        loss.toFixed(2).padStart(7),
        late.toFixed(2).padStart(7),
        `${(jitters.reduce((a, b) => a + b, 0) / jitters.length).toFixed(2)}/${Math.max(...jitters).toFixed(2)}`.padStart(21),
        `${percentile(rtts, 0.5).toFixed(1)}/${percentile(rtts, 0.99).toFixed(1)}`.padStart(17),
        workerCpu.toFixed(1).padStart(13),
        (workerCpu / target).toFixed(3).padStart(14),
        mediaCpu.toFixed(1).padStart(13),
        genCpu.toFixed(1).padStart(12),
        loadavg()[0].toFixed(1).padStart(9),
      ].join(' '));
      if (loss < 1 && target > best) {
        atBest = [
          { name: `at ${target} calls: echo round trip p50`, value: round(percentile(rtts, 0.5), 1), unit: 'ms' },
          { name: `at ${target} calls: echo round trip p99`, value: round(percentile(rtts, 0.99), 1), unit: 'ms' },
          { name: `at ${target} calls: jitter, mean`, value: round(jitters.reduce((a, b) => a + b, 0) / jitters.length), unit: 'ms' },
          { name: `at ${target} calls: loss`, value: round(loss), unit: '%' },
          { name: `at ${target} calls: worker CPU`, value: round(workerCpu, 1), unit: '% of a core' },
          { name: `at ${target} calls: worker CPU per call`, value: round(workerCpu / target, 3), unit: '% of a core' },
          { name: `at ${target} calls: media process CPU`, value: round(mediaCpu, 1), unit: '% of a core' },
          { name: `at ${target} calls: generator CPU`, value: round(genCpu, 1), unit: '% of a core' },
        ];
      }
      if (loss < 1) best = Math.max(best, target);
      if (loss + late < 1) bestOnTime = Math.max(bestOnTime, target);
      if (loss >= 1 && ++failures >= STOP_AFTER) break;
    }
  } finally {
    clearInterval(timer);
    say('');
    say(`highest count with loss < 1 %: ${best} concurrent calls on one worker`);
    say(`highest count with loss + late (round trip > ${LATE_MS} ms) < 1 %: ${bestOnTime}`);
    await Promise.allSettled(calls.map((c) => client.closeSession(c.callId)));
    for (const c of calls) c.socket.close();
    client.close();
    media.kill('SIGTERM');
  }
  writeResult('media', [
    { name: 'concurrent calls on one worker with loss < 1 %', value: best, unit: 'calls', target: '>= 200 per worker core', met: best >= 200 },
    { name: `concurrent calls with loss + late (round trip > ${LATE_MS} ms) < 1 %`, value: bestOnTime, unit: 'calls' },
    ...atBest,
  ], { note: `MEDIA_WORKERS=1, ${cores} cores` });
}

await main();
