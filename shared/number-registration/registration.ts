// Registering an organization's numbers with the call-analytics providers that label calls. Per number:
//
//   not_registered --submit--> pending --provider--> registered
//                                      \-provider--> rejected --submit--> pending
//   pending | registered | rejected --the number is released--> not_registered (withdrawn_at set)
//
// A bulk submission checks the whole request first (each entry a held, ACTIVE number of the organization, named once;
// the business details) and writes nothing when anything is wrong (validation_error with `fields`); then each number
// gets its result: submitted, already_pending or already_registered (left alone). Every state change writes
// number_registration.status_changed to the outbox in its transaction. The provider's verdict comes from a BullMQ
// job per check (workers/processors/number-registration.ts) carrying the submission's version, so the verdict on
// an older submission never lands on a newer one.
import type { JobsOptions, Queue } from 'bullmq';
import type { Config } from '../config.ts';
import type { Db, Tx, WithinTx } from '../db.ts';
import { notFound, validationError } from '../errors.ts';
import { recordEvent, wakeRelay } from '../events/outbox.ts';
import { einProblem } from '../caller-trust/enterprise/ein.ts';
import type { RegisteredAddress } from '../caller-trust/enterprise/details.ts';
import { keysetClause, type PageParams } from '../pagination.ts';
import { parseE164 } from '../phone/e164.ts';
import type { QueueRegistry } from '../queues/registry.ts';
import { SANDBOX_REGISTRATION_MS, type NumberRegistrationProvider, type RegistrationDetails } from './provider.ts';
import { registrationView, type NumberRegistrationStatus, type RegistrationRow, type SubmitResult } from './schemas.ts';

export const NUMBER_REGISTRATION_QUEUE = 'number-registration';
export const STATUS_EVENT = 'number_registration.status_changed';
/** Numbers per submission: one transaction each. */
export const SUBMIT_MAX = 1000;

export const CALL_PURPOSES = ['appointment_reminders', 'customer_service', 'account_notifications', 'collections',
  'sales', 'surveys', 'healthcare', 'political', 'charity', 'other'] as const;
export type CallPurpose = (typeof CALL_PURPOSES)[number];

export type NumberRegistrationJob =
  | { kind: 'register'; phoneId: number; version: number }
  | { kind: 'withdraw'; phoneId: number; phoneNumber: string; provider: string };

export const registrationQueue = (queues: QueueRegistry): Queue<NumberRegistrationJob> =>
  queues.get<NumberRegistrationJob>(NUMBER_REGISTRATION_QUEUE);

function jobOptions(jobId: string, delayMs: number): JobsOptions {
  return { jobId, delay: delayMs, attempts: 10, backoff: { type: 'exponential', delay: 1000 }, removeOnComplete: true, removeOnFail: { age: 7 * 86400 } };
}

export interface SubmitInput {
  phone_ids?: number[];
  phone_numbers?: string[];
  business_name?: string;
  ein?: string;
  call_purpose?: CallPurpose;
}

export interface SubmitOutcome { phone_id: number; phone_number: string; result: SubmitResult; registration: RegistrationRow }
export interface SubmitSummary { results: SubmitOutcome[]; submitted: number; already_pending: number; already_registered: number }

/** Checks the request's shape beyond JSON Schema: exactly one list, 1 to SUBMIT_MAX distinct entries, E.164 numbers,
 *  an EIN in the IRS form. Throws validation_error naming every problem. */
