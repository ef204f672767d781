// The SDK's whole side of protocol v1 in real Chromium, against a scripted peer on a real WebSocket: hello, welcome
// with the router's capabilities, a send and a recv transport, DTLS connect per transport, produce (PCMU
// preferred), consume and resume, progress, hangup and the end report. The peer's transports point at nothing, so no media flows here: the media path is the
// integration test's (real signaling + mediasoup). Everything the SDK does with the peer connection is real.
import t from 'tap';
import { chromiumSkip, launchChromium, openPage, pageEventually } from '../helpers/browser.ts';
import { eventually, testEnv } from '../helpers/env.ts';
import { startWsPeer, type PeerSocket } from '../helpers/ws-peer.ts';

// What a mediasoup router offers for audio (Opus first, as mediasoup lists it, and PCMU).
const ROUTER_CAPS = {
  codecs: [
    { kind: 'audio', mimeType: 'audio/opus', preferredPayloadType: 100, clockRate: 48000, channels: 2, parameters: {}, rtcpFeedback: [{ type: 'transport-cc', parameter: '' }] },
    { kind: 'audio', mimeType: 'audio/PCMU', preferredPayloadType: 0, clockRate: 8000, channels: 1, parameters: {}, rtcpFeedback: [] },
  ],
  headerExtensions: [
    { kind: 'audio', uri: 'urn:ietf:params:rtp-hdrext:sdes:mid', preferredId: 1, preferredEncrypt: false, direction: 'sendrecv' },
  ],
};

function transport(id: string, port: number) {
  return {
    transport_id: id,
    ice_parameters: { usernameFragment: `ufrag${id}`, password: 'p4ssw0rdp4ssw0rdp4ssw0rd', iceLite: true },
    // A loopback port nobody answers on: ICE stays checking, which is all this test needs.
    ice_candidates: [{ foundation: 'udpcandidate', priority: 1076302079, ip: '127.0.0.1', address: '127.0.0.1', port, type: 'host', protocol: 'udp' }],
    dtls_parameters: { role: 'auto', fingerprints: [{ algorithm: 'sha-256', value: Array.from({ length: 32 }, (_, i) => (i * 7 % 256).toString(16).padStart(2, '0').toUpperCase()).join(':') }] },
  };
}

const FAR_END_CONSUMER = {
  consumer_id: 'consumer-1', producer_id: 'far-end-producer', kind: 'audio',
  rtp_parameters: {
    mid: '0',
    codecs: [{ mimeType: 'audio/PCMU', payloadType: 0, clockRate: 8000, channels: 1, parameters: {}, rtcpFeedback: [] }],
    headerExtensions: [{ uri: 'urn:ietf:params:rtp-hdrext:sdes:mid', id: 1, encrypt: false, parameters: {} }],
    encodings: [{ ssrc: 22334455 }],
    rtcp: { cname: 'far-end', reducedSize: true, mux: true },
  },
};

