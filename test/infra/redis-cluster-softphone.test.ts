// Signaling and media on a Redis Cluster (REDIS_CLUSTER_NODES): a fresh 3-master cluster this file starts itself
// (test/helpers/redis-cluster.ts), and every process of the platform spawned against it: the gateway, the workers,
// signaling and media. What uses Redis on the browser-call path is driven end to end:
//   - a softphone call from Chromium to the sandbox's answering number: the ticket redeemed, progress reaching the
//     page over signaling's pub/sub subscriber, RTP both ways through media (the far end echoes the browser), a
//     hang-up, COMPLETED with its channels released and its webhook delivered;
//   - the gateway's call stream (GET /v1/calls/stream, its own pub/sub subscriber) carrying that call's and a dialed
//     bridge call's states;
//   - MEDIA_FLEET=1: two media processes announcing themselves in the cluster, a signaling process of the fleet
//     placing two browser calls on the two of them (the choice recorded per call in the cluster), RTP both ways;
//   - an incoming sandbox call ringing a listening browser on each of two signaling processes (the incoming-call
//     channel), one accepting, the other told it was taken, the call COMPLETED;
//   - signaling's heartbeats share a slot with the reconciler's watched-since key (they must be lost together);
//   - no process logged a cross-slot or redirection error.
import t, { type Test } from 'tap';
import calculateSlot from 'cluster-key-slot';
import type { Page } from 'playwright-core';
import { mediaFleetKey } from '../../media/fleet-announcer.ts';
import { ChannelAccounts } from '../../shared/channels/channel-accounts.ts';
import { setLimits } from '../../shared/calls/limits.ts';
import { MediaControlClient } from '../../shared/media/control-client.ts';
import type { MediaAnnouncement } from '../../shared/media/protocol.ts';
import { DEV_CONTROL_SECRET } from '../../shared/media/settings.ts';
import { configKeyer, isCluster } from '../../shared/redis.ts';
import { chromiumSkip, launchChromium, openPage, pageEventually } from '../helpers/browser.ts';
import { eventually, httpCall, testEnv, type Proc } from '../helpers/env.ts';
import { OwnRedisCluster } from '../helpers/redis-cluster.ts';
import { startReceiver, type Receiver } from '../helpers/receiver.ts';
import { SseStream } from '../helpers/sse.ts';
import { deliveriesFor } from '../calls/helpers.ts';
import { httpBase, Phone, softphoneUrl } from '../signaling/softphone.ts';
import { aliveKey } from '../../signaling/reconciler.ts';
import type { CallRuntime } from '../../shared/calls/runtime.ts';

/** What a process must never log on a cluster: a script, MULTI or MGET over several slots, or a redirection the client
 *  did not follow. */
const CLUSTER_ERRORS = /CROSSSLOT|MOVED|\bASK \d+ |All keys in the pipeline|ClusterAllFailedError|Too many Cluster redirections/;