export function checkSubmitInput(input: SubmitInput): { field: 'phone_ids' | 'phone_numbers'; refs: (number | string)[] } {
  const fields: Record<string, string> = {};
  if (input.phone_ids !== undefined && input.phone_numbers !== undefined) {
    throw validationError({ phone_ids: 'give phone_ids or phone_numbers, not both', phone_numbers: 'give phone_ids or phone_numbers, not both' });
  }
  if (input.phone_ids === undefined && input.phone_numbers === undefined) {
    throw validationError({ phone_ids: 'is required (or phone_numbers)' });
  }
  const field = input.phone_ids !== undefined ? 'phone_ids' : 'phone_numbers';
  const refs: (number | string)[] = input.phone_ids ?? input.phone_numbers!;
  if (refs.length === 0) fields[field] = 'must list at least one number';
  if (refs.length > SUBMIT_MAX) fields[field] = `must list at most ${SUBMIT_MAX} numbers (submit more in several requests)`;
  if (!fields[field]) {
    const first = new Map<number | string, number>();
    refs.forEach((r, i) => {
      if (field === 'phone_numbers' && (typeof r !== 'string' || !parseE164(r))) fields[`${field}[${i}]`] = 'must be an E.164 number such as +14155550123';
      else if (first.has(r)) fields[`${field}[${i}]`] = `repeats ${field}[${first.get(r)}]`;
      else first.set(r, i);
    });
  }
  if (input.business_name !== undefined && !input.business_name.trim()) fields.business_name = 'must not be blank';
  if (input.ein !== undefined) {
    const p = einProblem(input.ein);
    if (p) fields.ein = p;
  }
  if (Object.keys(fields).length) throw validationError(fields);
  return { field, refs };
}

const oneLine = (a: RegisteredAddress) => [a.line1, a.line2, a.city, `${a.state} ${a.postal_code}`, a.country].filter(Boolean).join(', ');

/** The details submitted with the numbers: the request's business_name and ein when given (both, or neither),
 *  else the organization's latest APPROVED enterprise registration; otherwise validation_error. */
async function resolveDetails(tx: Tx, organizationId: string, input: SubmitInput): Promise<RegistrationDetails> {
  const call_purpose = input.call_purpose ?? 'customer_service';
  if (input.business_name !== undefined && input.ein !== undefined) {
    return { business_name: input.business_name.trim(), ein: input.ein, call_purpose, address: null, source: 'request', enterprise_registration_id: null };
  }
  if (input.business_name !== undefined || input.ein !== undefined) {
    throw validationError(input.business_name === undefined ? { business_name: 'is required with ein' } : { ein: 'is required with business_name' });
  }
  const ent = await tx.oneOrNone<{ id: string; legal_name: string; ein: string; registered_address: RegisteredAddress }>(
    `SELECT id, legal_name, ein, registered_address FROM enterprise_registrations
      WHERE organization_id = $1 AND status = 'APPROVED' AND deleted_at IS NULL ORDER BY decided_at DESC NULLS LAST, id DESC LIMIT 1`,
    [organizationId]);
  if (!ent) {
    const why = 'is required: the organization has no APPROVED enterprise registration to take it from';
    throw validationError({ business_name: why, ein: why },
      'Give business_name and ein, or get an enterprise registration APPROVED (/v1/caller-trust/enterprise-registrations).');
  }
  return { business_name: ent.legal_name, ein: ent.ein, call_purpose, address: oneLine(ent.registered_address),
    source: 'enterprise_registration', enterprise_registration_id: ent.id };
}

const SELECT = `SELECT p.id AS phone_id, p.phone_number, p.organization_id, r.status, r.provider, r.details, r.rejection_code,
  r.rejection_message, r.version, r.submitted_at, r.decided_at, r.withdrawn_at
  FROM phone_numbers p LEFT JOIN number_registrations r ON r.phone_id = p.id`;

/** The payload of number_registration.status_changed. */
export function statusEventData(r: RegistrationRow, previous: NumberRegistrationStatus, reason: 'submitted' | 'decided' | 'number_released') {
  return { ...registrationView(r), organization_id: r.organization_id, previous_status: previous, change: reason, updated_at: new Date().toISOString() };
}

