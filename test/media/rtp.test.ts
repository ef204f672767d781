// The RTP reading the far end relies on: payload found past CSRCs, a header extension and padding; RTCP on the
// same port told apart; RFC 3550 jitter.
import t from 'tap';
import { mulawToLinear } from '../../shared/audio/mulaw-wav.ts';
import { InterarrivalJitter, isRtcp, mulawTone, parseRtp, rtpPacket } from '../../shared/media/rtp.ts';

t.test('a plain packet round-trips', async (t) => {
  const payload = Buffer.from('hello world');
  const packet = rtpPacket({ payloadType: 0, marker: true, sequenceNumber: 65535, timestamp: 0xfffffff0, ssrc: 0xdeadbeef }, payload);
  const h = parseRtp(packet)!;
  t.match(h, { payloadType: 0, marker: true, sequenceNumber: 65535, timestamp: 0xfffffff0, ssrc: 0xdeadbeef, payloadOffset: 12, payloadLength: payload.length });
});

t.test('CSRCs, a header extension and padding are skipped', async (t) => {
  const csrcs = Buffer.alloc(8, 1);
  const extension = Buffer.from([0xbe, 0xde, 0x00, 0x01, 0x10, 0xaa, 0x00, 0x00]); // one 32-bit word
  const payload = Buffer.from([1, 2, 3, 4, 5]);
  const padding = Buffer.from([0, 0, 3]);
  const header = rtpPacket({ payloadType: 111, sequenceNumber: 7, timestamp: 960, ssrc: 9 }, Buffer.alloc(0));
  header[0] = 0x80 | 0x20 | 0x10 | 2; // padding, extension, two CSRCs
  const packet = Buffer.concat([header, csrcs, extension, payload, padding]);
  const h = parseRtp(packet)!;
  t.equal(h.payloadOffset, 12 + 8 + 8);
  t.equal(h.payloadLength, payload.length);
  t.same(packet.subarray(h.payloadOffset, h.payloadOffset + h.payloadLength), payload);
});

t.test('RTCP and garbage are not RTP', async (t) => {
  const receiverReport = Buffer.from([0x80, 201, 0x00, 0x01, 0, 0, 0, 1]);
  t.ok(isRtcp(receiverReport));
  t.equal(parseRtp(receiverReport), null);
  t.equal(parseRtp(Buffer.from([0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])), null, 'version 1');
  t.equal(parseRtp(Buffer.alloc(5)), null, 'truncated');
  const badExtension = rtpPacket({ payloadType: 0, sequenceNumber: 1, timestamp: 1, ssrc: 1 }, Buffer.from([0xbe, 0xde, 0x00, 0xff]));
  badExtension[0] |= 0x10;
  t.equal(parseRtp(badExtension), null, 'an extension longer than the packet');
});

t.test('jitter follows RFC 3550', async (t) => {
  const steady = new InterarrivalJitter();
  for (let i = 0; i < 100; i++) steady.update(i * 20 + 5, i * 20);
  t.equal(steady.jitter, 0, 'constant transit: no jitter');
  const bumpy = new InterarrivalJitter();
  for (let i = 0; i < 2000; i++) bumpy.update(i * 20 + (i % 2 ? 4 : 0), i * 20);
  t.ok(Math.abs(bumpy.jitter - 4) < 0.01, `alternating 4 ms transit converges to 4 (${bumpy.jitter})`);
});

t.test('the tone is a 440 Hz sine in μ-law', async (t) => {
  const tone = mulawTone(440, 1000);
  t.equal(tone.length, 8000);
  const linear = [...tone].map(mulawToLinear);
  let crossings = 0;
  for (let i = 1; i < linear.length; i++) if (linear[i - 1] < 0 && linear[i] >= 0) crossings++;
  t.ok(Math.abs(crossings - 440) <= 1, `${crossings} upward zero crossings in a second`);
  t.ok(Math.max(...linear) > 6000 && Math.max(...linear) < 9000, 'about -12 dBFS');
});
