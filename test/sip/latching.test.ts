// Symmetric-RTP latching of a SIP leg's RTP port (SIP_RTP_LATCHING=1: media/rtp-relay.ts), against the real media
// process: two carrier legs of one `sip` session, bridged, each with a UDP socket as its far end. Leg A's SDP names 127.0.0.6 but its
// far end sends from 127.0.0.5 (inside the allow list): its first packet latches the leg, and the bridge's audio
// then flows both ways. A sender on 127.0.0.9 (outside the list) is dropped and counted, before and after the latch,
// and never gets a packet back.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import type { CarrierLegStats } from '../../shared/media/protocol.ts';
import { startMedia, until } from '../media/helpers.ts';
import { FarEnd } from './rtp-far-end.ts';

const LATCHING = { SIP_RTP_LATCHING: '1' };

t.test('a far end sending from another allowed address is latched to; one outside the allow list is refused', async (t) => {
  const media = await startMedia(t, LATCHING);
  const callId = randomUUID();
  await media.client.createSession(callId, { carrier: 'sip' });
  const a = await media.client.createCarrierLeg(callId, `${callId}-connect`);
  const b = await media.client.createCarrierLeg(callId, `${callId}-destination`);
  const farA = await FarEnd.open(t, '127.0.0.5', 'A');
  const farB = await FarEnd.open(t, '127.0.0.1', 'B');
  const outsider = await FarEnd.open(t, '127.0.0.9', 'X');
  const allow = ['127.0.0.1/32', '127.0.0.5/32', '127.0.0.6/32'];
  // A's SDP names 127.0.0.6 (nobody listens there); B's names its real socket.
  await media.client.connectCarrierLeg(callId, a.legId, { ip: '127.0.0.6', port: 40_000, mimeType: 'audio/PCMU', allow });
  await media.client.connectCarrierLeg(callId, b.legId, { ip: '127.0.0.1', port: farB.port, mimeType: 'audio/PCMU', allow });
  await media.client.bridge(callId, [a.legId, b.legId]);
  const legStats = async (legId: string): Promise<CarrierLegStats> => (await media.client.stats(callId)).carrierLegs.find((l) => l.legId === legId)!;

  // Outside the allow list, before anything latched: refused, not forwarded, not latched to.
  outsider.send({ ip: a.ip, port: a.port }, 20);
  await until('the outsider\'s packets refused', async () => (await legStats(a.legId)).refused! >= 20);
  let sa = await legStats(a.legId);
  t.equal(sa.fromFarEnd, 0, 'nothing from the outsider reached the router');
  t.equal(sa.latched, null, 'the leg did not latch to the outsider');

  // A speaks from 127.0.0.5: the leg latches there and B hears A.
  const tick = setInterval(() => { farA.send({ ip: a.ip, port: a.port }, 1); farB.send({ ip: b.ip, port: b.port }, 1); }, 20);
  t.teardown(() => clearInterval(tick));
  await until('B hearing A', () => farB.heard.length >= 25);
  // B's audio goes to where A's came from (127.0.0.5), not to the SDP's 127.0.0.6.
  await until('A hearing B', () => farA.heard.length >= 25);
  sa = await legStats(a.legId);
  t.same(sa.latched, { ip: '127.0.0.5', port: farA.port }, 'leg A latched to the address its RTP came from');
  t.ok(sa.fromFarEnd >= 25 && sa.toFarEnd >= 25, `two-way audio through leg A (${sa.fromFarEnd} in, ${sa.toFarEnd} out)`);

  // Outside the list after the latch: still refused, and it never got a packet.
  const refusedBefore = sa.refused;
  outsider.send({ ip: a.ip, port: a.port }, 20);
  await until('the outsider refused again', async () => (await legStats(a.legId)).refused! >= refusedBefore! + 20);
  clearInterval(tick);
  t.equal(outsider.heard.length, 0, 'the outsider never received RTP');
  t.ok(farB.heard.every((tag) => tag === 'A') && farA.heard.every((tag) => tag === 'B'), 'B heard only A, A only B');
  await media.client.closeSession(callId);
});

t.test('without an allow list only the SDP\'s address is heard (and latched to)', async (t) => {
  const media = await startMedia(t, LATCHING);
  const callId = randomUUID();
  await media.client.createSession(callId, { carrier: 'sip' });
  const a = await media.client.createCarrierLeg(callId, `${callId}-destination`);
  const other = await FarEnd.open(t, '127.0.0.5', 'X');
  await media.client.connectCarrierLeg(callId, a.legId, { ip: '127.0.0.1', port: 40_000, mimeType: 'audio/PCMU' });
  other.send({ ip: a.ip, port: a.port }, 10);
  await until('refused', async () => (await media.client.stats(callId)).carrierLegs[0].refused! >= 10);
  t.equal((await media.client.stats(callId)).carrierLegs[0].latched, null, 'not latched');
  const bad = await media.client.connectCarrierLeg(callId, `${callId}-destination`, { ip: '127.0.0.1', port: 40_000, mimeType: 'audio/PCMU', allow: ['300.1.1.1/8'] })
    .then(() => null, (err: { code?: string }) => err.code);
  t.ok(bad === 'validation_error' || bad === 'conflict', `a bad allow list is refused (${bad})`);
});