export async function submitRegistrations(db: Db, queues: QueueRegistry, config: Pick<Config, 'sandboxTimeScale'>,
  provider: Pick<NumberRegistrationProvider, 'name'>, organizationId: string, input: SubmitInput,
  within?: WithinTx<SubmitSummary>): Promise<SubmitSummary> {
  const { field, refs } = checkSubmitInput(input);
  const summary = await db.tx('number-registration-submit', async (tx) => {
    const rows = await tx.any<RegistrationRow & { number_status: string }>(
      `${SELECT.replace('SELECT ', 'SELECT p.status AS number_status, ')}
        WHERE p.organization_id = $1 AND p.status <> 'RELEASED' AND ${field === 'phone_ids' ? 'p.id = ANY($2::bigint[])' : 'p.phone_number = ANY($2::text[])'}
        ORDER BY p.id FOR UPDATE OF p`,
      [organizationId, refs]);
    const byRef = new Map(rows.map((r) => [field === 'phone_ids' ? Number(r.phone_id) : r.phone_number, r]));
    const fields: Record<string, string> = {};
    refs.forEach((ref, i) => {
      const r = byRef.get(ref);
      if (!r) fields[`${field}[${i}]`] = 'is not a number the organization holds';
      else if (r.number_status !== 'ACTIVE') fields[`${field}[${i}]`] = `is ${r.number_status}; only ACTIVE numbers can be registered`;
    });
    if (Object.keys(fields).length) throw validationError(fields);
    const details = await resolveDetails(tx, organizationId, input);

    const out: SubmitSummary = { results: [], submitted: 0, already_pending: 0, already_registered: 0 };
    const jobs: { name: string; data: NumberRegistrationJob; opts: JobsOptions }[] = [];
    const delay = Math.round(SANDBOX_REGISTRATION_MS * config.sandboxTimeScale);
    for (const ref of refs) {
      const cur = byRef.get(ref)!;
      const { number_status: _, ...row } = cur;
      if (row.status === 'pending' || row.status === 'registered') {
        const result = row.status === 'pending' ? 'already_pending' : 'already_registered';
        out[result]++;
        out.results.push({ phone_id: Number(row.phone_id), phone_number: row.phone_number, result, registration: row });
        continue;
      }
      const saved = await tx.one<RegistrationRow>(
        `INSERT INTO number_registrations AS r (phone_id, organization_id, status, provider, details)
         VALUES ($1, $2, 'pending', $3, $4:json)
         ON CONFLICT (phone_id) DO UPDATE SET status = 'pending', provider = EXCLUDED.provider, details = EXCLUDED.details,
           rejection_code = NULL, rejection_message = NULL, version = r.version + 1, submitted_at = now(), decided_at = NULL,
           withdrawn_at = NULL, updated_at = now()
         RETURNING r.*, $5::text AS phone_number`,
        [row.phone_id, organizationId, provider.name, details, row.phone_number]);
      await recordEvent(tx, { organizationId, eventType: STATUS_EVENT, data: statusEventData(saved, row.status ?? 'not_registered', 'submitted') });
      jobs.push({ name: 'register', data: { kind: 'register', phoneId: Number(row.phone_id), version: saved.version! },
        opts: jobOptions(`numreg-${row.phone_id}-${saved.version}`, delay) });
      out.submitted++;
      out.results.push({ phone_id: Number(row.phone_id), phone_number: row.phone_number, result: 'submitted', registration: saved });
    }
    // Queued inside the transaction: if queuing fails nothing is written; a job that runs before the commit finds an
    // older version and is retried.
    if (jobs.length) await registrationQueue(queues).addBulk(jobs);
    await within?.(tx, out);
    return out;
  });
  if (summary.submitted) wakeRelay(db);
  return summary;
}

export type DecideOutcome = 'applied' | 'stale' | 'not_committed_yet' | { retryInMs: number };

