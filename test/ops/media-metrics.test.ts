// The media process's /healthz, /readyz (its mediasoup workers) and /metrics (workers, sessions, transports by type,
// RTP packets received and lost by its producers), behind METRICS_TOKEN. A plain RTP endpoint in the browser's place
// sends PCMU with sequence gaps: the lost packets must show up, and the counters must outlive the session.
import { createSocket } from 'node:dgram';
import t from 'tap';
import { PCMU_PAYLOAD_TYPE, rtpPacket } from '../../shared/media/rtp.ts';
import { eventually, httpCall } from '../helpers/env.ts';
import { assertMetricsRefused, scrape, total, type Sample } from '../helpers/prometheus.ts';
import { pcmuRtpParameters, startMedia } from '../media/helpers.ts';

const TOKEN = 'media-metrics-token-0123456789ab';
const value = (s: Sample[], name: string, labels: Record<string, string> = {}) => total(s, name, labels);

t.test('health, readiness and the token', async (t) => {
  const media = await startMedia(t, { METRICS_TOKEN: TOKEN });
  t.match((await httpCall(media.url, 'GET', '/healthz')).body, { status: 'ok', proc: 'media', workers: 1 });
  const r = await httpCall(media.url, 'GET', '/readyz');
  t.equal(r.status, 200);
  t.same(r.body, { status: 'ready', mediasoup_workers: 'ok' });
  await assertMetricsRefused(t, media.url, [undefined, `Bearer ${media.secret}`]); // the control secret is not the token
  const s = (await scrape(media.url, TOKEN)).samples;
  t.equal(value(s, 'openline_media_workers'), 1);
  t.equal(value(s, 'openline_media_sessions'), 0);
});

t.test('sessions, transports and packet loss', async (t) => {
  const media = await startMedia(t, { METRICS_TOKEN: TOKEN });
  const { client } = media;
  const metrics = async () => (await scrape(media.url, TOKEN)).samples;

  const callId = `call_metrics_${Date.now()}`;
  await client.createSession(callId);
  const transport = await client.createBrowserTransport(callId, 'plain');
  const socket = createSocket('udp4');
  await new Promise<void>((r) => socket.bind(0, '127.0.0.1', r));
  t.teardown(() => socket.close());
  await client.connectBrowserTransport(callId, { ip: '127.0.0.1', port: socket.address().port });
  const ssrc = 0x5eed_1234;
  await client.produce(callId, pcmuRtpParameters(ssrc));
  const webrtcCall = `${callId}_webrtc`;
  await client.createSession(webrtcCall);
  await client.createBrowserTransport(webrtcCall, 'webrtc');

  const open = await metrics();
  t.equal(value(open, 'openline_media_sessions'), 2);
  t.equal(value(open, 'openline_media_transports', { type: 'plain' }), 3, 'two carrier legs and the plain browser transport');
  t.equal(value(open, 'openline_media_transports', { type: 'webrtc' }), 1);

  // 200 packets sent, sequence numbers 1000..1219 with every 11th left out: 20 lost on the way (19 before the last
  // one sent). (A stream starts at a random sequence number; mediasoup miscounts one that starts at 0.)
  let sent = 0;
  for (let seq = 0; seq < 220; seq++) {
    if (seq % 11 === 10) continue;
    socket.send(rtpPacket({ payloadType: PCMU_PAYLOAD_TYPE, sequenceNumber: 1000 + seq, timestamp: seq * 160, ssrc }, Buffer.alloc(160, 0xff)),
      transport.port, transport.ip);
    sent++;
    if (seq % 20 === 0) await new Promise((r) => setTimeout(r, 20));
  }
  t.equal(sent, 200);
  // mediasoup counts a stream's losses when it writes its receiver report (every few seconds for audio).
  const counted = await eventually(async () => {
    const s = await metrics();
    return value(s, 'openline_media_rtp_packets_received_total', { transport: 'plain' }) >= 190
      && value(s, 'openline_media_rtp_packets_lost_total', { transport: 'plain' }) >= 1 ? s : null;
  }, 30_000, 250);
  const received = value(counted, 'openline_media_rtp_packets_received_total', { transport: 'plain' });
  const lost = value(counted, 'openline_media_rtp_packets_lost_total', { transport: 'plain' });
  t.ok(received <= 200, `received ${received} of 200`);
  t.ok(lost >= 1 && lost <= 20, `lost ${lost} of 20 left out`);
  t.equal(value(counted, 'openline_media_rtp_packets_lost_total', { transport: 'webrtc' }), 0);

  await client.closeSession(callId);
  await client.closeSession(webrtcCall);
  const closed = await metrics();
  t.equal(value(closed, 'openline_media_sessions'), 0);
  t.equal(value(closed, 'openline_media_transports', { type: 'plain' }), 0);
  t.equal(value(closed, 'openline_media_transports', { type: 'webrtc' }), 0);
  t.ok(value(closed, 'openline_media_rtp_packets_received_total', { transport: 'plain' }) >= received, 'counters outlive the session');
  t.ok(value(closed, 'openline_media_rtp_packets_lost_total', { transport: 'plain' }) >= lost);
});
