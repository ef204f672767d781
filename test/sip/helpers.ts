// The SIP trunk carrier's test rig: SIPp playing the trunk (test/fixtures/sip/trunk.xml, or another scenario) on a
// free port, and the platform with CARRIER=sip pointing at it: the in-process gateway, the real media, signaling and
// workers processes. Nothing is mocked: SIP goes over loopback UDP (or TCP) between signaling and SIPp, RTP between
// media and SIPp.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtempSync, readFileSync, readdirSync, existsSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sip from 'sip';
import proxy from 'sip/proxy';
import { MediaControlClient } from '../../shared/media/control-client.ts';
import { DEV_CONTROL_SECRET } from '../../shared/media/settings.ts';
import { callOrg, getCall, startRx, subscribeCalls, type CallOrg } from '../calls/helpers.ts';
import { eventually, ROOT, testEnv, type Proc, type TestEnv } from '../helpers/env.ts';
import type { Receiver } from '../helpers/receiver.ts';

interface TapLike { teardown(fn: () => unknown): void }

export const TRUNK_SCENARIO = join(ROOT, 'test/fixtures/sip/trunk.xml');
/** The digest credentials trunk.xml verifies. */
export const TRUNK_CREDENTIALS = { SIP_TRUNK_USERNAME: 'trunkuser', SIP_TRUNK_PASSWORD: 'trunkpass' };

/** Why this file cannot run here (no SIPp or sox), or false. */
export const sipSkip: string | false = !hasCommand('sipp') ? 'SIPp is not installed (apt-get install sip-tester)'
  : !hasCommand('sox') ? 'sox is not installed (apt-get install sox)' : false;

function hasCommand(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
}

/** Starts a tool of the test (SIPp, baresip) in `dir`, killed (and `dir` removed) at teardown, or when the test
 *  process dies of an error before its teardowns run; resolves once `ready(output)` holds, throws if it exits first. */
async function startTool(t: { teardown(fn: () => unknown): void }, cmd: string, args: string[], dir: string,
  ready: (output: string) => Promise<boolean>, timeoutMs: number): Promise<{ child: ChildProcess; output: () => string }> {
  const child = spawn(cmd, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => { out += d; });
  child.stderr!.on('data', (d) => { out += d; });
  const stop = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', stop);
  t.teardown(stop);
  await eventually(async () => {
    if (child.exitCode !== null) throw new Error(`${cmd} exited (${child.exitCode}): ${out}`);
    return ready(out);
  }, timeoutMs, 100);
  return { child, output: () => out };
}

/** A port free for both UDP and TCP on 127.0.0.1 right now. */
export async function freePort(): Promise<number> {
  for (;;) {
    const udp = createSocket('udp4');
    const port = await new Promise<number>((r) => udp.bind(0, '127.0.0.1', () => r(udp.address().port)));
    const tcpFree = await new Promise<boolean>((r) => {
      const srv = createServer();
      srv.once('error', () => r(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => r(true)));
    });
    udp.close();
    if (tcpFree && port < 60000) return port;
  }
}

/** A port free for UDP and TCP whose next port is free for TCP too (baresip listens for TLS on its SIP port + 1). */
export async function freePortPair(): Promise<number> {
  for (;;) {
    const port = await freePort();
    const nextFree = await new Promise<boolean>((r) => {
      const srv = createServer();
      srv.once('error', () => r(false));
      srv.listen(port + 1, '127.0.0.1', () => srv.close(() => r(true)));
    });
    if (nextFree) return port;
  }
}

/** Whether something bound the port (SIPp is listening), without talking to it. */
async function bound(port: number, transport: 'udp' | 'tcp'): Promise<boolean> {
  if (transport === 'tcp') {
    return new Promise((r) => {
      const srv = createServer();
      srv.once('error', () => r(true));
      srv.listen(port, '127.0.0.1', () => srv.close(() => r(false)));
    });
  }
  const s = createSocket('udp4');
  return new Promise((r) => {
    s.once('error', () => r(true));
    s.bind(port, '127.0.0.1', () => s.close(() => r(false)));
  });
}

export interface Sipp {
  port: number;
  child: ChildProcess;
  dir: string;
  /** Every message SIPp sent or received so far (-trace_msg). */
  messages(): string;
  /** The SIP messages of the log that start with `startLine` (e.g. 'INVITE sip:'), whole. */
  received(startLine: string): string[];
}

