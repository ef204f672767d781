import type { Static } from '@sinclair/typebox';
import type { RegistrationResponse } from './schemas.ts';
// The organization's texting registration (A2P 10DLC style): a brand (who sends) and a campaign (what is sent
// and how recipients opted in), vetted by a registration provider. States:
//
//   none --submit--> pending --vetting--> approved
//                            \-vetting--> rejected --submit--> pending
//
// Submitting while pending or approved is a 409 naming the status. Every change writes
// TEXTING_REGISTRATION_STATUS_CHANGED in its own transaction and moves the organization's numbers'
// texting_status (pending, registered, rejected); a number bought later takes the registration's state
// (a trigger of migration 017).
import type { Db, Tx, WithinTx } from '../db.ts';
import { stateConflict } from '../errors.ts';
import { recordEvent, wakeRelay } from '../events/outbox.ts';
import { uuidv7 } from '../ids.ts';

export type RegistrationStatus = 'none' | 'pending' | 'approved' | 'rejected';
export const REGISTRATION_EVENT = 'TEXTING_REGISTRATION_STATUS_CHANGED';

export const CAMPAIGN_USE_CASES = ['account_notification', 'customer_care', 'delivery_notification', 'marketing',
  'mixed', 'two_factor_authentication', 'appointment_reminders'] as const;

export interface Brand { legal_name: string; ein: string; website?: string; vertical: string; country: string }
export interface Campaign { use_case: string; description: string; sample_messages: string[]; message_flow: string }
export interface RegistrationInput { brand: Brand; campaign: Campaign }

