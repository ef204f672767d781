// The Prometheus text format (version 0.0.4), written by hand: counters kept as plain numbers per label set and
// rendered at scrape time, and gauges rendered from values read at scrape time. prom-client supplies only the
// process's default metrics (shared/metrics/process-metrics.ts); its labelled metrics hash their labels on every
// increment, which the hot paths here (call transitions, webhook deliveries) need not pay.

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

export type Labels = Record<string, string>;

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
}

function header(name: string, type: 'counter' | 'gauge', help: string): string[] {
  return [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`];
}

/** A gauge family from values read at scrape time. */
export function gaugeLines(name: string, help: string, samples: Iterable<[Labels, number]>): string[] {
  const out = header(name, 'gauge', help);
  for (const [labels, value] of samples) out.push(`${name}${labelText(labels)} ${value}`);
  return out;
}

/** A counter family with a fixed list of label names; each label set's count lives in a Map keyed by its values. */
export class Counter<L extends string = string> {
  private readonly counts = new Map<string, { labels: Labels; value: number }>();

  constructor(readonly name: string, readonly help: string, readonly labelNames: readonly L[]) {}

  inc(labels: Record<L, string>, by = 1): void {
    const key = this.labelNames.map((n) => labels[n]).join('\u0000');
    const hit = this.counts.get(key);
    if (hit) hit.value += by;
    else this.counts.set(key, { labels: Object.fromEntries(this.labelNames.map((n) => [n, labels[n]])), value: by });
  }

  /** The count of one label set (0 when never incremented). */
  get(labels: Record<L, string>): number {
    return this.counts.get(this.labelNames.map((n) => labels[n]).join('\u0000'))?.value ?? 0;
  }

  lines(): string[] {
    const out = header(this.name, 'counter', this.help);
    for (const { labels, value } of this.counts.values()) out.push(`${this.name}${labelText(labels)} ${value}`);
    return out;
  }
}
