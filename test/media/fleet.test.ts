// The media fleet across machines (MEDIA_FLEET=1): two media processes, each in a network namespace of its own with
// its own address over a veth pair (set up here, as root), announce themselves in Redis; the gateway, workers and
// signaling run in the root namespace. Browser calls from Chromium spread over both media processes and carry RTP
// both ways; a SIGKILLed media process ends only its own calls (`media_lost`, channels and spend released, webhook)
// while the other's keep flowing, and the next call lands on the survivor. Then a rolling restart: a fresh media
// process joins in the dead one's namespace, the survivor drains (POST /v1/drain): new calls go to the fresh one, the
// draining one keeps its calls and exits by itself once they ended.
// Redis: the namespaces reach no 127.0.0.1 of the root namespace, so this file starts its own redis-server listening
// on 127.0.0.1 and on the root side of both veth pairs, and every process of the file uses it.
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import { mediaFleetKey } from '../../media/fleet-announcer.ts';
import { MediaControlClient } from '../../shared/media/control-client.ts';
import type { MediaAnnouncement } from '../../shared/media/protocol.ts';
import { keyer } from '../../shared/redis.ts';
import { SpendAccounts } from '../../shared/spend/spend-accounts.ts';
import { callEnv, callOrg, channelsUsed, deliveriesFor, settled, subscribeCalls } from '../calls/helpers.ts';
import { chromiumSkip, launchChromium, openPage, pageEventually } from '../helpers/browser.ts';
import { eventually, httpCall, Proc, ROOT } from '../helpers/env.ts';
import { freePort } from '../helpers/ports.ts';
import { startReceiver } from '../helpers/receiver.ts';
import { httpBase, softphoneUrl } from '../signaling/softphone.ts';

/** Why this file cannot run here, or false. */
function netnsSkip(): string | false {
  if (process.getuid?.() !== 0) return 'creating network namespaces needs root (CI runs as root)';
  const probe = `olfprobe${randomBytes(3).toString('hex')}`;
  try {
    execFileSync('ip', ['netns', 'add', probe], { stdio: 'pipe' });
    execFileSync('ip', ['netns', 'del', probe], { stdio: 'pipe' });
    return false;
  } catch (err) {
    return `ip netns is not permitted here: ${(err as Error).message.split('\n')[0]}`;
  }
}

const skip = chromiumSkip || netnsSkip();

/** One namespace with a veth pair: `root` is the root side's address, `inner` the namespace's. */
interface Netns { name: string; root: string; inner: string }

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'pipe' });

/** Creates namespace `name` joined to the root namespace by a veth pair on 10.231.<net>.0/30; removed at teardown
 *  (the veth pair goes with the namespace), even when the test fails. */
function createNetns(t: Test, tag: string, name: string, net: number): Netns {
  const outside = `olf${tag}${name}0`;
  const inside = `olf${tag}${name}1`;
  const ns = `olfleet-${tag}-${name}`;
  const root = `10.231.${net}.1`;
  const inner = `10.231.${net}.2`;
  t.teardown(() => {
    try { ip('netns', 'del', ns); } catch { /* not created */ }
    try { ip('link', 'del', outside); } catch { /* gone with the namespace */ }
  });
  ip('netns', 'add', ns);
  ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', inside, 'netns', ns);
  ip('addr', 'add', `${root}/30`, 'dev', outside);
  ip('link', 'set', outside, 'up');
  ip('-n', ns, 'addr', 'add', `${inner}/30`, 'dev', inside);
  ip('-n', ns, 'link', 'set', inside, 'up');
  ip('-n', ns, 'link', 'set', 'lo', 'up');
  return { name: ns, root, inner };
}

