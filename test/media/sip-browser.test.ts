// A browser in a `sip` media session (CARRIER=sip, paths A and B), through the real media process's control API: a
// plain RTP endpoint stands in for the browser and a UDP socket for the SIP far end (the phone behind the leg's RTP
// port). Whichever order the browser and the SIP leg arrive in, the browser's audio leaves through the leg and the
// far end's reaches the browser; codecs the browser cannot share with the leg are refused with codec_mismatch.
import t, { type Test } from 'tap';
import { MediaControlError } from '../../shared/media/control-client.ts';
import { markedPayload, pcmuRtpParameters, readMark, RtpEndpoint, startMedia, until } from './helpers.ts';

const PCMU_CAPS = { codecs: [{ kind: 'audio', mimeType: 'audio/PCMU', clockRate: 8000, preferredPayloadType: 0, rtcpFeedback: [] }], headerExtensions: [] };

const { client } = await startMedia(t);

/** The browser's side: a plain transport connected to an endpoint, producing PCMU (and consuming, when `consume`). */
async function browserJoins(callId: string, ssrc: number, steps: ('produce' | 'consume')[]) {
  const endpoint = await RtpEndpoint.open(t, ssrc);
  const tr = await client.createBrowserTransport(callId, 'plain');
  await client.connectBrowserTransport(callId, { ip: '127.0.0.1', port: endpoint.port });
  let consumed: { producerId: string } | null = null;
  for (const step of steps) {
    if (step === 'produce') await client.produce(callId, pcmuRtpParameters(ssrc));
    else { consumed = await client.consume(callId, PCMU_CAPS); await client.resumeConsumer(callId); }
  }
  return { endpoint, to: { ip: tr.ip, port: tr.port }, consumed };
}

/** 50 marked packets each way; both sides must receive most of them. */
async function bothWays(t: Test, browser: { endpoint: RtpEndpoint; to: { ip: string; port: number } }, far: RtpEndpoint, legPort: number) {
  for (let n = 0; n < 50; n++) {
    browser.endpoint.send(browser.to, markedPayload('browser', n));
    far.send({ ip: '127.0.0.1', port: legPort }, markedPayload('phone', n));
    await new Promise((r) => setTimeout(r, 20));
  }
  await until('the far end to hear the browser', () => far.received.filter((p) => readMark(p.payload, 'browser') !== null).length >= 40);
  await until('the browser to hear the far end', () => browser.endpoint.received.filter((p) => readMark(p.payload, 'phone') !== null).length >= 40);
  t.pass('the browser\'s RTP reached the far end and the far end\'s reached the browser');
}

t.test('path A: the browser consumes and produces before the SIP leg exists; the leg takes over its port', async (t) => {
  const callId = 'call_sip_browser_a';
  await client.createSession(callId, { carrier: 'sip' });
  const browser = await browserJoins(callId, 3101, ['consume', 'produce']);
  t.ok(browser.consumed?.producerId, 'the browser consumes its far end before any SIP leg');
  const leg = await client.createCarrierLeg(callId, 'leg_a');
  t.equal(leg.created, true);
  t.same((await client.getSession(callId)).carrierLegs, ['leg_a'], 'the leg took over the port made for the browser');
  t.equal((await client.createCarrierLeg(callId, 'leg_a')).port, leg.port, 'a repeated create answers the same port');
  const far = await RtpEndpoint.open(t, 3201);
  await client.connectCarrierLeg(callId, 'leg_a', { ip: '127.0.0.1', port: far.port, rtcpPort: far.port, mimeType: 'audio/PCMU' });
  await bothWays(t, browser, far, leg.port);
  const s = await client.stats(callId);
  t.equal(s.carrierLegs[0].codec, 'audio/PCMU');
  await client.closeSession(callId);
});

t.test('path B: the SIP leg answered first; then the browser produces and consumes', async (t) => {
  const callId = 'call_sip_browser_b';
  await client.createSession(callId, { carrier: 'sip' });
  const leg = await client.createCarrierLeg(callId, 'leg_b');
  const far = await RtpEndpoint.open(t, 3202);
  await client.connectCarrierLeg(callId, 'leg_b', { ip: '127.0.0.1', port: far.port, rtcpPort: far.port, mimeType: 'audio/PCMU' });
  const browser = await browserJoins(callId, 3102, ['produce', 'consume']);
  await bothWays(t, browser, far, leg.port);
  await client.closeSession(callId);
});

t.test('a far end answering PCMA cannot talk to a browser: codec_mismatch, either way round', async (t) => {
  const refused = async (p: Promise<unknown>) => {
    const err = await p.then(() => null, (e: unknown) => e);
    t.ok(err instanceof MediaControlError, 'refused');
    return err as MediaControlError;
  };
  // The browser came first: the leg is pinned to PCMU, a PCMA answer is refused.
  await client.createSession('call_sip_pcma_1', { carrier: 'sip' });
  await browserJoins('call_sip_pcma_1', 3103, ['consume']);
  await client.createCarrierLeg('call_sip_pcma_1', 'leg_c');
  const far = await RtpEndpoint.open(t, 3203);
  let err = await refused(client.connectCarrierLeg('call_sip_pcma_1', 'leg_c', { ip: '127.0.0.1', port: far.port, rtcpPort: far.port, mimeType: 'audio/PCMA' }));
  t.match(err, { status: 409, code: 'codec_mismatch' });
  // The leg answered PCMA first: the browser's consume is refused.
  await client.createSession('call_sip_pcma_2', { carrier: 'sip' });
  await client.createCarrierLeg('call_sip_pcma_2', 'leg_d');
  await client.connectCarrierLeg('call_sip_pcma_2', 'leg_d', { ip: '127.0.0.1', port: far.port, rtcpPort: far.port, mimeType: 'audio/PCMA' });
  const endpoint = await RtpEndpoint.open(t, 3104);
  await client.createBrowserTransport('call_sip_pcma_2', 'plain');
  await client.connectBrowserTransport('call_sip_pcma_2', { ip: '127.0.0.1', port: endpoint.port });
  err = await refused(client.consume('call_sip_pcma_2', PCMU_CAPS));
  t.match(err, { code: 'codec_mismatch' });
  err = await refused(client.produce('call_sip_pcma_2', pcmuRtpParameters(3104)));
  t.match(err, { code: 'codec_mismatch' });
  t.equal((await client.getSession('call_sip_pcma_2')).browserProducerId, null, 'a refused produce leaves no producer');
  await client.closeSession('call_sip_pcma_1');
  await client.closeSession('call_sip_pcma_2');
});
