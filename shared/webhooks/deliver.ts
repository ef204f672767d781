import type { Config } from '../config.ts';
import type { Db } from '../db.ts';
import type { Logger } from '../log.ts';
import { deliveryReporter, type DeliveryReporter } from '../metrics/webhook-deliveries.ts';
import { AttemptLog } from './attempt-log.ts';
import { retryDelayMs, type DeliveryJob } from './delivery-jobs.ts';
import { WEBHOOK_USER_AGENT, WebhookPoster } from './http-post.ts';
import { signedHeaders } from './signing.ts';
import { disableSubscription, subscriptionForDelivery } from './subscriptions.ts';

type DeliverySub = NonNullable<Awaited<ReturnType<typeof subscriptionForDelivery>>>;

/** Subscriptions by id for a couple of seconds, so a burst of deliveries does not read the same row each time.
 *  A deleted or disabled subscription stops receiving within `ttlMs`. */
export class SubscriptionCache {
  private readonly map = new Map<string, { at: number; value: Promise<DeliverySub | null> }>();
  constructor(private readonly db: Db, private readonly ttlMs = 1000) {}

  get(id: string): Promise<DeliverySub | null> {
    const now = Date.now();
    const hit = this.map.get(id);
    if (hit && now - hit.at < this.ttlMs) return hit.value;
    if (this.map.size > 10_000) this.map.clear();
    const value = subscriptionForDelivery(this.db, id);
    this.map.set(id, { at: now, value });
    value.catch(() => this.map.delete(id));
    return value;
  }

  invalidate(id: string): void { this.map.delete(id); }
}

export interface DeliveryContext {
  db: Db;
  poster: WebhookPoster;
  attempts: AttemptLog;
  subscriptions: SubscriptionCache;
  retryScale: number;
  /** Counts and logs each attempt's outcome (shared/metrics/webhook-deliveries.ts). */
  report: DeliveryReporter;
}

/** The delivery context of a process, built once from its configuration (workers/main.ts). */
export function deliveryContext(db: Db, config: Pick<Config, 'webhookTimeoutMs' | 'webhookAllowInsecure' | 'webhookRetryScale'>,
  log?: Logger): DeliveryContext {
  return {
    db,
    poster: new WebhookPoster({ timeoutMs: config.webhookTimeoutMs, allowInsecure: config.webhookAllowInsecure, maxSockets: 256 }),
    attempts: new AttemptLog(db),
    subscriptions: new SubscriptionCache(db),
    retryScale: config.webhookRetryScale,
    report: deliveryReporter(log),
  };
}

export type AttemptOutcome =
  | { kind: 'succeeded'; status: number }
  | { kind: 'retry'; error: string }
  | { kind: 'failed'; error: string }
  | { kind: 'gone' }
  | { kind: 'skipped'; reason: string };

/** One attempt of one delivery: sign, POST, log the attempt, and say what happens next. A 410 disables the
 *  subscription (no more attempts of anything to it); other failures retry until `maxAttempts`. */
export async function attemptDelivery(ctx: DeliveryContext, d: DeliveryJob, attempt: number, maxAttempts: number): Promise<AttemptOutcome> {
  const sub = await ctx.subscriptions.get(d.subscriptionId);
  if (!sub || sub.status !== 'active') {
    const reason = sub ? `subscription ${sub.status}` : 'subscription deleted';
    ctx.report(d, { outcome: 'skipped', attempt, status: null, ms: 0, error: reason });
    return { kind: 'skipped', reason };
  }

  const attemptedAt = new Date();
  const headers = signedHeaders(sub.secret, d.webhookId, d.body, attemptedAt.getTime());
  const res = await ctx.poster.post(sub.webhook_url, headers, d.body);
  const gone = res.status === 410;
  const last = attempt >= maxAttempts;
  const outcome = res.ok ? 'succeeded' : gone || last ? 'failed' : 'retrying';
  await ctx.attempts.record({
    subscription_id: d.subscriptionId,
    organization_id: d.organizationId,
    webhook_id: d.webhookId,
    event_id: d.eventId,
    event_type: d.eventType,
    attempt,
    outcome,
    response_status: res.status,
    latency_ms: res.latencyMs,
    error: gone ? 'HTTP 410: receiver is gone; subscription disabled' : res.error,
    attempted_at: attemptedAt,
    next_attempt_at: outcome === 'retrying' ? new Date(Date.now() + retryDelayMs(attempt, ctx.retryScale)) : null,
    request_headers: { ...headers, 'user-agent': WEBHOOK_USER_AGENT },
    request_body: d.body,
    response_content_type: res.response?.contentType ?? null,
    response_body: res.response?.body ?? null,
    response_body_truncated: res.response ? res.response.truncated : null,
  });
  ctx.report(d, { outcome, attempt, status: res.status, ms: res.latencyMs, error: gone ? 'HTTP 410: receiver is gone' : res.error });
  if (res.ok) return { kind: 'succeeded', status: res.status! };
  if (gone) {
    await disableSubscription(ctx.db, d.subscriptionId, `receiver answered 410 Gone at ${attemptedAt.toISOString()}`);
    ctx.subscriptions.invalidate(d.subscriptionId);
    return { kind: 'gone' };
  }
  return last ? { kind: 'failed', error: res.error ?? 'failed' } : { kind: 'retry', error: res.error ?? 'failed' };
}