/** Starts SIPp as the trunk (UAS) on a free port, its RTP ports from `mediaPort`; killed at teardown. */
export async function startSipp(t: TapLike, o: { scenario?: string; transport?: 'udp' | 'tcp'; ip?: string } = {}): Promise<Sipp> {
  const dir = mkdtempSync(join(tmpdir(), 'ol-sipp-'));
  // The tone every answering branch plays as RTP (8 kHz μ-law), in SIPp's working directory.
  const sox = spawnSync('sox', ['-n', '-r', '8000', '-c', '1', '-e', 'mu-law', join(dir, 'tone.wav'), 'synth', '10', 'sine', '440']);
  if (sox.status !== 0) throw new Error(`sox failed: ${sox.stderr}`);
  const port = await freePort();
  const controlPort = await freePort();
  // RTP ports: SIPp takes a pair per call upwards from -mp; a random base keeps parallel test files apart.
  const mediaPort = 20000 + 2 * Math.floor(Math.random() * 4000);
  const log = join(dir, 'messages.log');
  const args = [
    '-sf', o.scenario ?? TRUNK_SCENARIO, '-i', o.ip ?? '127.0.0.1', '-p', String(port), '-cp', String(controlPort),
    '-mp', String(mediaPort), '-t', o.transport === 'tcp' ? 't1' : 'u1', '-trace_msg', '-message_file', log, '-nostdin',
  ];
  const { child } = await startTool(t, 'sipp', args, dir, () => bound(port, o.transport ?? 'udp'), 15_000);
  const messages = () => (existsSync(log) ? readFileSync(log, 'latin1') : '');
  return {
    port, child, dir, messages,
    // The log is blocks of "----- <time>", "<UDP|TCP> message received [n] bytes :", a blank line, the message.
    received: (startLine) => messages().split(/^-{20,} .*$/m)
      .map((block) => /^\s*\S+ message received \[\d+\] bytes :\n\n([\s\S]*)$/.exec(block)?.[1])
      .filter((msg): msg is string => !!msg && msg.startsWith(startLine)),
  };
}

export interface SipPlatform {
  env: TestEnv;
  media: MediaControlClient;
  /** The media process (tests that kill it). */
  mediaProc: Proc;
  signaling: Proc;
  workers: Proc;
  /** Where signaling's user agent listens (SIP_LISTEN with its port). */
  sipPort: number;
  org: CallOrg;
  rx: Receiver;
}

/** The platform with CARRIER=sip against a trunk on trunkIp:trunkPort; one organization subscribed to every
 *  call event. */
export async function sipPlatform(t: TapLike, trunkPort: number, extra: Record<string, string> = {}, trunkIp = '127.0.0.1'): Promise<SipPlatform> {
  const env = await testEnv(t, {
    env: {
      CARRIER: 'sip', SIP_TRUNK_URI: `sip:${trunkIp}:${trunkPort}`, SIP_LISTEN: '127.0.0.1:0',
      WEBHOOK_ALLOW_INSECURE: '1', WEBHOOK_RETRY_SCALE: '0.01', ...extra,
    },
  });
  const mediaProc = env.spawn('media', { MEDIA_WORKERS: '1', MEDIA_HEARTBEAT_MS: '500' });
  await mediaProc.ready(60_000);
  const controlUrl = /"control":"(http:[^"]+)"/.exec(mediaProc.output)![1];
  const media = new MediaControlClient({ url: controlUrl, secret: DEV_CONTROL_SECRET });
  t.teardown(() => media.close());
  const signaling = env.spawn('signaling', { MEDIA_CONTROL_URL: controlUrl });
  const workers = env.spawn('workers');
  await Promise.all([signaling.ready(60_000), workers.ready(60_000)]);
  const sipPort = Number(/"sip":"[^"]*:(\d+)"/.exec(signaling.output)![1]);
  const rx = await startRx(t);
  const org = await callOrg(env);
  await subscribeCalls(env, rx, org);
  return { env, media, mediaProc, signaling, workers, sipPort, org, rx };
}

/** Runs SIPp once (-m 1) as a caller from the trunk's address to the platform's SIP port (test/fixtures/sip/
 *  inbound-caller.xml unless another scenario is named) and answers its message log and exit code when it exits. */
