// The media process on /metrics and /readyz: mediasoup workers, sessions, transports by type, and RTP packets
// received and lost by the producers (what arrives from browsers and from the carrier's far end). Transports and
// producers are found through mediasoup's observer events, so every one is seen, whichever code created it.
// Packet counts come from producer getStats every STATS_SAMPLE_MS and at each scrape: the growth since the previous
// sample is added to the counters, so they keep counting after a producer closes (losing at most its last interval).
import type { types } from 'mediasoup';
import type { Logger } from '../shared/log.ts';
import { readinessAnswer, type OpsRoute } from '../shared/http/ops.ts';
import { gaugeLines, PROMETHEUS_CONTENT_TYPE } from '../shared/metrics/exposition.ts';
import { processCounter, renderProcessMetrics } from '../shared/metrics/process-metrics.ts';
import { withParts } from '../shared/readiness.ts';
import { mediasoup } from './mediasoup.ts';
import type { MediaSessions } from './sessions.ts';
import type { MediaWorkerPool } from './worker-pool.ts';

export const STATS_SAMPLE_MS = 5_000;

const received = processCounter('openline_media_rtp_packets_received_total',
  'RTP packets received by this media process\'s producers, by transport type (webrtc: browsers; plain: the carrier leg).', ['transport']);
const lost = processCounter('openline_media_rtp_packets_lost_total',
  'RTP packets lost on the way to this media process\'s producers (sequence gaps), by transport type.', ['transport']);

type TransportType = 'webrtc' | 'plain' | 'pipe' | 'direct';

function transportType(t: types.Transport): TransportType {
  if (t instanceof mediasoup.types.WebRtcTransport) return 'webrtc';
  if (t instanceof mediasoup.types.PlainTransport) return 'plain';
  if (t instanceof mediasoup.types.PipeTransport) return 'pipe';
  return 'direct';
}

interface Tracked { transport: TransportType; packets: number; lost: number }

export class MediaMetrics {
  private readonly transports = new Map<TransportType, number>();
  private readonly producers = new Map<types.Producer, Tracked>();
  private sampling: Promise<void> | null = null;
  private readonly timer: NodeJS.Timeout;

  /** Create before the worker pool starts: workers are seen as mediasoup creates them. */
  constructor(private readonly log: Logger) {
    mediasoup.observer.on('newworker', (worker) => {
      worker.observer.on('newrouter', (router) => router.observer.on('newtransport', (t) => this.track(t)));
    });
    this.timer = setInterval(() => void this.sample(), STATS_SAMPLE_MS);
    this.timer.unref();
  }

  /** Transports open, of every type. */
  get transportCount(): number { let n = 0; for (const v of this.transports.values()) n += v; return n; }

  private track(t: types.Transport): void {
    const type = transportType(t);
    this.transports.set(type, (this.transports.get(type) ?? 0) + 1);
    t.observer.once('close', () => this.transports.set(type, this.transports.get(type)! - 1));
    t.observer.on('newproducer', (p) => {
      this.producers.set(p, { transport: type, packets: 0, lost: 0 });
      p.observer.once('close', () => this.producers.delete(p));
    });
  }

  /** Adds each live producer's growth since the last sample; one sample at a time. */
  sample(): Promise<void> {
    this.sampling ??= Promise.all([...this.producers].map(async ([p, last]) => {
      let stats: types.ProducerStat[];
      try { stats = await p.getStats(); } catch { return; } // closed meanwhile
      let packets = 0;
      let lostNow = 0;
      for (const s of stats) if (s.type === 'inbound-rtp') { packets += s.packetCount; lostNow += s.packetsLost; }
      // packetsLost (expected minus received) can shrink when late packets arrive: only growth past the highest
      // value seen counts.
      if (packets > last.packets) { received.inc({ transport: last.transport }, packets - last.packets); last.packets = packets; }
      if (lostNow > last.lost) { lost.inc({ transport: last.transport }, lostNow - last.lost); last.lost = lostNow; }
    })).then(() => undefined, (err) => this.log.warn({ err }, 'media stats sample failed')).finally(() => { this.sampling = null; });
    return this.sampling;
  }

  async render(pool: MediaWorkerPool, sessions: MediaSessions): Promise<string> {
    await this.sample();
    const types: TransportType[] = ['webrtc', 'plain', 'pipe', 'direct'];
    return renderProcessMetrics([{ name: 'media', collect: () => [
      ...gaugeLines('openline_media_workers', 'mediasoup workers running in this media process.', [[{}, pool.pids.length]]),
      ...gaugeLines('openline_media_sessions', 'Call media sessions (one router each) open in this media process.', [[{}, sessions.size]]),
      ...gaugeLines('openline_media_transports', 'mediasoup transports open, by type (webrtc: browsers; plain: the carrier leg).',
        types.map((type) => [{ type }, this.transports.get(type) ?? 0])),
    ] }], this.log);
  }

  close(): void { clearInterval(this.timer); }
}

/** /readyz and /metrics of the media process (no secret needed; /metrics needs METRICS_TOKEN when set), as
 *  routes the control server registers beside its own. */
export function mediaOpsRoutes(o: { metrics: MediaMetrics; pool: MediaWorkerPool; sessions: MediaSessions; token: string | null; log: Logger }): OpsRoute[] {
  const ready = withParts(null, { mediasoup_workers: () => (o.pool.pids.length > 0 ? 'ok' : 'down') });
  return [
    { method: 'GET', path: '/readyz', answer: () => ready().then(readinessAnswer) },
    { method: 'GET', path: '/metrics', metricsToken: o.token, answer: () => o.metrics.render(o.pool, o.sessions).then(
      (text) => ({ status: 200, headers: { 'content-type': PROMETHEUS_CONTENT_TYPE }, body: text }),
      (err) => { o.log.error({ err }, 'metrics failed'); return { status: 500, headers: {}, body: '' }; }) },
  ];
}
