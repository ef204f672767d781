// Setting a number's caller name (PATCH /v1/phone-numbers/{id}) and recording the provider's verdict. A change
// bumps cnam_version and sets cnam_status pending; the registration job (workers/processors/cnam-registration.ts)
// carries the version, so the verdict on an older name never overwrites a newer one.
import { assertSubEntityOf } from '../sub-entities/sub-entities.ts';
import type { JobsOptions, Queue } from 'bullmq';
import type { Config } from '../config.ts';
import type { Db, WithinTx } from '../db.ts';
import { DomainError, notFound, validationError } from '../errors.ts';
import type { LifecycleRow } from '../numbers/lifecycle.ts';
import type { QueueRegistry } from '../queues/registry.ts';
import type { CnamProvider } from './provider.ts';
import { cnamNameProblem } from './rules.ts';

export const CNAM_QUEUE = 'cnam-registration';
/** The sandbox CNAM database answers after this long (scaled by SANDBOX_TIME_SCALE). */
export const SANDBOX_CNAM_MS = 3000;

export interface CnamJob { phoneId: number; version: number }

export const cnamQueue = (queues: QueueRegistry): Queue<CnamJob> => queues.get<CnamJob>(CNAM_QUEUE);

export function cnamJobOptions(job: CnamJob, config: Pick<Config, 'sandboxTimeScale'>): JobsOptions {
  return {
    jobId: `cnam-${job.phoneId}-${job.version}`,
    delay: Math.round(SANDBOX_CNAM_MS * config.sandboxTimeScale),
    attempts: 10,
    backoff: { type: 'exponential', delay: 1000 },
    removeOnComplete: true,
    removeOnFail: true,
  };
}

export interface CnamPatch { cnam_display_name?: string; name?: string; inbound?: 'softphone' | 'reject'; sub_entity_id?: string | null }

/** Applies the patch; a new (or previously rejected) display name goes back to pending and is submitted. The job
 *  is queued inside the transaction: if queuing fails nothing is written, and a job that runs before the commit
 *  finds an older version and is retried (see applyCnamVerdict). */
export async function setCnam(db: Db, queues: QueueRegistry, config: Pick<Config, 'sandboxTimeScale'>, organizationId: string,
  id: number, patch: CnamPatch, within?: WithinTx<LifecycleRow>): Promise<LifecycleRow> {
  if (patch.cnam_display_name !== undefined) {
    const problem = cnamNameProblem(patch.cnam_display_name);
    if (problem) throw validationError({ cnam_display_name: problem });
  }
  return db.tx(async (tx) => {
    const row = await tx.oneOrNone<LifecycleRow & { cnam_version: number }>(
      'SELECT * FROM phone_numbers WHERE id = $1 AND organization_id = $2 FOR UPDATE', [id, organizationId]);
    if (!row) throw notFound('Phone number');
    await assertSubEntityOf(tx, organizationId, patch.sub_entity_id);
    if (row.status === 'RELEASED') {
      throw new DomainError('cnam_number_released', `Phone number ${id} is released (status RELEASED); it can no longer be changed.`);
    }
    const name = patch.cnam_display_name;
    const resubmit = name !== undefined && (name !== row.cnam_display_name || row.cnam_status === 'rejected');
    const version = resubmit ? row.cnam_version + 1 : row.cnam_version;
    const updated = await tx.one<LifecycleRow>(
      `UPDATE phone_numbers SET name = COALESCE($3, name), inbound = COALESCE($7, inbound),
              cnam_display_name = CASE WHEN $4 THEN $5 ELSE cnam_display_name END,
              cnam_status = CASE WHEN $4 THEN 'pending' ELSE cnam_status END,
              cnam_rejection_reason = CASE WHEN $4 THEN NULL ELSE cnam_rejection_reason END,
              cnam_updated_at = CASE WHEN $4 THEN now() ELSE cnam_updated_at END,
              cnam_version = $6, sub_entity_id = CASE WHEN $8 THEN $9::uuid ELSE sub_entity_id END
        WHERE id = $1 AND organization_id = $2 RETURNING *`,
      [id, organizationId, patch.name ?? null, resubmit, name ?? null, version, patch.inbound ?? null,
        patch.sub_entity_id !== undefined, patch.sub_entity_id ?? null]);
    if (resubmit) {
      const job = { phoneId: id, version };
      await cnamQueue(queues).add('register', job, cnamJobOptions(job, config));
    }
    await within?.(tx, updated);
    return updated;
  });
}

export type VerdictOutcome = 'applied' | 'stale' | 'not_committed_yet';

/** Asks the provider about the job's version of the name and records its verdict. */
export async function registerCnam(db: Db, provider: CnamProvider, job: CnamJob): Promise<VerdictOutcome | { retryInMs: number }> {
  const row = await db.oneOrNone<{ phone_number: string; cnam_display_name: string; cnam_status: string; cnam_version: number; status: string }>(
    'SELECT phone_number, cnam_display_name, cnam_status, cnam_version, status FROM phone_numbers WHERE id = $1', [job.phoneId]);
  if (!row || row.cnam_version > job.version || row.cnam_status !== 'pending' || row.status === 'RELEASED') return 'stale';
  if (row.cnam_version < job.version) return 'not_committed_yet';
  const verdict = await provider.register(row.phone_number, row.cnam_display_name);
  if (verdict.status === 'pending') return { retryInMs: verdict.retryInMs };
  const r = await db.result(
    `UPDATE phone_numbers SET cnam_status = $3, cnam_rejection_reason = $4, cnam_updated_at = now()
      WHERE id = $1 AND cnam_version = $2 AND cnam_status = 'pending'`,
    [job.phoneId, job.version, verdict.status, verdict.status === 'rejected' ? verdict.reason : null]);
  return r.rowCount ? 'applied' : 'stale';
}

/** Submits the caller name a number was bought with (derived from the organization's name) once it is ACTIVE and
 *  still pending. Idempotent: the job id is per number and version. */
export async function submitPendingCnam(db: Db, queues: QueueRegistry, config: Pick<Config, 'sandboxTimeScale'>, phoneId: number): Promise<boolean> {
  const row = await db.oneOrNone<{ cnam_version: number }>(
    `SELECT cnam_version FROM phone_numbers WHERE id = $1 AND status = 'ACTIVE' AND cnam_status = 'pending' AND cnam_display_name <> ''`, [phoneId]);
  if (!row) return false;
  const job = { phoneId, version: row.cnam_version };
  await cnamQueue(queues).add('register', job, cnamJobOptions(job, config));
  return true;
}
