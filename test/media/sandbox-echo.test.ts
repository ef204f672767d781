// A call's media through the real media process and a real mediasoup worker: an RTP endpoint in the browser's
// place sends marked PCMU packets; after the far end is attached it must hear the sandbox tone first, then its own
// packets echoed back (both directions through the router). Closing the session frees the router.
import t from 'tap';
import type { MediaEvent } from '../../shared/media/protocol.ts';
import { sandboxTonePayloads } from '../../media/sandbox-far-end.ts';
import { markedPayload, pcmuRtpParameters, readMark, RtpEndpoint, startMedia, until } from './helpers.ts';

const TONE_MS = 600;

t.test('tone, then the echo of the browser audio; close frees the router', async (t) => {
  const media = await startMedia(t, { MEDIA_SANDBOX_TONE_MS: String(TONE_MS) });
  const { client } = media;
  const events: MediaEvent[] = [];
  const stream = client.watch();
  t.teardown(() => stream.close());
  stream.on('event', (e) => events.push(e));
  await until('the hello line', () => events.find((e) => e.type === 'hello'));

  const callId = `call_${Date.now()}`;
  const session = await client.createSession(callId);
  t.equal(session.created, true);
  const codecs = (session.rtpCapabilities as { codecs: { mimeType: string }[] }).codecs.map((c) => c.mimeType);
  t.equal(codecs[0], 'audio/PCMU', 'PCMU is the router\'s first codec (what a carrier leg speaks)');
  t.ok(codecs.includes('audio/opus'), 'Opus is offered too');
  t.equal((await client.createSession(callId)).created, false, 'create is idempotent per call id');

  const transport = await client.createBrowserTransport(callId, 'plain');
  const browser = await RtpEndpoint.open(t, 0x0bad_cafe);
  await client.connectBrowserTransport(callId, { ip: '127.0.0.1', port: browser.port });
  await client.produce(callId, pcmuRtpParameters(browser.ssrc));
  const consumer = await client.consume(callId, session.rtpCapabilities);
  t.equal(consumer.paused, true, 'the consumer starts paused');
  await client.resumeConsumer(callId);
  const consumerSsrc = (consumer.rtpParameters as { encodings: { ssrc: number }[] }).encodings[0].ssrc;

  // The browser talks from before the answer on, 50 packets a second.
  let sent = 0;
  const talk = setInterval(() => browser.send(transport, markedPayload('OLTEST', sent++)), 20);
  t.teardown(() => clearInterval(talk));

  const attached = await client.attachSandboxFarEnd(callId);
  t.same(attached, { kind: 'sandbox', phase: 'tone', toneMs: TONE_MS });

  const tone = sandboxTonePayloads(TONE_MS);
  const echoed = () => browser.received.filter((p) => readMark(p.payload, 'OLTEST') !== null);
  await until('the whole tone and 20 echoed packets', () => echoed().length >= 20, 30_000);
  clearInterval(talk);

  const firstEcho = browser.received.findIndex((p) => readMark(p.payload, 'OLTEST') !== null);
  const beforeEcho = browser.received.slice(0, firstEcho);
  t.equal(beforeEcho.length, tone.length, `every tone packet (${tone.length}) arrived before the echo`);
  t.ok(beforeEcho.every((p, i) => p.payload.equals(tone[i])), 'the tone arrived in order, byte for byte');
  t.ok(browser.received.every((p) => p.header.ssrc === consumerSsrc && p.header.payloadType === 0), 'one PCMU stream, on the consumer\'s SSRC');
  const marks = echoed().map((p) => readMark(p.payload, 'OLTEST')!);
  t.ok(marks.every((m) => m < sent), 'every echoed payload is one the browser sent');
  t.ok(marks.every((m, i) => i === 0 || m > marks[i - 1]), 'echoed in order');
  t.ok(browser.received.slice(firstEcho).every((p) => readMark(p.payload, 'OLTEST') !== null), 'nothing but the echo after the tone');
  const seqs = browser.received.map((p) => p.header.sequenceNumber);
  t.equal(seqs[firstEcho], (seqs[firstEcho - 1] + 1) & 0xffff, 'the echo continues the tone\'s sequence numbers');

  const stats = await client.stats(callId);
  t.ok(stats.browser.in.packets >= sent - 5, `the browser's producer counted its packets (${stats.browser.in.packets} of ${sent})`);
  t.ok(stats.carrier.in.packets >= tone.length + 20, `the carrier producer counted tone and echo (${stats.carrier.in.packets})`);
  t.ok(stats.browser.out.packets >= tone.length + 20, 'the browser consumer sent them on');
  t.equal(stats.farEnd?.phase, 'echo');
  t.equal(stats.farEnd?.tonePacketsSent, tone.length);
  t.ok(stats.farEnd!.echoPacketsSent >= 20);

  const summary = await client.getSession(callId);
  t.equal(summary.farEnd?.phase, 'echo');
  t.equal(summary.browserTransport?.type, 'plain');
  t.equal((await client.workers()).workers[0].sessions, 1, 'one router on the worker');

  await client.closeSession(callId);
  t.equal(await client.getSession(callId).then(() => 200, (e: { status: number }) => e.status), 404, 'the session is gone');
  t.equal((await client.workers()).workers[0].sessions, 0, 'its router is closed');
  await until('the session_closed event', () => events.find((e) => e.type === 'session_closed' && e.callId === callId && e.reason === 'requested'));
  const quietSince = browser.received.length;
  await new Promise((r) => setTimeout(r, 200));
  t.equal(browser.received.length, quietSince, 'no media after close');
});
