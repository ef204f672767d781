import type { Static } from '@sinclair/typebox';
import type { Redis } from 'ioredis';
import type { Db, Tx, WithinTx } from '../db.ts';
import { DomainError, validationError } from '../errors.ts';
import { recordEvent, wakeRelay } from '../events/outbox.ts';
import { uuidv7 } from '../ids.ts';
import { keysetClause, type PageParams } from '../pagination.ts';
import type { Keyer } from '../redis.ts';
import { VISITOR_ID } from './bucketing.ts';
import { seenKey } from './collector.ts';
import type { ConversionOutcomeResponse, ConversionResponse } from './schemas.ts';
import { getTest } from './tests.ts';

// Conversions reported by the organization's own systems (an order, a signed contract). The variant is the visitor's
// recorded assignment, never the caller's word; metadata.order_id makes the write idempotent. A visitor's first
// conversion of a test is the counted one (results count converting visitors); value adds to revenue every time.

export interface ConversionRow {
  id: string; organization_id: string; test_id: string; variant_id: string; visitor_id: string; source: 'tag' | 'api';
  goal_type: string | null; value_cents: number; currency: string; metadata: Record<string, unknown>; order_id: string | null;
  counted: boolean; created_at: Date;
}

export const conversionView = (c: ConversionRow): Static<typeof ConversionResponse> => ({
  id: c.id, test_id: c.test_id, variant_id: c.variant_id, visitor_id: c.visitor_id, source: c.source, goal_type: c.goal_type,
  value: c.value_cents / 100, value_cents: c.value_cents, currency: c.currency, metadata: c.metadata, counted: c.counted,
  created_at: c.created_at.toISOString(),
});

export interface ConversionInput { test_id: string; visitor_id: string; value?: number; currency?: 'USD'; metadata?: Record<string, unknown> }
/** What recording answers, as is (recordConversion builds the API shape itself). */
export type ConversionResult = Static<typeof ConversionOutcomeResponse>;

/** The visitor's recorded variant: rolled up in PostgreSQL, or still in the collector's Redis record (then written
 *  through to PostgreSQL here; the rollup's insert of the same assignment is a no-op). */
async function assignedVariant(tx: Tx, redis: Redis, key: Keyer, testId: string, visitorId: string): Promise<string | null> {
  const row = await tx.oneOrNone('SELECT variant_id FROM optimize_assignments WHERE test_id = $1 AND visitor_id = $2', [testId, visitorId]);
  if (row) return row.variant_id;
  const pending = await redis.hget(seenKey(key, testId), visitorId);
  if (!pending) return null;
  await tx.none(`INSERT INTO optimize_assignments (test_id, visitor_id, variant_id, assigned_at) VALUES ($1, $2, $3, now())
                 ON CONFLICT DO NOTHING`, [testId, visitorId, pending]);
  return pending;
}

export async function recordConversion(db: Db, redis: Redis, key: Keyer, organizationId: string, input: ConversionInput,
  within?: WithinTx<ConversionResult>): Promise<ConversionResult> {
  if (!VISITOR_ID.test(input.visitor_id)) throw validationError({ visitor_id: 'must be the tag\'s visitor id (8 to 64 letters, digits, _ or -)' });
  const orderId = input.metadata?.order_id;
  if (orderId !== undefined && (typeof orderId !== 'string' || !orderId || orderId.length > 200)) {
    throw validationError({ 'metadata.order_id': 'must be a string of 1 to 200 characters' });
  }
  if (input.metadata && JSON.stringify(input.metadata).length > 4096) throw validationError({ metadata: 'must be at most 4096 bytes as JSON' });
  const valueCents = Math.round((input.value ?? 0) * 100);
  let wrote = false;
  const out = await db.tx(async (tx) => {
    const { test } = await getTest(tx, organizationId, input.test_id);
    const variantId = await assignedVariant(tx, redis, key, test.id, input.visitor_id);
    if (!variantId) {
      throw new DomainError('visitor_not_assigned', `Visitor ${input.visitor_id} was never assigned a variant of test ${test.id}.`,
        { fields: { visitor_id: 'has no recorded assignment in this test' }, resolutionHint: 'Send the visitor id the tag exposes as window.openlineOptimize.visitorId on the test page.' });
    }
    const result = { recorded: false, test_id: test.id, variant_id: variantId };
    if (typeof orderId === 'string') {
      const prior = await tx.oneOrNone('SELECT variant_id FROM optimize_conversions WHERE test_id = $1 AND order_id = $2', [test.id, orderId]);
      if (prior) { await within?.(tx, result); return result; }
    }
    // Serialises conversions of one visitor of one test (which one is counted).
    await tx.one('SELECT pg_advisory_xact_lock(hashtext($1)) AS l', [`optimize:${test.id}:${input.visitor_id}`]);
    const counted = !(await tx.oneOrNone('SELECT 1 FROM optimize_conversions WHERE test_id = $1 AND visitor_id = $2 AND counted', [test.id, input.visitor_id]));
    const row: ConversionRow | null = await tx.oneOrNone(
      `INSERT INTO optimize_conversions (id, organization_id, test_id, variant_id, visitor_id, source, value_cents, currency, metadata, order_id, counted)
       VALUES ($1, $2, $3, $4, $5, 'api', $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING RETURNING *`,
      [uuidv7(), organizationId, test.id, variantId, input.visitor_id, valueCents, input.currency ?? 'USD',
        JSON.stringify(input.metadata ?? {}), orderId ?? null, counted]);
    if (!row) { await within?.(tx, result); return result; } // a concurrent twin with the same order_id committed first
    await tx.none(
      `INSERT INTO optimize_daily_counts (test_id, variant_id, day, conversions, revenue_cents) VALUES ($1, $2, (now() AT TIME ZONE 'UTC')::date, $3, $4)
       ON CONFLICT (test_id, variant_id, day) DO UPDATE SET conversions = optimize_daily_counts.conversions + EXCLUDED.conversions,
         revenue_cents = optimize_daily_counts.revenue_cents + EXCLUDED.revenue_cents`,
      [test.id, variantId, counted ? 1 : 0, valueCents]);
    await recordEvent(tx, { organizationId, eventType: 'optimize.conversion.created', data: { conversion: conversionView(row) } });
    const done = { ...result, recorded: true };
    await within?.(tx, done);
    wrote = true;
    return done;
  });
  if (wrote) wakeRelay(db);
  return out;
}

export async function listConversions(db: Db, organizationId: string, testId: string, p: PageParams): Promise<ConversionRow[]> {
  await getTest(db, organizationId, testId);
  const k = keysetClause('id', p, 3);
  return db.any(`SELECT * FROM optimize_conversions WHERE organization_id = $1 AND test_id = $2${k.where}${k.tail}`,
    [organizationId, testId, ...k.values]);
}