export async function sippCaller(t: TapLike, sipPort: number, o: { to: string; ip?: string; scenario?: string }): Promise<{ log: string; code: number | null }> {
  const dir = mkdtempSync(join(tmpdir(), 'ol-sipin-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const log = join(dir, 'messages.log');
  const child = spawn('sipp', [`127.0.0.1:${sipPort}`, '-sf', join(ROOT, 'test/fixtures/sip', o.scenario ?? 'inbound-caller.xml'),
    '-s', o.to, '-i', o.ip ?? '127.0.0.1', '-p', String(await freePort()), '-mp', String(20000 + 2 * Math.floor(Math.random() * 4000)),
    '-m', '1', '-trace_msg', '-message_file', log, '-nostdin', '-timeout', '60s'], { cwd: dir, stdio: 'ignore' });
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL'); });
  const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
  return { log: existsSync(log) ? readFileSync(log, 'latin1') : '', code };
}

/** Waits (reading the row, not the API: the API key has a request rate limit) until the call ended and no leg is up;
 *  then answers the call as GET /v1/calls/{id} shows it. */
export async function endedCall(p: SipPlatform, id: string, timeoutMs = 60_000) {
  await eventually(async () => {
    const row = await p.env.db.oneOrNone<{ ended_at: Date | null; legs: Record<string, { status: string }> }>('SELECT ended_at, legs FROM calls WHERE id = $1', [id]);
    return row?.ended_at && Object.values(row.legs).every((l) => l.status === 'ENDED' || l.status === 'PENDING');
  }, timeoutMs, 200);
  return getCall(p.env, p.org, id);
}

/** Waits until the call's leg `role` has this status (read from the row). */
export function legStatus(p: SipPlatform, id: string, role: string, status: string, timeoutMs = 60_000) {
  return eventually(async () => {
    const row = await p.env.db.oneOrNone<{ legs: Record<string, { status: string }> }>('SELECT legs FROM calls WHERE id = $1', [id]);
    return row?.legs[role]?.status === status;
  }, timeoutMs, 200);
}

/** Call-ID of the INVITE SIPp received for `number` (each test dials a number once). */
export function sipCallIdOf(sipp: Sipp, number: string): string | null {
  const invite = sipp.received(`INVITE sip:${number}@`)[0];
  return invite ? /^Call-ID:\s*(\S+)/im.exec(invite)?.[1] ?? null : null;
}

/** The requests SIPp received in the dialog of the INVITE to `number`, by method (retransmissions included). */
export function requestsTo(sipp: Sipp, number: string): Record<string, string[]> {
  const callId = sipCallIdOf(sipp, number);
  const out: Record<string, string[]> = {};
  if (!callId) return out;
  for (const msg of sipp.received('')) {
    const method = /^([A-Z]+) sip:/.exec(msg)?.[1];
    if (method && new RegExp(`^Call-ID:\\s*${callId}\\s*$`, 'im').test(msg)) (out[method] ??= []).push(msg);
  }
  return out;
}

/** Why the audio checks cannot run here (no baresip or sox), or false. */
export const phoneSkip: string | false = sipSkip || (!hasCommand('baresip') ? 'baresip is not installed (apt-get install baresip)' : false);

export interface Phone {
  /** The account's URI (where the router sends this phone's calls). */
  uri: string;
  /** Its SIP port (UDP and TCP; TLS on the next one when `tls` is given). */
  port: number;
  dir: string;
  child: ChildProcess;
  /** What baresip logged so far. */
  log(): string;
  /** The WAV of what the phone heard in its one call (baresip's sndfile "dec" dump), once the call is over. */
  heard(): string | null;
}

/** A real SIP phone: Debian's baresip, headless, on `ip` (a 127/8 address) and a free port, auto-answering (or,
 *  with `dial`, calling that SIP URI once up), sending a `toneHz` sine from a file (aufile) and writing what it hears to a WAV (sndfile); killed at teardown. */
export async function startPhone(t: TapLike, o: {
  name: string; ip: string; toneHz: number; dial?: string; codecs?: string;
  /** Accounts of these users instead of one named `name` (a phone that answers calls to several numbers). */
  users?: string[];
  /** SIP over TLS too (baresip listens for it on its SIP port + 1): its certificate and key (one PEM file) and the CA
   *  it checks ours against. */
  tls?: { certificate: string; ca: string };
}): Promise<Phone> {
  const dir = mkdtempSync(join(tmpdir(), `ol-phone-${o.name}-`));
  // aufile reads 16-bit PCM; 60 s outlasts any call the tests make.
  const sox = spawnSync('sox', ['-n', '-r', '8000', '-c', '1', '-b', '16', '-e', 'signed-integer', join(dir, 'tone.wav'), 'synth', '60', 'sine', String(o.toneHz)]);
  if (sox.status !== 0) throw new Error(`sox failed: ${sox.stderr}`);
  // baresip binds UDP and TCP on its port and TLS on the next one (with or without a certificate), so both must be
  // free; another test taking one between our check and its bind stops it (exit 98): try again on other ports.
  let port = 0;
  let phone: Awaited<ReturnType<typeof startTool>> | null = null;
  for (let attempt = 1; !phone; attempt++) {
    port = await freePortPair();
    const rtpBase = 30000 + 2 * Math.floor(Math.random() * 5000);
    writeFileSync(join(dir, 'config'), [
      'poll_method poll',
      `sip_listen ${o.ip}:${port}`,
      `net_interface ${o.ip}`,
      `rtp_ports ${rtpBase}-${rtpBase + 99}`,
      `audio_source aufile,${join(dir, 'tone.wav')}`,
      // No sound card: aubridge is a player that plays nowhere; sndfile (an audio filter) records the decoded audio.
      'audio_player aubridge,nowhere',
      'audio_alert aubridge,nowhere',
      `snd_path ${dir}`,
      ...(o.tls ? [`sip_certificate ${o.tls.certificate}`, `sip_cafile ${o.tls.ca}`] : []),
      'module_path /usr/lib/baresip/modules',
      'module g711.so', 'module aufile.so', 'module aubridge.so', 'module sndfile.so', 'module_app account.so',
      // A calling phone: the menu module gives the /dial command that -e runs once baresip is up.
      ...(o.dial ? ['module_app menu.so'] : []), '',
    ].join('\n'));
    const accounts = (o.users ?? [o.name]).map((user) => `<sip:${user}@${o.ip}:${port}>;regint=0;answermode=auto;audio_codecs=${o.codecs ?? 'PCMU,PCMA'}\n`);
    writeFileSync(join(dir, 'accounts'), accounts.join(''));
    try {
      phone = await startTool(t, 'baresip', ['-f', dir, ...(o.dial ? ['-e', `/dial ${o.dial}`] : [])], dir, async (out) => out.includes('baresip is ready'), 30_000);
    } catch (err) {
      if (attempt >= 5 || !/exited \(98\)|Address already in use/.test(String(err))) throw err;
    }
  }
  const uri = `sip:${o.name}@${o.ip}:${port}`;
  const { child } = phone;
  const heard = () => {
    const f = readdirSync(dir).find((n) => n.endsWith('-dec.wav'));
    return f ? join(dir, f) : null;
  };
  return { uri, port, dir, child, log: phone.output, heard };
}

/** What a phone heard, measured once its recording holds at least `minSeconds` (baresip writes the WAV's header when
 *  the call closes); a timeout names the last measure and the phone's log. */
export async function heardTone(phone: Pick<Phone, 'heard' | 'log'>, minSeconds = 2.5): Promise<{ length: number; hz: number; rms: number }> {
  let seen = '';
  return eventually(async () => {
    const f = phone.heard();
    const m = f ? measureTone(f) : null;
    seen = JSON.stringify(m);
    return m && m.length >= minSeconds ? m : null;
  }, 30_000, 250).catch((e) => { throw new Error(`${e.message}: recording ${seen}\n${phone.log().slice(-1500)}`); });
}

/** What sox measures of a recording: its whole length, and the rough (zero-crossing) frequency and the RMS amplitude
 *  (0..1) of `seconds` of it from the first sound on (the silence while the other leg rang is cut; a silent
 *  recording measures 0 or NaN). */
export function measureTone(wav: string, seconds = 2): { length: number; hz: number; rms: number } {
  const stat = (effects: string[]) => {
    const out = String(spawnSync('sox', [wav, '-n', ...effects, 'stat']).stderr);
    return (label: string) => Number(new RegExp(`^${label}:\\s*(\\S+)`, 'm').exec(out)?.[1] ?? NaN);
  };
  const whole = stat([]);
  const sound = stat(['silence', '1', '0.05', '1%', 'trim', '0.2', String(seconds)]);
  return { length: whole('Length \\(seconds\\)'), hz: sound('Rough\\s+frequency'), rms: sound('RMS\\s+amplitude') };
}

export interface Router { ip: string; port: number; invites: string[] }

/** What stands at SIP_TRUNK_URI for the phones: the `sip` package's own stateful proxy (sip/proxy) on 127.0.0.4,
 *  sending each INVITE to the phone for its Request-URI's user (the dialed number), as a provider's proxy sends a
 *  call to the registered phone for a number; 404 for any other. It does not record-route: ACK and BYE go between
 *  the platform and the phone directly (their Contacts). */
export async function startRouter(t: TapLike, phones: Record<string, Phone>): Promise<Router> {
  // Not on the phones' 127.0.0.1: the package takes a Request-URI on its own address for one of its flow tokens.
  const ip = '127.0.0.4';
  const port = await freePort();
  const invites: string[] = [];
  proxy.start({ address: ip, port, tcp: false, logger: {} }, (rq) => {
    const user = sip.parseUri(rq.uri!)?.user ?? '';
    if (rq.method === 'ACK') return; // a 2xx ACK goes to the phone's Contact; non-2xx ACKs end in the transaction layer
    const phone = phones[user];
    if (rq.method !== 'INVITE' || !phone) {
      proxy.send(sip.makeResponse(rq, rq.method === 'OPTIONS' ? 200 : 404));
      return;
    }
    invites.push(user);
    rq.uri = phone.uri;
    proxy.send(rq);
  });
  t.teardown(() => sip.stop());
  return { ip, port, invites };
}
