// Reading a /metrics answer in tests: the Prometheus text format parsed strictly (a malformed line throws), and
// lookups of samples by name and labels.
import { httpCall } from './env.ts';
import type { TapTest } from './pool.ts';

export interface Sample { name: string; labels: Record<string, string>; value: number }
export interface Scrape { samples: Sample[]; types: Record<string, string> }

/** Parses the Prometheus text exposition format (samples only), checking each line's syntax. */
export function parseProm(text: string): Scrape {
  const samples: Sample[] = [];
  const types: Record<string, string> = {};
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const ty = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (ty) { types[ty[1]] = ty[2]; continue; }
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/.exec(line);
    if (!m) throw new Error(`bad exposition line: ${line}`);
    const labels: Record<string, string> = {};
    if (m[2]) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/g;
      let consumed = 0;
      for (const l of m[2].matchAll(re)) { labels[l[1]] = l[2]; consumed += l[0].length; }
      if (consumed !== m[2].length) throw new Error(`bad labels: ${line}`);
    }
    samples.push({ name: m[1], labels, value: m[3] === '+Inf' ? Infinity : Number(m[3]) });
  }
  return { samples, types };
}

/** Samples of `name` whose labels include `labels`. */
export const find = (s: Sample[], name: string, labels: Record<string, string> = {}) =>
  s.filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));

/** The sum of the matching samples (0 when there are none). */
export const total = (s: Sample[], name: string, labels: Record<string, string> = {}) =>
  find(s, name, labels).reduce((a, x) => a + x.value, 0);

/** GET <base>/metrics (with the token when given); throws unless it answers 200 in the text format. */
export async function scrape(base: string, token?: string): Promise<Scrape> {
  const r = await httpCall(base, 'GET', '/metrics', token ? { headers: { authorization: `Bearer ${token}` } } : {});
  if (r.status !== 200) throw new Error(`GET ${base}/metrics answered ${r.status}: ${r.text}`);
  if (!/^text\/plain; version=0\.0\.4/.test(r.headers['content-type'] ?? '')) throw new Error(`not the text format: ${r.headers['content-type']}`);
  return parseProm(r.text);
}

/** Asserts that GET <base>/metrics answers 401 unauthorized (with its Bearer challenge) to each Authorization value
 *  (undefined: none sent): a METRICS_TOKEN is set and these are not it. */
export async function assertMetricsRefused(t: TapTest, base: string, authorizations: (string | undefined)[]): Promise<void> {
  for (const authorization of authorizations) {
    const r = await httpCall(base, 'GET', '/metrics', { headers: authorization ? { authorization } : {} });
    const why = `refused with ${authorization ?? 'no Authorization'}`;
    t.equal(r.status, 401, why);
    t.equal(r.body?.error?.code, 'unauthorized', why);
    t.match(r.headers['www-authenticate'], /^Bearer realm="metrics"/, why);
  }
}
