import type { Redis } from 'ioredis';
import { isUuid } from '../ids.ts';
import type { Keyer } from '../redis.ts';
import { readFileSync } from 'node:fs';
import { script, type ScriptFn } from '../redis-scripts.ts';
import { assignVariant, VISITOR_ID } from './bucketing.ts';
import { hostOnDomain, PUBLIC_KEY } from './properties.ts';
import type { LiveConfigs } from './live-config.ts';

// The public collector: the tag's beacons ({k: public key, v: visitor id, e: [{t: 'i' | 'g', x: test id}]}) become
// Redis counters, rolled up to PostgreSQL by the optimize-rollup job. The browser is trusted for nothing but "this
// visitor saw test x" and "this visitor reached test x's goal": the test must be running on the key's property, the
// visitor must be enrolled by the server's own hash, the variant is the server's, a goal counts only for a visitor
// already shown the test, and each counts once per visitor.

export const MAX_COLLECT_BODY_BYTES = 8 * 1024;
export const MAX_EVENTS_PER_BEACON = 50;

/** Crawlers, link previews, monitors and HTTP libraries: their beacons are ignored (the tag also stays idle for them).
 *  Headless Chrome is not in the list (it is also how real users' automation and our browser tests run). */
export const BOT_USER_AGENT = /bot\b|bot\/|crawl|spider|slurp|facebookexternalhit|embedly|preview|lighthouse|pingdom|uptime|monitor|curl\/|wget|python-|httpclient|java\/|go-http-client|okhttp|axios|node-fetch|phantomjs/i;

export const isBot = (userAgent: string | undefined) => !userAgent || BOT_USER_AGENT.test(userAgent);

/** What became of a beacon: taken (counted or ignored), or refused as malformed, from a page off the property's
 *  domain, or for an unknown key (the collector route answers each with its status). */
export type CollectVerdict = 'taken' | 'malformed' | 'foreign_origin' | 'unknown_key';

export interface CollectOutcome { verdict: CollectVerdict; accepted: number; ignored: number; reason?: string }

/** Live Redis keys the collector writes and the rollup claims. */
export function liveKeys(key: Keyer) {
  return { imp: key('opt', 'live', 'imp'), asg: key('opt', 'live', 'asg'), cnv: key('opt', 'live', 'cnv') };
}
export const seenKey = (key: Keyer, testId: string) => key('opt', 'seen', testId);
export const convertedKey = (key: Keyer, testId: string) => key('opt', 'conv', testId);

interface Beacon { k: string; v: string; e: { t: 'i' | 'g'; x: string }[] }

function parseBeacon(body: Buffer | null): Beacon | string {
  if (!body || body.length === 0) return 'empty body';
  if (body.length > MAX_COLLECT_BODY_BYTES) return 'body too large';
  let b: unknown;
  try { b = JSON.parse(body.toString('utf8')); } catch { return 'not JSON'; }
  if (!b || typeof b !== 'object') return 'not an object';
  const o = b as Record<string, unknown>;
  if (typeof o.k !== 'string' || !PUBLIC_KEY.test(o.k)) return 'bad key';
  if (typeof o.v !== 'string' || !VISITOR_ID.test(o.v)) return 'bad visitor id';
  if (!Array.isArray(o.e) || o.e.length === 0 || o.e.length > MAX_EVENTS_PER_BEACON) return 'bad events';
  for (const e of o.e) {
    if (!e || typeof e !== 'object' || (e.t !== 'i' && e.t !== 'g') || typeof e.x !== 'string' || !isUuid(e.x)) return 'bad event';
  }
  return o as unknown as Beacon;
}

/** Beacons of one event-loop turn share one script call (fewer Redis round trips and script invocations). */
const MAX_EVENTS_PER_CALL = 500;

interface Pending { keys: string[]; args: string[]; resolve(flags: number[]): void; reject(err: unknown): void }

export class Collector {
  private readonly collect: ScriptFn;
  private readonly live: ReturnType<typeof liveKeys>;
  private pending: Pending[] = [];
  private pendingEvents = 0;
  private scheduled = false;

  constructor(private readonly redis: Redis, private readonly key: Keyer, private readonly configs: LiveConfigs) {
    // The number of keys varies with the batch: the caller passes it first.
    if (!(redis as unknown as Record<string, unknown>).olOptimizeCollect) {
      redis.defineCommand('olOptimizeCollect', { lua: readFileSync(new URL('./collect.lua', import.meta.url), 'utf8') });
    }
    this.collect = script(redis, 'olOptimizeCollect');
    this.live = liveKeys(key);
  }

  /** Counts a beacon. `originHost` is the request's Origin (or Referer) host when it sent one. */
  async accept(body: Buffer | null, userAgent: string | undefined, originHost: string | null): Promise<CollectOutcome> {
    if (isBot(userAgent)) return { verdict: 'taken', accepted: 0, ignored: 0, reason: 'bot' };
    const b = parseBeacon(body);
    if (typeof b === 'string') return { verdict: 'malformed', accepted: 0, ignored: 0, reason: b };
    const config = await this.configs.get(b.k);
    if (!config) return { verdict: 'unknown_key', accepted: 0, ignored: b.e.length, reason: 'unknown public key' };
    if (originHost !== null && !hostOnDomain(originHost, config.domain)) {
      return { verdict: 'foreign_origin', accepted: 0, ignored: b.e.length, reason: 'origin is not on the property domain' };
    }
    const keys: string[] = [];
    const args: string[] = [];
    for (const e of b.e) {
      const test = config.byId.get(e.x);
      const variant = test ? assignVariant(test.id, b.v, test.traffic_split, test.variants, test.hash_version) : null;
      if (!test || !variant) continue;
      keys.push(seenKey(this.key, test.id), convertedKey(this.key, test.id));
      args.push(e.t, test.id, variant.id, test.goal.type, b.v);
    }
    if (!keys.length) return { verdict: 'taken', accepted: 0, ignored: b.e.length };
    const flags = await this.enqueue(keys, args);
    const counted = flags.reduce((s, f) => s + f, 0);
    return { verdict: 'taken', accepted: counted, ignored: b.e.length - counted };
  }

  private enqueue(keys: string[], args: string[]): Promise<number[]> {
    return new Promise((resolve, reject) => {
      this.pending.push({ keys, args, resolve, reject });
      this.pendingEvents += keys.length / 2;
      if (this.pendingEvents >= MAX_EVENTS_PER_CALL) this.flush();
      else if (!this.scheduled) { this.scheduled = true; setImmediate(() => this.flush()); }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.pending;
    if (!batch.length) return;
    this.pending = [];
    this.pendingEvents = 0;
    const now = Date.now();
    const keys = [this.live.imp, this.live.asg, this.live.cnv, ...batch.flatMap((p) => p.keys)];
    const args = [String(now), new Date(now).toISOString().slice(0, 10), ...batch.flatMap((p) => p.args)];
    this.collect(keys.length, ...keys, ...args).then((out) => {
      const flags = (out as number[]).map(Number);
      let at = 0;
      for (const p of batch) {
        const n = p.keys.length / 2;
        p.resolve(flags.slice(at, at + n));
        at += n;
      }
    }, (err) => { for (const p of batch) p.reject(err); });
  }
}
