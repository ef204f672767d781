// Real audio through the SDK: the softphone page in Chromium against a real mediasoup router (3.12.16), driven by a
// scripted protocol v1 peer whose far end echoes the browser's own microphone back. Proves PCMU is produced and
// consumed and that stats() counts RTP both ways. Needs the `mediasoup` package and its worker, which the media
// service brings: until they are installed this file skips and says so.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cachedWorkerBinary } from '../../shared/media/worker-binary.ts';
import { dirname, join } from 'node:path';
import t from 'tap';
import { chromiumSkip, launchChromium, openPage, pageEventually } from '../helpers/browser.ts';
import { eventually, ROOT, testEnv } from '../helpers/env.ts';
import { startWsPeer } from '../helpers/ws-peer.ts';

/** mediasoup's module and worker binary when this checkout has them, else why not. */
function findMediasoup(): { modulePath: string; workerBin: string } | string {
  let modulePath: string;
  try {
    modulePath = createRequire(join(ROOT, 'package.json')).resolve('mediasoup');
  } catch {
    return 'mediasoup is not installed in this checkout (the media service adds it)';
  }
  const version: string = createRequire(join(ROOT, 'package.json'))('mediasoup/package.json').version;
  const candidates = [
    process.env.MEDIASOUP_WORKER_BIN,
    join(dirname(modulePath), '..', '..', 'worker', 'out', 'Release', 'mediasoup-worker'),
    cachedWorkerBinary(version),
  ].filter((p): p is string => !!p);
  const workerBin = candidates.find((p) => existsSync(p));
  return workerBin ? { modulePath, workerBin } : `no mediasoup worker binary (looked at ${candidates.join(', ')})`;
}

const found = findMediasoup();
const skip = chromiumSkip || (typeof found === 'string' ? found : false);

if (skip) {
  t.plan(0, `skip: ${skip}`);
} else {
  const { modulePath, workerBin } = found as { modulePath: string; workerBin: string };
  process.env.MEDIASOUP_WORKER_BIN = workerBin;
  const ms: any = await import(modulePath);
  const mediasoup = ms.createWorker ? ms : ms.default;
  const env = await testEnv(t);
  const browser = await launchChromium(t);
  const worker = await mediasoup.createWorker({ logLevel: 'warn' });
  t.teardown(() => worker.close());
  const router = await worker.createRouter({
    mediaCodecs: [
      { kind: 'audio', mimeType: 'audio/opus', clockRate: 48000, channels: 2 },
      { kind: 'audio', mimeType: 'audio/PCMU', clockRate: 8000 },
    ],
  });

  t.test('the microphone goes out as PCMU and the echo comes back: stats() counts both ways', async (t) => {
    const failures: unknown[] = [];
    const call: any = {};
    let chain = Promise.resolve();
    const peer = await startWsPeer(t, (msg, socket) => {
      // One frame at a time, in order, as a signaling server would handle them.
      chain = chain.then(async () => {
        const reply = (frame: Record<string, unknown>) => socket.send({ ...frame, id: msg.id });
        if (msg.type === 'hello') {
          socket.send({ type: 'welcome', v: 1, call_id: 'call_echo', path: 'webrtc', status: 'QUEUED',
            media: { router_rtp_capabilities: router.rtpCapabilities } });
        } else if (msg.type === 'transport') {
          const tr = await router.createWebRtcTransport({ listenIps: [{ ip: '127.0.0.1' }], enableUdp: true, enableTcp: false });
          call[msg.direction] = tr;
          reply({ type: 'transport_created', direction: msg.direction, transport_id: tr.id, ice_parameters: tr.iceParameters,
            ice_candidates: tr.iceCandidates, dtls_parameters: tr.dtlsParameters });
        } else if (msg.type === 'connect') {
          await (msg.transport_id === call.send.id ? call.send : call.recv).connect({ dtlsParameters: msg.dtls_parameters });
          reply({ type: 'connected', transport_id: msg.transport_id });
        } else if (msg.type === 'consume') {
          // The far end here is the browser's own audio: consumed once the browser produces (below).
          call.caps = msg.rtp_capabilities;
          call.consumeId = msg.id;
        } else if (msg.type === 'produce') {
          call.producer = await call.send.produce({ kind: 'audio', rtpParameters: msg.rtp_parameters });
          reply({ type: 'produced', producer_id: call.producer.id });
          socket.send({ type: 'ringing', call_id: 'call_echo' });
          socket.send({ type: 'answered', call_id: 'call_echo' });
          call.consumer = await call.recv.consume({ producerId: call.producer.id, rtpCapabilities: call.caps, paused: true });
          socket.send({ type: 'consumed', id: call.consumeId, consumer_id: call.consumer.id, producer_id: call.producer.id,
            kind: 'audio', rtp_parameters: call.consumer.rtpParameters });
        } else if (msg.type === 'resume') {
          await call.consumer.resume();
          reply({ type: 'resumed', consumer_id: msg.consumer_id });
        } else if (msg.type === 'hangup') {
          socket.send({ type: 'ended', call_id: 'call_echo', status: 'COMPLETED', call_outcome: 'answered', duration_seconds: 1 });
          socket.close(1000, 'ended');
          call.send.close();
          call.recv.close();
        }
      }).catch((err) => { failures.push(err); });
    });

    const { page, problems } = await openPage(browser, t);
    await page.goto(`${env.url}/softphone?token=olwt_echo&autostart=1&signaling=${encodeURIComponent(peer.url)}`);
    await pageEventually(page, () => window.softphone.state === 'answered');
    t.equal((await peer.next('produce')).rtp_parameters.codecs[0].mimeType, 'audio/PCMU');
    // The fake peer sends answered before it creates the consumer (as signaling does): wait for it, however slow.
    await eventually(async () => call.consumer);
    t.equal(call.consumer.rtpParameters.codecs[0].mimeType, 'audio/PCMU', 'the echo comes back as PCMU');

    // 50 packets a second each way once media flows; wait for a second's worth, however slow the machine is.
    const stats = await pageEventually(page, async () => {
      const s = await window.softphone.stats();
      return s.packetsSent >= 50 && s.packetsReceived >= 50 ? s : null;
    }, 60_000);
    t.ok(stats.packetsSent >= 50, `packets sent: ${stats.packetsSent}`);
    t.ok(stats.packetsReceived >= 50, `packets received: ${stats.packetsReceived}`);
    t.ok(stats.bytesReceived >= stats.packetsReceived * 160, `bytes received: ${stats.bytesReceived} (160-byte PCMU frames)`);
    const serverSide = await call.producer.getStats();
    t.ok(serverSide.some((s: any) => s.packetCount > 0), 'mediasoup received the browser\'s RTP');

    await page.evaluate(() => window.softphone.hangup());
    t.equal(await page.evaluate(() => window.softphone.state), 'ended');
    t.equal(await page.evaluate(() => window.softphone.error), null);
    t.same(failures, [], 'the peer handled every frame');
    t.same(problems, []);
  });
}