if (chromiumSkip) {
  t.plan(0, `skip: ${chromiumSkip}`);
} else {
  const env = await testEnv(t);
  const browser = await launchChromium(t);

  t.test('a ticket call through every protocol step, ended by hangup()', async (t) => {
    let socket: PeerSocket | null = null;
    const peer = await startWsPeer(t, (msg, s) => {
      socket = s;
      const reply = (frame: Record<string, unknown>) => s.send({ ...frame, id: msg.id });
      if (msg.type === 'hello') {
        s.send({ type: 'welcome', v: 1, call_id: 'call_123', path: 'webrtc', status: 'QUEUED', media: { router_rtp_capabilities: ROUTER_CAPS } });
      } else if (msg.type === 'transport') {
        reply({ type: 'transport_created', direction: msg.direction, ...transport(`${msg.direction}-1`, 9) });
      } else if (msg.type === 'connect') {
        reply({ type: 'connected', transport_id: msg.transport_id });
      } else if (msg.type === 'produce') {
        reply({ type: 'produced', producer_id: 'producer-1' });
        s.send({ type: 'ringing', call_id: 'call_123' });
      } else if (msg.type === 'resume') {
        reply({ type: 'resumed', consumer_id: msg.consumer_id });
      } else if (msg.type === 'hangup') {
        s.send({ type: 'ended', call_id: 'call_123', status: 'COMPLETED', call_outcome: 'answered', failure_code: null, failure_category: null,
          disconnection_reason: 'api_hangup', duration_seconds: 4 });
        s.close(1000, 'ended');
      }
    });
    const { page, problems } = await openPage(browser, t);
    await page.goto(`${env.url}/softphone?token=olwt_abc123&autostart=1&signaling=${encodeURIComponent(peer.url)}`);

    t.same(await peer.next('hello'), { type: 'hello', v: 1, ticket: 'olwt_abc123' });
    const directions = [(await peer.next('transport')).direction];
    await eventually(async () => peer.received.filter((m) => m.type === 'transport').length === 2);
    directions.push(peer.received.filter((m) => m.type === 'transport')[1].direction);
    t.same(directions.sort(), ['recv', 'send'], 'one send and one recv transport');
    const consume = await peer.next('consume');
    t.equal(consume.transport_id, 'recv-1', 'consumes on the recv transport');
    t.ok(consume.rtp_capabilities.codecs.some((c: any) => c.mimeType === 'audio/PCMU'), 'the device capabilities, after loading the router\'s');
    const produce = await peer.next('produce');
    t.equal(produce.transport_id, 'send-1');
    t.equal(produce.kind, 'audio');
    t.equal(produce.rtp_parameters.codecs[0].mimeType, 'audio/PCMU', 'PCMU is sent when the router offers it');
    t.equal(produce.rtp_parameters.codecs[0].clockRate, 8000);
    const connects = peer.received.filter((m) => m.type === 'connect');
    t.same(connects.map((m) => m.transport_id), ['send-1'], 'the send transport connected (DTLS parameters sent)');
    t.match(connects[0].dtls_parameters, { role: /^(client|server)$/, fingerprints: [{ algorithm: String, value: String }] });
    t.ok(peer.received.every((m) => m.type === 'hello' || typeof m.id === 'number'), 'every request carries an id');

    await pageEventually(page, () => window.softphone.state === 'ringing');
    t.equal(await page.evaluate(() => window.softphone.callId), 'call_123');
    t.equal(await page.textContent('#call-id'), 'call_123');
    t.ok(await page.isEnabled('#hangup'), 'Hang up is enabled during the call');

    socket!.send({ type: 'answered', call_id: 'call_123' });
    socket!.send({ type: 'consumed', id: consume.id, ...FAR_END_CONSUMER });
    t.match(await peer.next('resume'), { type: 'resume', consumer_id: 'consumer-1' });
    await pageEventually(page, () => window.softphone.state === 'answered');
    t.same(peer.received.filter((m) => m.type === 'connect').map((m) => m.transport_id), ['send-1', 'recv-1'],
      'the recv transport connected once it had a consumer');
    const playing = await page.evaluate(() => {
      const a = document.querySelector('audio')!;
      const stream = a.srcObject as MediaStream | null;
      return { tracks: stream?.getAudioTracks().length ?? 0, autoplay: a.autoplay };
    });
    t.same(playing, { tracks: 1, autoplay: true }, 'the far end is wired to the <audio> element');
    const stats = await page.evaluate(() => window.softphone.stats());
    t.same(Object.keys(stats).sort(), ['bytesReceived', 'jitter', 'packetsLost', 'packetsReceived', 'packetsSent', 'roundTripTime'], 'stats() answers during the call');

    await page.evaluate(() => window.softphone.hangup());
    t.equal(await page.evaluate(() => window.softphone.state), 'ended', 'hangup() resolves once the call has ended');
    await peer.next('hangup');
    t.equal(await page.evaluate(() => window.softphone.error), null, 'ended without an error');
    t.match(await page.evaluate(() => window.softphone.ended), { status: 'COMPLETED', disconnectionReason: 'api_hangup', durationSeconds: 4 });
    t.match(await page.textContent('#log'), /ended: COMPLETED, answered/);
    t.match(await page.textContent('#log'), /duration 4 s/);
    t.ok(await page.isHidden('#error'));
    t.same(await page.evaluate(() => window.softphone.stats()), { packetsSent: 0, packetsReceived: 0, bytesReceived: 0, packetsLost: 0, jitter: null, roundTripTime: null },
      'nothing is read from closed transports');
    t.same(problems, []);
  });

  t.test('a room token goes out as room_token, and a server that closes mid-call ends it as connection_lost', async (t) => {
    const peer = await startWsPeer(t, (msg, s) => {
      if (msg.type === 'hello') s.close(1011, 'going away');
    });
    const claims = Buffer.from(JSON.stringify({ sub: 'browser', room_url: peer.url })).toString('base64url');
    const roomToken = `eyJhbGciOiJIUzI1NiJ9.${claims}.c2lnbmF0dXJl`;
    const { page, problems } = await openPage(browser, t);
    // No ?signaling=: the room token names its own signaling URL.
    await page.goto(`${env.url}/softphone?token=${roomToken}&autostart=1`);
    t.same(await peer.next('hello'), { type: 'hello', v: 1, room_token: roomToken });
    await pageEventually(page, () => window.softphone.state === 'ended');
    t.match(await page.evaluate(() => window.softphone.error), { code: 'connection_lost', message: /1011/ });
    t.same(problems, []);
  });

  t.test('a malformed server frame ends the call as protocol_error and tells the server', async (t) => {
    const peer = await startWsPeer(t, (msg, s) => {
      if (msg.type === 'hello') s.send({ type: 'welcome', v: 1, call_id: 'call_9', media: {} }); // no capabilities
    });
    const { page } = await openPage(browser, t);
    await page.goto(`${env.url}/softphone?token=olwt_x&autostart=1&signaling=${encodeURIComponent(peer.url)}`);
    await pageEventually(page, () => window.softphone.state === 'ended');
    t.match(await page.evaluate(() => window.softphone.error), { code: 'protocol_error', message: /router_rtp_capabilities/ });
    t.ok(await peer.next('hangup'), 'the server heard a hangup');
  });
}
