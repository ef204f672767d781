// What every process's /metrics answers: the families of the process's own sources (gauges read at scrape time),
// the counters this process increments (created with processCounter by the module where the event happens), and
// Node's default process metrics. Each event is counted by the process where it happens, so summing a counter over
// every process of a deployment counts each event once.
import { Registry, collectDefaultMetrics } from 'prom-client';
import type { Logger } from '../log.ts';
import { Counter } from './exposition.ts';

/** A named group of families read at scrape time. */
export interface MetricsSource {
  name: string;
  collect(): Promise<string[]> | string[];
}

const counters: Counter[] = [];
/** Sources whose last read failed (their failure is logged once). */
const failing = new Set<string>();
let defaults: Registry | null = null;

/** A counter of this process, rendered by its /metrics. Call once per family, at module load. */
export function processCounter<L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L> {
  const c = new Counter(name, help, labelNames);
  counters.push(c);
  return c;
}

const sourceErrors = processCounter('openline_metrics_source_errors_total',
  'Scrapes in which a group of metrics could not be read (e.g. a store was unreachable), by group.', ['source']);

/** One scrape. A source that fails is left out of this scrape (and counted), so /metrics still answers while a
 *  store is down; the failure is logged once per source until it reads again. */
export async function renderProcessMetrics(sources: MetricsSource[], log?: Logger): Promise<string> {
  if (!defaults) {
    defaults = new Registry();
    collectDefaultMetrics({ register: defaults });
  }
  const parts = await Promise.all(sources.map(async (s) => {
    try {
      const lines = await s.collect();
      failing.delete(s.name);
      return lines;
    } catch (err) {
      sourceErrors.inc({ source: s.name });
      if (!failing.has(s.name)) log?.warn({ source: s.name, err: (err as Error)?.message }, 'metrics source failed; left out of this scrape');
      failing.add(s.name);
      return [];
    }
  }));
  const own = [...parts.flat(), ...counters.flatMap((c) => c.lines())];
  return own.join('\n') + '\n' + await defaults.metrics();
}