if (skip) {
  t.plan(0, `skip: ${skip}`);
} else {
  const tag = randomBytes(2).toString('hex');
  // Two /30 networks of its own, 10.231.<net>.0 and 10.231.<net+1>.0, not used by any address here (another run).
  const inUse = ip('-4', '-o', 'addr', 'show').toString();
  const free = Array.from({ length: 120 }, (_, i) => 2 * i).filter((n) => !inUse.includes(`10.231.${n}.`) && !inUse.includes(`10.231.${n + 1}.`));
  if (!free.length) throw new Error('no free 10.231.x.0/30 pair for the namespaces');
  const net = free[Number.parseInt(tag, 16) % free.length];
  const nsA = createNetns(t, tag, 'a', net);
  const nsB = createNetns(t, tag, 'b', net + 1);

  // The file's Redis, reachable from both namespaces through their veth pairs.
  const redisPort = await freePort();
  const redisServer = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', nsA.root, nsB.root,
    '--save', '', '--appendonly', 'no', '--protected-mode', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const redisProc = new Proc(redisServer);
  t.teardown(() => redisProc.kill('SIGKILL'));
  await eventually(async () => /Ready to accept connections/.test(redisProc.output), 20_000);

  const secret = randomBytes(16).toString('hex');
  const { env } = await callEnv(t, {
    REDIS_URL: `redis://127.0.0.1:${redisPort}`, SANDBOX_TIME_SCALE: '0.1', MEDIA_FLEET: '1', MEDIA_CONTROL_SECRET: secret,
  });
  const key = keyer(env.config.redisPrefix);
  const spend = new SpendAccounts(env.redis, key, env.db);

  /** A media process inside `ns`: control API and RTP on the namespace's address, Redis through the veth pair. */
  const startMediaIn = async (ns: Netns) => {
    const child = spawn('ip', ['netns', 'exec', ns.name, process.execPath, '--import', 'tsx', 'media/main.ts'], {
      cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env, ...env.env, LOG_LEVEL: 'info', HOST: ns.inner, MEDIA_PORT: '8082', MEDIA_LISTEN_IP: ns.inner,
        REDIS_URL: `redis://${ns.root}:${redisPort}`, MEDIA_WORKERS: '1', MEDIA_HEARTBEAT_MS: '500', MEDIA_SANDBOX_TONE_MS: '500',
      },
    });
    const proc = new Proc(child);
    t.teardown(() => { if (child.exitCode === null && child.signalCode === null) return proc.kill('SIGKILL'); });
    await proc.ready(90_000);
    const instance = /"instanceId":"([^"]+)"/.exec(proc.output)![1];
    const client = new MediaControlClient({ url: `http://${ns.inner}:8082`, secret });
    t.teardown(() => client.close());
    return { proc, instance, client, ns };
  };
  type Media = Awaited<ReturnType<typeof startMediaIn>>;
  const announced = async (): Promise<MediaAnnouncement[]> =>
    Object.values(await env.redis.hgetall(mediaFleetKey(key))).map((v) => JSON.parse(v) as MediaAnnouncement);

  let [mediaA, mediaB] = await Promise.all([startMediaIn(nsA), startMediaIn(nsB)]);
  const signaling = env.spawn('signaling');
  await signaling.ready();
  const softphone = softphoneUrl(signaling);
  const metrics = async () => (await httpCall(httpBase(softphone), 'GET', '/metrics')).text;
  /** Signaling holds an open event stream to exactly these media processes. */
  const fleetUp = (...ms: Media[]) => eventually(async () => {
    const text = await metrics();
    const up = [...text.matchAll(/^openline_signaling_media_fleet_up\{media="([^"]+)"\} 1$/gm)].map((m) => m[1]).sort();
    return JSON.stringify(up) === JSON.stringify(ms.map((m) => m.instance).sort());
  }, 30_000, 200);

  const rx = await startReceiver(t);
  const browser = await launchChromium(t);
  const org = await callOrg(env);
  await subscribeCalls(env, rx, org, ['call_completed']);

  const ticket = async () => {
    const r = await env.request('POST', '/v1/webrtc-token', { key: org.api_key, body: { from_number: org.from, to_number: '+14155550008' } });
    if (r.status !== 201) throw new Error(`webrtc-token: ${r.status} ${r.text}`);
    return r.body.data as { token: string; call_id: string };
  };
  /** An answered browser call (the sandbox far end answers, plays a tone, then echoes the browser); its page lives
   *  as long as the file (calls span subtests). */
  const placeCall = async () => {
    const { token, call_id } = await ticket();
    const { page } = await openPage(browser, t);
    await page.goto(`${env.url}/softphone?token=${encodeURIComponent(token)}&autostart=1&signaling=${encodeURIComponent(softphone)}`);
    await pageEventually(page, () => window.softphone.state === 'answered', 90_000);
    return { callId: call_id, page };
  };
  type Call = Awaited<ReturnType<typeof placeCall>>;
  const sessionsOn = async (m: Media) => (await m.client.listSessions()).sessions.map((s) => s.callId);
  /** RTP both ways in the page (≥ `n` more packets each way than `from`), and in the media process's own counters. */
  const flows = async (t: Test, m: Media, c: Call, from = { packetsSent: 0, packetsReceived: 0 }, n = 50) => {
    const s = await eventually(async () => {
      const x = await c.page.evaluate(() => window.softphone.stats());
      return x.packetsSent >= from.packetsSent + n && x.packetsReceived >= from.packetsReceived + n ? x : null;
    }, 90_000, 200).catch(async (err: Error) => {
      // What the page and the media process saw, for a call whose RTP never flowed (seen under heavy CPU load).
      const page = await c.page.evaluate(() => ({ state: window.softphone.state, stats: window.softphone.stats() })).catch((e: Error) => e.message);
      const media = await m.client.stats(c.callId).catch((e: Error) => e.message);
      throw new Error(`${err.message}: ${c.callId} on ${m.ns.inner}: page ${JSON.stringify(page)}; media ${JSON.stringify(media)}`);
    });
    const st = await m.client.stats(c.callId);
    t.ok(st.browser.in.packets > 0 && st.browser.out.packets > 0,
      `${c.callId} on ${m.ns.inner}: page sent ${s.packetsSent} / received ${s.packetsReceived}; media in ${st.browser.in.packets} / out ${st.browser.out.packets}`);
    return s;
  };

  t.test('announcements: both media processes, their addresses and load, in Redis', async (t) => {
    await fleetUp(mediaA, mediaB);
    const all = await announced();
    t.same(all.map((a) => a.controlUrl).sort(), [`http://${nsA.inner}:8082`, `http://${nsB.inner}:8082`].sort());
    for (const a of all) {
      t.match(a, { sessions: 0, routers: 0, transports: 0, workers: 1, draining: false });
      t.equal(a.listenIp, a.controlUrl.slice(7, -5), 'RTP on the namespace\'s own address');
      t.ok(a.expiresAt > a.at, 'with a deadline');
    }
  });

  const calls: Call[] = [];
  const byMedia = new Map<string, Call[]>();

  t.test('four browser calls spread over both media processes, RTP both ways', async (t) => {
    for (let i = 0; i < 4; i++) calls.push(await placeCall());
    const onA = await sessionsOn(mediaA);
    const onB = await sessionsOn(mediaB);
    t.comment(`on ${nsA.inner}: ${onA.length}, on ${nsB.inner}: ${onB.length}`);
    t.equal(onA.length + onB.length, 4, 'every call has one session');
    t.equal(onA.length, 2, 'two calls on media A');
    t.equal(onB.length, 2, 'two calls on media B');
    byMedia.set(mediaA.instance, calls.filter((c) => onA.includes(c.callId)));
    byMedia.set(mediaB.instance, calls.filter((c) => onB.includes(c.callId)));
    for (const c of byMedia.get(mediaA.instance)!) await flows(t, mediaA, c);
    for (const c of byMedia.get(mediaB.instance)!) await flows(t, mediaB, c);
    const a = (await announced()).find((x) => x.instance === mediaA.instance)!;
    t.ok(a.sessions === 2 && a.transports >= 2, `A announces its load (${a.sessions} sessions, ${a.transports} transports, cpu ${a.workerCpu})`);
  });

  t.test('SIGKILL of media A: only its calls end media_lost; B\'s keep flowing; the next call lands on B', async (t) => {
    const lost = byMedia.get(mediaA.instance)!;
    const kept = byMedia.get(mediaB.instance)!;
    const before = await Promise.all(kept.map((c) => c.page.evaluate(() => window.softphone.stats())));
    const killedAt = Date.now();
    await mediaA.proc.kill('SIGKILL');
    for (const c of lost) {
      const ended = await pageEventually(c.page, () => window.softphone.state === 'ended' && window.softphone.ended, 60_000);
      t.match(ended, { status: 'COMPLETED', disconnectionReason: 'media_lost' }, `${c.callId}: the page hears ended media_lost`);
      t.match(await settled(env, org, c.callId, 30_000), { status: 'COMPLETED', call_outcome: 'answered', disconnection_reason: 'media_lost' });
      const day = await spend.read(org.organization_id, new Date().toISOString().slice(0, 10));
      t.notOk(day?.calls.has(c.callId), 'no spend reserved for it any more');
      await rx.waitFor(() => (deliveriesFor(rx, c.callId).call_completed?.length ?? 0) === 1, 60_000);
      t.equal(deliveriesFor(rx, c.callId).call_completed[0].body.data.disconnection_reason, 'media_lost', 'call_completed says media_lost');
    }
    t.comment(`media SIGKILL -> its calls ended: ${Date.now() - killedAt} ms`);
    await eventually(async () => (await channelsUsed(env, org.organization_id)) === kept.length, 30_000, 200);
    t.pass(`channels released: ${kept.length} held (B's calls)`);
    await eventually(async () => !(await announced()).some((a) => a.instance === mediaA.instance), 30_000, 200);
    t.pass('A\'s announcement is gone');
    await fleetUp(mediaB);

    for (const [i, c] of kept.entries()) {
      t.equal(await c.page.evaluate(() => window.softphone.state), 'answered', `${c.callId} on B is still up`);
      await flows(t, mediaB, c, before[i]);
    }
    const next = await placeCall();
    t.ok((await sessionsOn(mediaB)).includes(next.callId), 'the new call is on B');
    await flows(t, mediaB, next);
    kept.push(next);
  });

  t.test('rolling restart: a fresh media process joins, B drains, keeps its calls, and exits once they ended', async (t) => {
    const kept = byMedia.get(mediaB.instance)!;
    mediaA = await startMediaIn(nsA);
    await fleetUp(mediaA, mediaB);
    const drained = await mediaB.client.drain();
    t.same(drained, { draining: true, sessions: kept.length });
    await eventually(async () => (await announced()).find((a) => a.instance === mediaB.instance)?.draining === true, 10_000, 100);
    t.pass('B announces draining');
    const refused = await mediaB.client.createSession('call_not_here').then(() => null, (e) => e);
    t.match(refused, { status: 503, code: 'unavailable' }, 'B refuses a new session');

    const next = await placeCall();
    t.ok((await sessionsOn(mediaA)).includes(next.callId), 'the new call goes to the fresh media process');
    await flows(t, mediaA, next);
    for (const c of kept) await flows(t, mediaB, c, await c.page.evaluate(() => window.softphone.stats()), 25);
    t.pass('B\'s calls carry on while it drains');

    for (const c of kept) {
      await c.page.evaluate(() => window.softphone.hangup());
      t.match(await settled(env, org, c.callId, 30_000), { status: 'COMPLETED', disconnection_reason: 'api_hangup' });
    }
    t.equal(await mediaB.proc.exited, 0, 'B exited by itself, cleanly, once its last call ended');
    t.notOk((await announced()).some((a) => a.instance === mediaB.instance), 'its announcement is gone');
    await fleetUp(mediaA);
    t.equal(await next.page.evaluate(() => window.softphone.state), 'answered', 'the call on the fresh process is untouched');
    await next.page.evaluate(() => window.softphone.hangup());
    await eventually(async () => (await channelsUsed(env, org.organization_id)) === 0, 30_000, 200);
    t.pass('every channel released');
  });
}