if (chromiumSkip) {
  t.plan(0, `skip: ${chromiumSkip}`);
} else {
  const cluster = await OwnRedisCluster.create(t);
  // Every process is spawned (none in process), so each one's log can be read for cluster errors. Sandbox at 0.1:
  // 0008 answers and talks until hung up; a dialed 4567 completes in about a second.
  const env = await testEnv(t, {
    gateway: false,
    env: { REDIS_CLUSTER_NODES: cluster.nodes, SANDBOX_TIME_SCALE: '0.1', WEBHOOK_ALLOW_INSECURE: '1', WEBHOOK_RETRY_SCALE: '0.01' },
  });
  // No assertion at the top level: tap's root test would end at the next idle moment (autoend), killing the processes
  // below while they start.
  if (!isCluster(env.redis) || !env.config.redisClusterNodes) throw new Error('the file does not run on the cluster');
  const key = configKeyer(env.config);
  const chan = new ChannelAccounts(env.redis, key, env.db);
  const procs = new Map<string, Proc>();
  const spawn = (name: string, proc: Parameters<typeof env.spawn>[0], extra: Record<string, string> = {}) => {
    const p = env.spawn(proc, extra);
    procs.set(name, p);
    return p;
  };

  const media = spawn('media', 'media', { MEDIA_WORKERS: '1', MEDIA_HEARTBEAT_MS: '500', MEDIA_SANDBOX_TONE_MS: '500' });
  const workers = spawn('workers', 'workers');
  const gateway = spawn('gateway', 'gateway');
  await Promise.all([media.ready(), workers.ready(), gateway.ready()]);
  const url = /"url":"(http:\/\/[^"]+)"/.exec(gateway.output)![1];
  const controlUrl = /"control":"(http:[^"]+)"/.exec(media.output)![1];
  const mediaClient = new MediaControlClient({ url: controlUrl, secret: DEV_CONTROL_SECRET });
  t.teardown(() => mediaClient.close());
  const signaling = spawn('signaling', 'signaling', { MEDIA_CONTROL_URL: controlUrl });
  await signaling.ready();

  const rx = await startReceiver(t);
  const browser = await launchChromium(t);

  // An organization whose limits do not get in the way, subscribed to the call webhooks.
  const boot = await env.bootstrap({ numbers: 1 });
  await setLimits(env.db, boot.organization_id, { channel_limit: 1000, calls_per_minute: 10_000, daily_spend_cap_cents: 100_000_000 });
  const org = { ...boot, from: boot.phone_numbers[0] };
  const api = (method: string, path: string, body?: unknown) => httpCall(url, method, path, { key: org.api_key, body });
  for (const event_type of ['new_call', 'call_completed']) {
    const r = await api('POST', '/api/v1/webhook_subscriptions', { webhook_url: rx.url(`/${org.organization_id}/${event_type}`), event_type });
    if (r.status !== 201) throw new Error(`subscribe: ${r.status} ${r.text}`);
  }

  const getCall = async (id: string) => {
    const r = await api('GET', `/v1/calls/${id}`);
    if (r.status !== 200) throw new Error(`GET call: ${r.status} ${r.text}`);
    return r.body.data;
  };
  const settled = (id: string, timeoutMs = 30_000) => eventually(async () => {
    const c = await getCall(id);
    return c.ended_at && c.legs.every((l: { status: string }) => l.status === 'ENDED' || l.status === 'PENDING') ? c : null;
  }, timeoutMs);
  const ticket = async () => {
    const r = await api('POST', '/v1/webrtc-token', { from_number: org.from, to_number: '+14155550008' });
    if (r.status !== 201) throw new Error(`webrtc-token: ${r.status} ${r.text}`);
    return r.body.data as { token: string; call_id: string };
  };
  /** A browser call through `sig` from a page of its own, answered by the sandbox far end. */
  const placeCall = async (t: Test, sig: Proc) => {
    const { token, call_id } = await ticket();
    const { page, problems } = await openPage(browser, t);
    await page.goto(`${url}/softphone?token=${encodeURIComponent(token)}&autostart=1&signaling=${encodeURIComponent(softphoneUrl(sig))}`);
    await pageEventually(page, () => window.softphone.state === 'answered', 90_000);
    t.equal(await page.evaluate(() => window.softphone.callId), call_id, 'the page holds the call');
    return { callId: call_id, page, problems };
  };
  /** RTP both ways in the page: at least `n` packets more each way than `from`. */
  const pageFlows = (page: Page, n = 50, from = { packetsSent: 0, packetsReceived: 0 }) => eventually(async () => {
    const s = await page.evaluate(() => window.softphone.stats());
    return s.packetsSent >= from.packetsSent + n && s.packetsReceived >= from.packetsReceived + n ? s : null;
  }, 90_000, 200);
  const delivered = (rx: Receiver, callId: string) => eventually(async () => {
    const d = deliveriesFor(rx, callId);
    return d.new_call && d.call_completed ? d : null;
  }, 60_000, 100);
  const folded = (xs: string[]) => xs.filter((s, i) => i === 0 || xs[i - 1] !== s);
  const openStream = () => SseStream.open(url, '/v1/calls/stream', { authorization: `Bearer ${org.api_key}` });

  t.test('a softphone call on the cluster: audio both ways, hang-up, COMPLETED, channels released, webhook; its call stream', async (t) => {
    const stream = await openStream();
    t.equal(stream.status, 200, 'call stream open');
    await stream.until(() => stream.comments.includes('stream open'), 10_000, 'the opening comment');

    const { callId, page, problems } = await placeCall(t, signaling);
    t.ok(await chan.used(org.organization_id) > 0, 'the call holds channels in the cluster\'s accounts');
    const s = await pageFlows(page);
    const far = await eventually(async () => {
      const x = await mediaClient.stats(callId);
      return x.farEnd?.phase === 'echo' && x.farEnd.echoPacketsSent >= 25 ? x : null;
    }, 60_000, 200);
    t.ok(s.packetsSent >= 50 && s.packetsReceived >= 50, `page counts RTP both ways (sent ${s.packetsSent}, received ${s.packetsReceived})`);
    t.ok(far.browser.in.packets > 0, `media got the browser's audio (${far.browser.in.packets} packets)`);
    t.ok(far.farEnd!.echoPacketsSent >= 25, `the far end echoes the browser (${far.farEnd!.echoPacketsSent} packets)`);
    t.ok(far.browser.out.packets > far.farEnd!.tonePacketsSent, `media sent tone + echo to the browser (${far.browser.out.packets} packets)`);

    await page.evaluate(() => window.softphone.hangup());
    await pageEventually(page, () => window.softphone.state === 'ended');
    const c = await settled(callId);
    t.match(c, { status: 'COMPLETED', call_outcome: 'answered', disconnection_reason: 'api_hangup' });
    await eventually(async () => (await chan.used(org.organization_id)) === 0, 30_000, 100);
    t.pass('channels released (0 used)');
    await eventually(async () => !(await mediaClient.listSessions()).sessions.some((x) => x.callId === callId), 30_000, 100);
    t.pass('media session closed');
    const d = await delivered(rx, callId);
    t.equal(d.call_completed.length, 1, 'call_completed webhook delivered');
    t.equal(d.call_completed[0].body.data.status, 'COMPLETED');

    await stream.until(() => stream.callStatuses(callId).includes('COMPLETED'), 30_000, 'the call\'s COMPLETED on the stream');
    const states = folded(stream.callStatuses(callId));
    t.same(states.slice(-2), ['ANSWERED', 'COMPLETED'], `the stream carried the call's states (${states.join(', ')})`);
    t.ok(states.includes('RINGING'), 'RINGING among them');
    t.match(stream.events.filter((e) => e.data.call_id === callId).at(-1)!.data,
      { call_id: callId, status: 'COMPLETED', type: 'webrtc', call_outcome: 'answered', disconnection_reason: 'api_hangup' });
    stream.close();
    t.same(problems, [], 'no console errors in the page');
  });

  t.test('the call stream follows a dialed bridge call on the cluster: QUEUED, RINGING, ANSWERED, COMPLETED', async (t) => {
    const stream = await openStream();
    await stream.until(() => stream.comments.includes('stream open'), 10_000, 'the opening comment');
    const r = await api('POST', '/v1/calls/dial', { from_number: org.from, to_number: '+14155554567', connect_number: '+14155550199' });
    t.equal(r.status, 202, r.status === 202 ? 'dial accepted' : r.text);
    const id = r.body.data.call_id;
    await stream.until(() => stream.callStatuses(id).includes('COMPLETED'), 60_000, 'COMPLETED');
    t.same(folded(stream.callStatuses(id)), ['QUEUED', 'RINGING', 'ANSWERED', 'COMPLETED']);
    stream.close();
    const d = await delivered(rx, id);
    t.equal(d.call_completed[0].body.data.status, 'COMPLETED', 'its webhook delivered');
    await eventually(async () => (await chan.used(org.organization_id)) === 0, 30_000, 100);
    t.pass('channels released');
  });

  t.test('MEDIA_FLEET=1 on the cluster: two media processes announce; two calls land on different ones; audio both ways', async (t) => {
    const fleetMedia = await Promise.all(['media-a', 'media-b'].map(async (name) => {
      const p = spawn(name, 'media', { MEDIA_FLEET: '1', MEDIA_WORKERS: '1', MEDIA_HEARTBEAT_MS: '500', MEDIA_SANDBOX_TONE_MS: '500' });
      await p.ready();
      const instance = /"instanceId":"([^"]+)"/.exec(p.output)![1];
      const client = new MediaControlClient({ url: /"control":"(http:[^"]+)"/.exec(p.output)![1], secret: DEV_CONTROL_SECRET });
      t.teardown(() => client.close());
      return { name, instance, client };
    }));
    const announced = async () => Object.values(await env.redis.hgetall(mediaFleetKey(key))).map((v) => JSON.parse(v) as MediaAnnouncement);
    const ids = fleetMedia.map((m) => m.instance).sort();
    await eventually(async () => JSON.stringify((await announced()).map((a) => a.instance).sort()) === JSON.stringify(ids), 30_000, 100);
    t.pass('both media processes announced in the cluster');

    const sig = spawn('signaling-fleet', 'signaling', { MEDIA_FLEET: '1' });
    await sig.ready();
    // Signaling's event stream to both is open (its metrics say so).
    await eventually(async () => {
      const text = (await httpCall(httpBase(softphoneUrl(sig)), 'GET', '/metrics')).text;
      const up = [...text.matchAll(/^openline_signaling_media_fleet_up\{media="([^"]+)"\} 1$/gm)].map((m) => m[1]).sort();
      return JSON.stringify(up) === JSON.stringify(ids);
    }, 30_000, 200);
    t.pass('the fleet\'s signaling reaches both');

    const calls = [];
    for (let i = 0; i < 2; i++) {
      const c = await placeCall(t, sig);
      const recorded = await env.redis.get(key('media', 'call', c.callId));
      t.ok(recorded, `${c.callId}: its media process recorded in the cluster (${recorded})`);
      calls.push({ ...c, media: recorded! });
    }
    t.not(calls[0].media, calls[1].media, 'the two calls are on two different media processes');
    t.same(calls.map((c) => c.media).sort(), ids, 'one call on each');
    for (const c of calls) {
      const m = fleetMedia.find((x) => x.instance === c.media)!;
      t.same((await m.client.listSessions()).sessions.map((x) => x.callId), [c.callId], `${m.name} carries ${c.callId} (and only it)`);
      const s = await pageFlows(c.page);
      const st = await m.client.stats(c.callId);
      t.ok(st.browser.in.packets > 0 && st.browser.out.packets > 0,
        `${c.callId} on ${m.name}: page sent ${s.packetsSent} / received ${s.packetsReceived}; media in ${st.browser.in.packets} / out ${st.browser.out.packets}`);
    }
    for (const c of calls) {
      await c.page.evaluate(() => window.softphone.hangup());
      t.match(await settled(c.callId), { status: 'COMPLETED', disconnection_reason: 'api_hangup' });
      await eventually(async () => (await env.redis.exists(key('media', 'call', c.callId))) === 0, 30_000, 100);
      t.same(c.problems, [], 'no console errors in the page');
    }
    t.pass('the per-call records are gone once the calls ended');
    await eventually(async () => (await chan.used(org.organization_id)) === 0, 30_000, 100);
    t.pass('channels released (0 used)');
    for (const c of calls) {
      const d = await delivered(rx, c.callId);
      t.equal(d.call_completed[0].body.data.status, 'COMPLETED', `${c.callId}: call_completed delivered`);
    }
  });

  t.test('an incoming call rings a browser on each signaling process over the cluster\'s pub/sub; one accepts, the other stops', async (t) => {
    // The gateway publishes the ring; both signaling processes hear it; the one whose browser accepts publishes taken,
    // which the other hears. Sandbox at 0.1: talk_seconds 20 is 2 s, then the caller hangs up.
    const mint = async () => {
      const r = await api('POST', '/v1/client-tokens', { from_numbers: [org.from] });
      if (r.status !== 201) throw new Error(`client token: ${r.status} ${r.text}`);
      return r.body.data.token as string;
    };
    const listen = async (sig: Proc) => {
      const ph = await Phone.connect(softphoneUrl(sig));
      t.teardown(() => ph.close());
      ph.send({ type: 'hello', v: 1, client_token: await mint() });
      await ph.frame('listening');
      return ph;
    };
    const a = await listen(signaling);
    const b = await listen(procs.get('signaling-fleet')!);
    const r = await api('POST', '/v1/sandbox/calls/inbound', { from_number: '+12125550187', to_number: org.from, ring: true, talk_seconds: 20 });
    t.equal(r.status, 201, r.status === 201 ? 'ringing' : r.text);
    const id = r.body.data.id as string;
    t.match(await a.frame('incoming'), { call_id: id }, 'the browser on the first signaling process rings');
    t.match(await b.frame('incoming'), { call_id: id }, 'the browser on the other one rings');
    a.send({ type: 'accept', call_id: id });
    t.match(await a.frame('welcome'), { call_id: id, path: 'inbound' });
    t.match(await b.frame('incoming_stopped'), { call_id: id, reason: 'answered_elsewhere' }, 'the other stops ringing (taken, across processes)');
    await a.frame('answered', 30_000);
    t.match(await a.frame('ended', 30_000), { call_id: id, status: 'COMPLETED', call_outcome: 'answered', disconnection_reason: 'remote_hangup' });
    t.match(await settled(id), { status: 'COMPLETED', picked_up: true });
    await eventually(async () => (await chan.used(org.organization_id)) === 0, 30_000, 100);
    t.pass('channels released (0 used)');
    const d = await delivered(rx, id);
    t.equal(d.call_completed[0].body.data.status, 'COMPLETED', 'call_completed delivered');
    t.ok(b.closed === null, 'the other browser still listens');
  });

  t.test('signaling\'s heartbeats are in one slot with its watched-since key, and the processes\' are there', async (t) => {
    // The reconciler judges a missing heartbeat as death only while the watched-since key survived: on a cluster they
    // must sit on one master, or a master that comes back empty takes heartbeats and leaves the key.
    const rt = { deps: { key } } as unknown as CallRuntime;
    const instances = [...procs].filter(([name]) => name.startsWith('signaling')).map(([, p]) => /"instance":"([^"]+)"/.exec(p.output)?.[1]);
    t.equal(instances.filter(Boolean).length, 2, 'both signaling processes named their instance');
    const slots = new Set([key('sig', 'watched-since'), key('sig', 'reconcile-lock'), ...instances.map((i) => aliveKey(rt, i!))].map((k) => calculateSlot(k)));
    t.equal(slots.size, 1, 'one slot');
    for (const i of instances) t.equal(await env.redis.exists(aliveKey(rt, i!)), 1, `${i}'s heartbeat is in the cluster`);
    t.ok(await env.redis.get(key('sig', 'watched-since')), 'the reconciler\'s watched-since key too');
  });

  t.test('no process logged a cross-slot or redirection error', async (t) => {
    t.ok(procs.size >= 6, [...procs.keys()].join(', '));
    for (const [name, p] of procs) t.same(p.output.split('\n').filter((l) => CLUSTER_ERRORS.test(l)), [], `${name}: no such line`);
    const sizes = await cluster.sizes();
    t.ok(sizes.filter((n) => n > 0).length >= 2, `keys spread over the masters (${sizes.join(', ')})`);
  });
}
