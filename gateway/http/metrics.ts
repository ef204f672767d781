import { escapeLabel, PROMETHEUS_CONTENT_TYPE } from '../../shared/metrics/exposition.ts';
import { renderProcessMetrics, type MetricsSource } from '../../shared/metrics/process-metrics.ts';
import { STANDARD_METHODS } from './types.ts';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

interface Series {
  method: string;
  route: string;
  /** Requests by status. */
  statuses: Map<number, number>;
  /** Non-cumulative counts per bucket; the last slot is above the largest bound. */
  buckets: Float64Array;
  sum: number;
  count: number;
}

/** Prometheus metrics of one gateway: requests by route and status, and a latency histogram, plus what the process
 *  counts (shared/metrics/process-metrics.ts: call transitions applied here, the default process metrics). Every
 *  request is counted, so the two request families are plain numbers kept per route and written out in the text
 *  format at scrape time (prom-client's labelled metrics hash their labels per call). Served on the admin listener
 *  (METRICS_PORT), never on the public API port. */
export class GatewayMetrics {
  /** By route, then method (route labels are the routes' own strings, so no per-request key is built). */
  private readonly series = new Map<string, Map<string, Series>>();

  observe(method: string, route: string, status: number, seconds: number): void {
    if (!STANDARD_METHODS.has(method)) method = 'OTHER'; // so the series stay bounded
    let byMethod = this.series.get(route);
    if (!byMethod) this.series.set(route, (byMethod = new Map()));
    let s = byMethod.get(method);
    if (!s) {
      s = { method, route, statuses: new Map(), buckets: new Float64Array(BUCKETS.length + 1), sum: 0, count: 0 };
      byMethod.set(method, s);
    }
    s.statuses.set(status, (s.statuses.get(status) ?? 0) + 1);
    let i = 0;
    while (i < BUCKETS.length && seconds > BUCKETS[i]) i++;
    s.buckets[i]++;
    s.sum += seconds;
    s.count++;
  }

  async render(sources: MetricsSource[] = []): Promise<string> {
    const out: string[] = [
      '# HELP http_requests_total HTTP requests by route and status.',
      '# TYPE http_requests_total counter',
    ];
    const all = [...this.series.values()].flatMap((m) => [...m.values()]);
    for (const s of all) {
      const labels = `method="${escapeLabel(s.method)}",route="${escapeLabel(s.route)}"`;
      for (const [status, n] of s.statuses) out.push(`http_requests_total{${labels},status="${status}"} ${n}`);
    }
    out.push('# HELP http_request_duration_seconds Time from request to response, by route.',
      '# TYPE http_request_duration_seconds histogram');
    for (const s of all) {
      const labels = `method="${escapeLabel(s.method)}",route="${escapeLabel(s.route)}"`;
      let cumulative = 0;
      BUCKETS.forEach((le, i) => {
        cumulative += s.buckets[i];
        out.push(`http_request_duration_seconds_bucket{le="${le}",${labels}} ${cumulative}`);
      });
      out.push(`http_request_duration_seconds_bucket{le="+Inf",${labels}} ${s.count}`,
        `http_request_duration_seconds_sum{${labels}} ${s.sum}`,
        `http_request_duration_seconds_count{${labels}} ${s.count}`);
    }
    return out.join('\n') + '\n' + await renderProcessMetrics(sources);
  }

  get contentType(): string { return PROMETHEUS_CONTENT_TYPE; }
}