export interface RegistrationRow {
  id: string;
  organization_id: string;
  status: Exclude<RegistrationStatus, 'none'>;
  brand: Brand;
  campaign: Campaign;
  provider: string;
  provider_ref: string | null;
  rejection_reason: string | null;
  submitted_at: Date;
  decided_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** The texting_status a number has under each registration status. */
export const NUMBER_TEXTING_STATUS: Record<RegistrationStatus, string> = {
  none: 'not_registered', pending: 'pending', approved: 'registered', rejected: 'rejected',
};

export interface NumberTextingStatus { phone_number: string; texting_status: string }

export function registrationView(r: RegistrationRow | null, numbers: NumberTextingStatus[]): Static<typeof RegistrationResponse> {
  return {
    id: r?.id ?? null,
    status: (r?.status ?? 'none') as RegistrationStatus,
    brand: r?.brand ?? null,
    campaign: r?.campaign ?? null,
    provider: r?.provider ?? null,
    rejection_reason: r?.rejection_reason ?? null,
    submitted_at: r ? r.submitted_at.toISOString() : null,
    decided_at: r?.decided_at ? r.decided_at.toISOString() : null,
    numbers,
  };
}

/** The payload of TEXTING_REGISTRATION_STATUS_CHANGED (the reference does not show it). */
export function registrationEventData(r: RegistrationRow, previous: RegistrationStatus) {
  return {
    id: r.id, organization_id: r.organization_id, status: r.status, previous_status: previous,
    rejection_reason: r.rejection_reason, brand_name: r.brand.legal_name, campaign_use_case: r.campaign.use_case,
    updated_at: r.updated_at.toISOString(),
  };
}

export async function findRegistration(db: Db | Tx, organizationId: string): Promise<RegistrationRow | null> {
  return db.oneOrNone('SELECT * FROM texting_registrations WHERE organization_id = $1', [organizationId]);
}

export async function numbersTextingStatus(db: Db | Tx, organizationId: string): Promise<NumberTextingStatus[]> {
  return db.any(`SELECT phone_number, texting_status FROM phone_numbers
                  WHERE organization_id = $1 AND status <> 'RELEASED' ORDER BY id`, [organizationId]);
}

async function setNumbersStatus(tx: Tx, organizationId: string, status: RegistrationStatus) {
  await tx.none(`UPDATE phone_numbers SET texting_status = $2 WHERE organization_id = $1 AND status <> 'RELEASED'`,
    [organizationId, NUMBER_TEXTING_STATUS[status]]);
}

/** What a registration provider does: take a submission for vetting. Its decision comes back later through
 *  decideRegistration() (the sandbox: a delayed job; a real provider: its webhook). */
export interface TextingRegistrationProvider {
  readonly name: string;
  /** Returns the provider's reference of the submission. Must be idempotent per registration id and submission. */
  submit(reg: RegistrationRow): Promise<{ providerRef: string }>;
}

/** none/rejected -> pending, then hands the submission to the provider. `within` commits with the change. */
export interface Submitted { row: RegistrationRow; numbers: NumberTextingStatus[] }

export async function submitRegistration(db: Db, provider: TextingRegistrationProvider, organizationId: string,
  input: RegistrationInput, within?: WithinTx<Submitted>): Promise<Submitted> {
  const submitted = await db.tx('texting-registration-submit', async (tx): Promise<Submitted> => {
    // Serializes submissions of one organization (two racing first submissions both see no row).
    await tx.any('SELECT pg_advisory_xact_lock(hashtextextended($1, 17))', [`texting-registration:${organizationId}`]);
    const current = await tx.oneOrNone<RegistrationRow>(
      'SELECT * FROM texting_registrations WHERE organization_id = $1 FOR UPDATE', [organizationId]);
    const previous: RegistrationStatus = current?.status ?? 'none';
    if (current && current.status !== 'rejected') {
      throw stateConflict('texting_registration', current.status,
        `The texting registration is ${current.status}; only a rejected registration can be submitted again.`);
    }
    const row = await tx.one<RegistrationRow>(
      `INSERT INTO texting_registrations (id, organization_id, status, brand, campaign, provider)
       VALUES ($1, $2, 'pending', $3:json, $4:json, $5)
       ON CONFLICT (organization_id) DO UPDATE SET status = 'pending', brand = EXCLUDED.brand, campaign = EXCLUDED.campaign,
         provider = EXCLUDED.provider, provider_ref = NULL, rejection_reason = NULL, submitted_at = now(), decided_at = NULL,
         updated_at = now()
       RETURNING *`,
      [current?.id ?? uuidv7(), organizationId, input.brand, input.campaign, provider.name]);
    await setNumbersStatus(tx, organizationId, 'pending');
    await recordEvent(tx, { organizationId, eventType: REGISTRATION_EVENT, data: registrationEventData(row, previous) });
    const out = { row, numbers: await numbersTextingStatus(tx, organizationId) };
    if (within) await within(tx, out);
    return out;
  });
  wakeRelay(db);
  const { row } = submitted;
  const { providerRef } = await provider.submit(row);
  await db.none('UPDATE texting_registrations SET provider_ref = $2 WHERE id = $1 AND status = \'pending\'', [row.id, providerRef]);
  return { ...submitted, row: { ...row, provider_ref: providerRef } };
}

export type Verdict = { status: 'approved' } | { status: 'rejected'; reason: string };

/** pending -> approved | rejected, once: a verdict for a registration no longer pending (or resubmitted since:
 *  `submittedAt` differs) is ignored and answers null. */
export async function decideRegistration(db: Db, registrationId: string, submittedAt: string, verdict: Verdict): Promise<RegistrationRow | null> {
  const row = await db.tx('texting-registration-decide', async (tx) => {
    const r = await tx.oneOrNone<RegistrationRow>(
      `UPDATE texting_registrations SET status = $3, rejection_reason = $4, decided_at = now(), updated_at = now()
        WHERE id = $1 AND status = 'pending' AND date_trunc('milliseconds', submitted_at) = $2::timestamptz RETURNING *`,
      [registrationId, submittedAt, verdict.status, verdict.status === 'rejected' ? verdict.reason : null]);
    if (!r) return null;
    await setNumbersStatus(tx, r.organization_id, r.status);
    await recordEvent(tx, { organizationId: r.organization_id, eventType: REGISTRATION_EVENT, data: registrationEventData(r, 'pending') });
    return r;
  });
  if (row) wakeRelay(db);
  return row;
}
