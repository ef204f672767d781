import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Db } from '../../db.ts';
import { DomainError } from '../../errors.ts';
import type { Keyer } from '../../redis.ts';
import { SpendAccounts } from '../../spend/spend-accounts.ts';
import { SpendCharges } from '../../spend/charges.ts';
import { FRESH_CHECK_PRICE_CENTS } from '../prices.ts';
import { RefreshLock } from './lock.ts';
import { ProviderError, type ReputationProvider } from './provider.ts';
import { PAID_REFRESH_WINDOW_MS } from './settings.ts';
import { writeEvidence, type OwnedNumber } from './store.ts';

// Refreshing a number's evidence: one provider lookup under the number's refresh lock, recorded in
// reputation_lookups (ref, attempts) and completed in the transaction that writes the evidence.
//   paid (GET ...?fresh=true): charged FRESH_CHECK_PRICE_CENTS under the daily spend cap with the lookup's ref as
//     charge ref. Requests of one number that arrive while a refresh runs, or within PAID_REFRESH_WINDOW_MS of the
//     last paid one, wait for it and share it: one lookup, one charge.
//   background (workers): never charged; ref 'bg:<phone>:<freshness window>' so a job retried after a crash finds
//     its completed lookup and does not ask the provider again.

/** How long a paid request waits for a refresh of its number that another request runs. */
const PAID_WAIT_MS = 30_000;
const POLL_MS = 25;

export interface RefreshDeps { db: Db; redis: Redis; key: Keyer; provider: ReputationProvider }

export type PaidRefreshResult = { lookupId: string; charged: boolean; chargeId: string | null };
export type BackgroundResult = 'refreshed' | 'already_done' | 'fresh' | 'not_enrolled';

/** Thrown when another refresh holds the number: the background job retries later. */
export class NumberBusyError extends Error {}

export class ReputationRefresher {
  private readonly lock: RefreshLock;
  private readonly charges: SpendCharges;

  constructor(private readonly d: RefreshDeps) {
    this.lock = new RefreshLock(d.redis, d.key);
    this.charges = new SpendCharges(d.db, new SpendAccounts(d.redis, d.key, d.db));
  }

  /** A lookup that answers a fresh request that arrived at `arrivedAt`: any lookup completed since, or a paid one
   *  completed within the paid window. */
  private async shared(phoneId: number, arrivedAt: number): Promise<PaidRefreshResult | null> {
    const row = await this.d.db.oneOrNone<{ id: string }>(
      `SELECT id FROM reputation_lookups
        WHERE phone_id = $1 AND (completed_at >= $2 OR (reason = 'paid' AND completed_at >= $3))
        ORDER BY completed_at DESC LIMIT 1`,
      [phoneId, new Date(arrivedAt), new Date(arrivedAt - PAID_REFRESH_WINDOW_MS)]);
    return row ? { lookupId: row.id, charged: false, chargeId: null } : null;
  }