/** Asks the provider about the job's submission and records its verdict with its event. */
export async function decideRegistration(db: Db, provider: NumberRegistrationProvider, job: { phoneId: number; version: number }): Promise<DecideOutcome> {
  const row = await db.oneOrNone<RegistrationRow & { number_status: string }>(
    `${SELECT.replace('SELECT ', 'SELECT p.status AS number_status, ')} WHERE p.id = $1`, [job.phoneId]);
  if (!row || row.version === null) return 'not_committed_yet';
  if (row.version > job.version || row.status !== 'pending' || row.number_status === 'RELEASED') return 'stale';
  if (row.version < job.version) return 'not_committed_yet';
  const verdict = await provider.register(row.phone_number, row.details!);
  if (verdict.status === 'pending') return { retryInMs: verdict.retryInMs };
  const applied = await db.tx('number-registration-decide', async (tx) => {
    const saved = await tx.oneOrNone<RegistrationRow>(
      `UPDATE number_registrations r SET status = $3, rejection_code = $4, rejection_message = $5, decided_at = now(), updated_at = now()
        WHERE phone_id = $1 AND version = $2 AND status = 'pending' RETURNING r.*, $6::text AS phone_number`,
      [job.phoneId, job.version, verdict.status, verdict.status === 'rejected' ? verdict.code : null,
        verdict.status === 'rejected' ? verdict.message : null, row.phone_number]);
    if (!saved) return false;
    await recordEvent(tx, { organizationId: saved.organization_id, eventType: STATUS_EVENT, data: statusEventData(saved, 'pending', 'decided') });
    return true;
  });
  if (!applied) return 'stale';
  wakeRelay(db);
  return 'applied';
}

/** Inside the release of a number (shared/numbers/lifecycle.ts): a registration that is pending, registered or
 *  rejected becomes not_registered (withdrawn_at set) with its event, and the provider is told by a job. */
export async function withdrawRegistration(tx: Tx, queues: QueueRegistry, phone: { id: number; phone_number: string; organization_id: string }): Promise<void> {
  const before = await tx.oneOrNone<{ status: NumberRegistrationStatus }>(
    `SELECT status FROM number_registrations WHERE phone_id = $1 FOR UPDATE`, [phone.id]);
  if (!before || before.status === 'not_registered') return;
  const saved = await tx.one<RegistrationRow>(
    `UPDATE number_registrations r SET status = 'not_registered', rejection_code = NULL, rejection_message = NULL,
            version = version + 1, withdrawn_at = now(), updated_at = now()
      WHERE phone_id = $1 RETURNING r.*, $2::text AS phone_number`, [phone.id, phone.phone_number]);
  await recordEvent(tx, { organizationId: phone.organization_id, eventType: STATUS_EVENT, data: statusEventData(saved, before.status, 'number_released') });
  if (before.status !== 'rejected') {
    await registrationQueue(queues).add('withdraw', { kind: 'withdraw', phoneId: phone.id, phoneNumber: phone.phone_number, provider: saved.provider! },
      jobOptions(`numreg-withdraw-${phone.id}-${saved.version}`, 0));
  }
}

export async function getRegistration(db: Db, organizationId: string, phoneId: number): Promise<RegistrationRow> {
  const row = await db.oneOrNone<RegistrationRow>(`${SELECT} WHERE p.id = $1 AND p.organization_id = $2`, [phoneId, organizationId]);
  if (!row) throw notFound('Phone number');
  return row;
}

/** The organization's held numbers (not released) with their registration, one keyset page on the phone id;
 *  `status` filters (not_registered includes numbers never submitted). */
export async function listRegistrations(db: Db, organizationId: string, p: PageParams, status?: NumberRegistrationStatus) {
  const k = keysetClause('p.id', p, 3);
  const filter = status === undefined ? '' : status === 'not_registered' ? ` AND COALESCE(r.status, 'not_registered') = $2` : ' AND r.status = $2';
  const where = `WHERE p.organization_id = $1 AND p.status <> 'RELEASED'${filter}`;
  return db.task(async (t) => {
    const rows = await t.any<RegistrationRow>(`${SELECT} ${where}${k.where}${k.tail}`, [organizationId, status ?? null, ...k.values]);
    const { n } = await t.one(`SELECT count(*)::int AS n FROM phone_numbers p LEFT JOIN number_registrations r ON r.phone_id = p.id ${where}`,
      [organizationId, status ?? null]);
    return { rows, total: n as number };
  });
}
