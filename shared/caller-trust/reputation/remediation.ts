import type { Static } from '@sinclair/typebox';
import type { Redis } from 'ioredis';
import type { Db, WithinTx } from '../../db.ts';
import { DomainError, notFound } from '../../errors.ts';
import { recordEvent, wakeRelay } from '../../events/outbox.ts';
import { isUuid, uuidv7 } from '../../ids.ts';
import { keysetClause, type PageParams } from '../../pagination.ts';
import type { QueueRegistry } from '../../queues/registry.ts';
import type { Keyer } from '../../redis.ts';
import { SpendAccounts } from '../../spend/spend-accounts.ts';
import { SpendCharges } from '../../spend/charges.ts';
import { REMEDIATION_PRICE_CENTS } from '../prices.ts';
import { isFlagged, type RemediationKind, type RemediationStatus, type ReputationProvider } from './provider.ts';
import { enqueueRemediationPoll, remediationJobId, remediationQueue } from './queue.ts';
import type { RemediationResponse } from './schemas.ts';
import { ownedNumber, readEvidence } from './store.ts';

// Remediation cases for flagged numbers: open -> in_review -> resolved | rejected, moved by the provider's answers
// (workers/processors/reputation-remediation.ts polls it). own_brand needs the organization's approved enterprise
// (organizations.own_brand_enterprise); umbrella files under the platform's registration. Opening a case is charged
// REMEDIATION_PRICE_CENTS[kind] under the daily spend cap (charge ref: the case id). A resolved case clears the
// flags at the provider; the cached evidence shows it from the next refresh on.

export interface RemediationRow {
  id: string; organization_id: string; phone_id: number; phone_number: string; kind: RemediationKind; status: RemediationStatus;
  carriers: string[]; provider: string; provider_ref: string | null; charge_id: string | null; cents: number;
  rejection_reason: string | null; created_at: Date; updated_at: Date; in_review_at: Date | null; closed_at: Date | null;
}

/** Which status may follow which: the provider's answers only move a case forward. */
const NEXT: Record<RemediationStatus, RemediationStatus[]> = {
  open: ['in_review', 'resolved', 'rejected'], in_review: ['resolved', 'rejected'], resolved: [], rejected: [],
};
export const isRemediationClosed = (s: RemediationStatus) => NEXT[s].length === 0;

/** Fired on every status change of a case, with the case and its previous status. */
export const REMEDIATION_EVENT = 'reputation.remediation.updated';

export const CALL_PURPOSE = 'Outbound business calls placed by a customer of the platform.';

export const remediationView = (r: RemediationRow): Static<typeof RemediationResponse> => ({
  id: r.id,
  phone_number: r.phone_number,
  kind: r.kind,
  status: r.status,
  carriers: r.carriers,
  price_cents: r.cents,
  rejection_reason: r.rejection_reason,
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
  in_review_at: r.in_review_at ? r.in_review_at.toISOString() : null,
  closed_at: r.closed_at ? r.closed_at.toISOString() : null,
});

export interface RemediationDeps { db: Db; redis: Redis; key: Keyer; queues: QueueRegistry; provider: ReputationProvider; firstPollMs: number }

export async function openRemediation(d: RemediationDeps, organizationId: string, input: { phone_number: string; kind: RemediationKind },
  within?: WithinTx<RemediationRow>): Promise<RemediationRow> {
  const n = await ownedNumber(d.db, organizationId, input.phone_number, 'phone_number');
  const org = await d.db.one<{ own_brand_enterprise: boolean; cap: number }>(
    'SELECT own_brand_enterprise, daily_spend_cap_cents::float8 AS cap FROM organizations WHERE id = $1', [organizationId]);
  if (input.kind === 'own_brand' && !org.own_brand_enterprise) {
    throw new DomainError('own_brand_not_approved', 'Own-brand remediation needs an APPROVED enterprise registration; this organization has none (use kind umbrella, or finish the enterprise registration).',
      { fields: { kind: 'own_brand needs an approved enterprise registration' } });
  }
  const flagged = ((await readEvidence(d.db, [n.id])).get(n.id) ?? []).filter((e) => isFlagged(e.risk_level)).map((e) => e.carrier);
  if (!flagged.length) {
    throw new DomainError('number_not_flagged', `${n.phone_number} is not flagged on any carrier in its cached evidence; only flagged numbers can be remediated.`,
      { resolutionHint: 'Refresh the evidence with GET /v1/caller-trust/reputation/numbers/{phone}?fresh=true first.' });
  }
  const cents = REMEDIATION_PRICE_CENTS[input.kind];
  const charges = new SpendCharges(d.db, new SpendAccounts(d.redis, d.key, d.db));
  const row = await d.db.tx('reputation-remediation-open', async (t) => {
    // The number's row lock serializes two requests for it: the second sees the first's case.
    await t.one('SELECT id FROM phone_numbers WHERE id = $1 FOR UPDATE', [n.id]);
    const live = await t.oneOrNone<{ id: string; status: string }>(
      `SELECT id, status FROM reputation_remediations WHERE phone_id = $1 AND status IN ('open', 'in_review')`, [n.id]);
    if (live) {
      throw new DomainError('remediation_in_progress', `${n.phone_number} already has remediation case ${live.id} in status ${live.status}.`,
        { fields: { phone_number: `has case ${live.id} (${live.status})` } });
    }
    const id = uuidv7();
    const charge = await charges.charge({ organizationId, kind: 'remediation', ref: id, cents, capCents: org.cap });
    if (!charge.charged && charge.reason === 'spend_cap') {
      throw new DomainError('spend_cap_reached', `A ${input.kind} remediation costs ${cents} cents; today's spend leaves less than that under the daily cap of ${org.cap} cents.`);
    }
    const created = await t.one<RemediationRow>(
      `INSERT INTO reputation_remediations (id, organization_id, phone_id, phone_number, kind, carriers, provider, charge_id, cents)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING *, phone_id::int AS phone_id`,
      [id, organizationId, n.id, n.phone_number, input.kind, flagged, d.provider.name, 'chargeId' in charge ? charge.chargeId : null, cents]);
    if (within) await within(t, created);
    return created;
  });
  await enqueueRemediationPoll(d.queues, row.id, d.firstPollMs);
  return row;
}

