import type { Static } from '@sinclair/typebox';
import type { PhoneNumberResponse } from './schemas.ts';
import type { Tx } from '../db.ts';
import { parseE164 } from '../phone/e164.ts';

export interface PhoneNumberRow {
  id: number;
  phone_number: string;
  name: string;
  organization_id: string;
  user_id: string;
  provider: string;
  status: 'PROVISIONING' | 'ACTIVE' | 'RELEASED';
  iso_country: string;
  area_code: string;
  reputation_enrolled_at: Date | null;
  cnam_display_name: string;
  cnam_status: string;
  cnam_rejection_reason: string | null;
  texting_status: string;
  /** purchased from the carrier's inventory, or imported from the SIP trunk provider (shared/numbers/import.ts). */
  source: 'purchased' | 'imported';
  /** What answers inbound calls to the number (migration 026). */
  inbound: 'softphone' | 'reject';
  /** The sub-entity the number belongs to (migration 033); its calls and SMS take it. */
  sub_entity_id: string | null;
  created_at: Date;
}

/** The API shape of a phone number (item of GET /v1/phone-numbers). */
export function phoneNumberView(r: PhoneNumberRow): Static<typeof PhoneNumberResponse> {
  return {
    id: r.id,
    phone_number: r.phone_number,
    name: r.name,
    organization_id: r.organization_id,
    user_id: r.user_id,
    provider: r.provider,
    status: r.status,
    is_active: r.status === 'ACTIVE',
    iso_country: r.iso_country,
    reputation_enrolled_at: r.reputation_enrolled_at ? r.reputation_enrolled_at.toISOString() : null,
    cnam_display_name: r.cnam_display_name,
    cnam_status: r.cnam_status,
    cnam_rejection_reason: r.cnam_rejection_reason ?? null,
    texting_status: r.texting_status,
    source: r.source,
    inbound: r.inbound,
    sub_entity_id: r.sub_entity_id ?? null,
    created_at: r.created_at.toISOString(),
  };
}

/** CNAM display names are at most 15 characters on the carrier side. */
export const cnamFrom = (orgName: string) => orgName.replace(/[^A-Za-z0-9 &.,'-]/g, '').slice(0, 15).trim();

export interface InsertNumber {
  organizationId: string;
  userId: string;
  phoneNumber: string;
  name?: string | null;
  status: 'PROVISIONING' | 'ACTIVE';
  cnamDisplayName: string;
  provider?: string;
  source?: 'purchased' | 'imported';
}

/** Inserts one held number; every provisioned number is auto-enrolled in reputation monitoring. */
export async function insertPhoneNumber(tx: Tx, n: InsertNumber): Promise<PhoneNumberRow> {
  const parsed = parseE164(n.phoneNumber);
  if (!parsed) throw new Error(`not an E.164 number: ${n.phoneNumber}`);
  return tx.one(
    `INSERT INTO phone_numbers (phone_number, name, organization_id, user_id, provider, status, iso_country, area_code,
       reputation_enrolled_at, cnam_display_name, activated_at, source)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now(), $9, CASE WHEN $6 = 'ACTIVE' THEN now() END, $10) RETURNING *`,
    [n.phoneNumber, n.name || n.phoneNumber, n.organizationId, n.userId, n.provider ?? 'sandbox', n.status,
      parsed.isoCountry, parsed.areaCode ?? '', n.cnamDisplayName, n.source ?? 'purchased'],
  );
}