  async paid(n: OwnedNumber, capCents: number, arrivedAt = Date.now()): Promise<PaidRefreshResult> {
    const owner = `paid:${randomUUID()}`;
    for (;;) {
      const done = await this.shared(n.id, arrivedAt);
      if (done) return done;
      if (await this.lock.acquire(n.id, owner)) {
        try {
          return (await this.shared(n.id, arrivedAt)) ?? await this.paidLookup(n, capCents);
        } finally {
          await this.lock.release(n.id, owner);
        }
      }
      if (Date.now() - arrivedAt > PAID_WAIT_MS) {
        throw new DomainError('service_unavailable', `A refresh of ${n.phone_number} is still running; retry shortly.`, { retryAfterSeconds: 5 });
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }

  private async paidLookup(n: OwnedNumber, capCents: number): Promise<PaidRefreshResult> {
    const ref = `fresh:${n.id}:${Math.floor(Date.now() / PAID_REFRESH_WINDOW_MS)}`;
    const charge = await this.charges.charge({
      organizationId: n.organization_id, kind: 'reputation_check', ref, cents: FRESH_CHECK_PRICE_CENTS, capCents,
    });
    if (!charge.charged && charge.reason === 'spend_cap') {
      throw new DomainError('spend_cap_reached',
        `A fresh reputation check costs ${FRESH_CHECK_PRICE_CENTS} cents; today's spend (${charge.settled} cents settled, ${charge.reserved} cents reserved) leaves less than that under the daily cap of ${capCents} cents.`,
        { resolutionHint: 'Read the cached evidence (without fresh=true), or raise the daily spend cap.' });
    }
    // 'duplicate': this window's check was paid and its lookup did not complete (a crash or a provider failure):
    // it is done now without a second charge.
    const chargeId = 'chargeId' in charge ? charge.chargeId : null;
    const lookupId = await this.lookup(n, ref, 'paid', chargeId);
    return { lookupId, charged: charge.charged, chargeId };
  }

  /** One background refresh; jobKey identifies the job (its retries reclaim the lock it held). */
  async background(phoneId: number, window: number, freshnessMs: number, jobKey: string): Promise<BackgroundResult> {
    const ref = `bg:${phoneId}:${window}`;
    const owner = `job:${jobKey}`;
    if (!(await this.lock.acquire(phoneId, owner))) throw new NumberBusyError(`number ${phoneId} is being refreshed`);
    try {
      // Under the lock, one query: whether this job's lookup already completed (a retry after a crash), and the
      // number if it is still enrolled, active and stale (a paid refresh may just have refreshed it).
      const n = await this.d.db.oneOrNone<OwnedNumber & { fresh: boolean; done: boolean; enrolled: boolean }>(
        `SELECT p.id::int AS id, p.phone_number, p.organization_id, p.reputation_enrolled_at,
                p.status = 'ACTIVE' AND p.reputation_enrolled_at IS NOT NULL AS enrolled,
                EXISTS (SELECT 1 FROM reputation_lookups l WHERE l.ref = $3 AND l.completed_at IS NOT NULL) AS done,
                (SELECT count(*) = 3 AND min(r.checked_at) >= now() - make_interval(secs => $2) FROM number_reputation r WHERE r.phone_id = p.id) AS fresh
           FROM phone_numbers p WHERE p.id = $1`,
        [phoneId, freshnessMs / 1000, ref]);
      if (n?.done) return 'already_done';
      if (!n?.enrolled) return 'not_enrolled';
      if (n.fresh) return 'fresh';
      await this.lookup(n, ref, 'background', null);
      return 'refreshed';
    } finally {
      await this.lock.release(phoneId, owner);
    }
  }

  /** Records the lookup (a repeat under the same ref counts one more attempt), asks the provider, writes the
   *  evidence and completes the lookup in one transaction. Call with the number's lock held. */
  private async lookup(n: OwnedNumber, ref: string, reason: 'paid' | 'background', chargeId: string | null): Promise<string> {
    const { id } = await this.d.db.one<{ id: string }>(
      `INSERT INTO reputation_lookups (ref, phone_id, organization_id, reason, provider, charge_id) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (ref) DO UPDATE SET attempts = reputation_lookups.attempts + 1, started_at = now(), completed_at = NULL
       RETURNING id`,
      [ref, n.id, n.organization_id, reason, this.d.provider.name, chargeId]);
    let evidence;
    try {
      evidence = await this.d.provider.lookup(n.phone_number);
    } catch (err) {
      if (err instanceof ProviderError && reason === 'paid') {
        throw new DomainError('provider_api_error', `The reputation provider failed: ${err.message}. Retrying within a minute is not charged again.`);
      }
      throw err;
    }
    await this.d.db.tx('reputation-refresh', async (t) => {
      await writeEvidence(t, n, evidence, this.d.provider.name);
      await t.none('UPDATE reputation_lookups SET completed_at = now() WHERE id = $1', [id]);
    });
    return id;
  }
}