export async function getRemediation(db: Db, organizationId: string, id: string): Promise<RemediationRow> {
  const row = isUuid(id) ? await db.oneOrNone<RemediationRow>(
    'SELECT *, phone_id::int AS phone_id FROM reputation_remediations WHERE id = $1 AND organization_id = $2', [id, organizationId]) : null;
  if (!row) throw notFound(`Remediation case ${id}`);
  return row;
}

export async function listRemediations(db: Db, organizationId: string, f: { status?: RemediationStatus; phone_number?: string }, p: PageParams) {
  const values: unknown[] = [organizationId];
  let where = '';
  if (f.status) where += ` AND status = $${values.push(f.status)}`;
  if (f.phone_number) where += ` AND phone_number = $${values.push(f.phone_number)}`;
  const k = keysetClause('id', p, values.length + 1);
  return db.any<RemediationRow>(`SELECT *, phone_id::int AS phone_id FROM reputation_remediations WHERE organization_id = $1${where}${k.where}${k.tail}`,
    [...values, ...k.values]);
}

/** One progression step of a case (the remediation job): files it with the provider if not yet filed, asks the
 *  provider where it stands, applies a forward move. Answers the case after the step. */
export async function advanceRemediation(db: Db, provider: ReputationProvider, caseId: string): Promise<RemediationRow | null> {
  let row = await db.oneOrNone<RemediationRow>('SELECT *, phone_id::int AS phone_id FROM reputation_remediations WHERE id = $1', [caseId]);
  if (!row || isRemediationClosed(row.status)) return row;
  if (!row.provider_ref) {
    const ref = await provider.submitRemediation({ phoneNumber: row.phone_number, kind: row.kind, callPurpose: CALL_PURPOSE });
    row = await db.one<RemediationRow>(
      `UPDATE reputation_remediations SET provider_ref = $2, updated_at = now() WHERE id = $1 RETURNING *, phone_id::int AS phone_id`, [caseId, ref]);
  }
  const state = await provider.remediationState(row.provider_ref!, row.phone_number);
  if (state.status === row.status || !NEXT[row.status].includes(state.status)) return row;
  // Every case passes through in_review: a decision seen while still open (a late poll) is applied as two moves.
  const steps: RemediationStatus[] = row.status === 'open' && isRemediationClosed(state.status) ? ['in_review', state.status] : [state.status];
  // The moves and their events commit together (outbox): reputation.remediation.updated per move.
  const moved = await db.tx('reputation-remediation-move', async (t) => {
    let current: RemediationRow | null = row;
    for (const next of steps) {
      const from: RemediationStatus = current!.status;
      const r: RemediationRow | null = await t.oneOrNone<RemediationRow>(
        `UPDATE reputation_remediations SET status = $3, updated_at = now(),
                in_review_at = CASE WHEN $3 = 'in_review' THEN now() ELSE in_review_at END,
                closed_at = CASE WHEN $3 IN ('resolved', 'rejected') THEN now() ELSE closed_at END,
                rejection_reason = $4
          WHERE id = $1 AND status = $2 RETURNING *, phone_id::int AS phone_id`,
        [caseId, from, next, next === 'rejected' ? state.reason : null]);
      if (!r) return null; // moved meanwhile by another poll
      await recordEvent(t, { organizationId: r.organization_id, eventType: REMEDIATION_EVENT,
        data: { ...remediationView(r), previous_status: from, occurred_at: r.updated_at.toISOString() } });
      current = r;
    }
    return current;
  });
  if (moved) wakeRelay(db);
  return moved ?? row;
}

/** Re-queues the poller of every live case that has not moved for `quietMs` and has no poller (its job was lost,
 *  e.g. Redis lost its data); answers how many. Run by the background scan. */
export async function sweepRemediations(db: Db, queues: QueueRegistry, quietMs: number): Promise<number> {
  const stuck = await db.any<{ id: string }>(
    `SELECT id FROM reputation_remediations WHERE status IN ('open', 'in_review') AND updated_at < now() - make_interval(secs => $1)
      ORDER BY updated_at LIMIT 500`, [quietMs / 1000]);
  let requeued = 0;
  const queue = remediationQueue(queues);
  for (const { id } of stuck) {
    const job = await queue.getJob(remediationJobId(id));
    if (job && !(await job.isFailed())) continue; // polling
    if (job) await job.retry(); // gave up after its attempts (the provider failing): try again
    else await enqueueRemediationPoll(queues, id, 0);
    requeued++;
  }
  return requeued;
}
