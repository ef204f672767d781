// A SIP leg's RTP straight into mediasoup (the default, SIP_RTP_LATCHING unset), against the real media process and
// our patched worker: two carrier legs of one `sip` session, bridged, each with a UDP socket as its far end that
// sends with an SSRC of its own choosing (an SDP answer never names one). Each far end hears the other; a far end
// that changes its SSRC mid-call is still heard; a sender at another address is not heard and gets nothing back.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import type { CarrierLegStats } from '../../shared/media/protocol.ts';
import { startMedia, until } from '../media/helpers.ts';
import { FarEnd } from './rtp-far-end.ts';

t.test('far ends with unsignalled SSRCs hear each other through the bridge; only the answer\'s address is heard', async (t) => {
  const media = await startMedia(t);
  const callId = randomUUID();
  await media.client.createSession(callId, { carrier: 'sip' });
  const a = await media.client.createCarrierLeg(callId, `${callId}-connect`);
  const b = await media.client.createCarrierLeg(callId, `${callId}-destination`);
  t.ok(a.rtcpPort && a.rtcpPort !== a.port, `leg A has an RTCP port of its own (${a.port}/${a.rtcpPort})`);
  const farA = await FarEnd.open(t, '127.0.0.1', 'A', 1111);
  const farB = await FarEnd.open(t, '127.0.0.1', 'B', 2222);
  const outsider = await FarEnd.open(t, '127.0.0.5', 'X', 1111);
  const allow = ['127.0.0.0/8'];
  await media.client.connectCarrierLeg(callId, a.legId, { ip: '127.0.0.1', port: farA.port, mimeType: 'audio/PCMU', allow });
  await media.client.connectCarrierLeg(callId, b.legId, { ip: '127.0.0.1', port: farB.port, mimeType: 'audio/PCMU', allow });
  await media.client.bridge(callId, [a.legId, b.legId]);
  const legStats = async (legId: string): Promise<CarrierLegStats> => (await media.client.stats(callId)).carrierLegs.find((l) => l.legId === legId)!;

  const tick = setInterval(() => {
    farA.send({ ip: a.ip, port: a.port }, 1);
    farB.send({ ip: b.ip, port: b.port }, 1);
    outsider.send({ ip: a.ip, port: a.port }, 1); // inside the allow list, but not the answer's address
  }, 20);
  t.teardown(() => clearInterval(tick));
  await until('B hearing A', () => farB.heard.length >= 25);
  await until('A hearing B', () => farA.heard.length >= 25);
  const sa = await legStats(a.legId);
  t.ok(sa.fromFarEnd >= 25 && sa.toFarEnd >= 25, `two-way audio through leg A (${sa.fromFarEnd} in, ${sa.toFarEnd} out)`);
  t.equal(sa.latched, null, 'no latching without SIP_RTP_LATCHING');
  t.equal(sa.dropped, null, 'drops are not counted without the relay');

  // The far end switches SSRC (a media server changing source): still heard.
  const heardBefore = farB.heard.length;
  farA.ssrc = 3333;
  await until('B hearing A after its SSRC changed', () => farB.heard.length >= heardBefore + 25);
  clearInterval(tick);

  t.equal(outsider.heard.length, 0, 'the other sender never received RTP');
  t.ok(farB.heard.every((tag) => tag === 'A'), 'B heard only A (nothing of the other sender)');
  t.ok(farA.heard.every((tag) => tag === 'B'), 'A heard only B');
  await media.client.closeSession(callId);
});
