// Consent records of a contact, per channel (call, sms): where the consent came from and when it was captured.
// Revoking keeps the record (revoked_at) as evidence; a call needs a live call consent only when the
// organization's policy requires consent (shared/compliance).
import type { Static } from '@sinclair/typebox';
import { writeWithin, type Db, type WithinTx } from '../db.ts';
import { DomainError, notFound, stateConflict } from '../errors.ts';
import { isUuid, uuidv7 } from '../ids.ts';
import { getContact } from './contacts.ts';
import type { ConsentResponse } from './schemas.ts';

export type Channel = 'call' | 'sms';

export interface ConsentRow {
  id: string; contact_id: string; channel: Channel; source: string; captured_at: Date; revoked_at: Date | null; created_at: Date;
}

export const consentView = (c: ConsentRow): Static<typeof ConsentResponse> => ({
  id: c.id, contact_id: c.contact_id, channel: c.channel, source: c.source,
  status: c.revoked_at ? 'revoked' as const : 'active' as const,
  captured_at: c.captured_at.toISOString(), revoked_at: c.revoked_at ? c.revoked_at.toISOString() : null,
  created_at: c.created_at.toISOString(),
});

export async function addConsent(db: Db, organizationId: string, contactId: string,
  c: { channel: Channel; source: string; captured_at?: string }, within?: WithinTx<ConsentRow>): Promise<ConsentRow> {
  await getContact(db, organizationId, contactId);
  const captured = c.captured_at ? new Date(c.captured_at) : new Date();
  // Evidence of consent cannot come from the future (a minute of clock skew is tolerated).
  if (captured.getTime() > Date.now() + 60_000) {
    throw new DomainError('validation_error', 'captured_at is in the future.', { fields: { captured_at: 'must not be in the future' } });
  }
  return writeWithin(db, within, (q) => q.one<ConsentRow>(
    `INSERT INTO contact_consents (id, organization_id, contact_id, channel, source, captured_at) VALUES ($1, $2, $3, $4, $5, $6)
     RETURNING id, contact_id, channel, source, captured_at, revoked_at, created_at`,
    [uuidv7(), organizationId, contactId, c.channel, c.source, captured]));
}

export async function listConsents(db: Db, organizationId: string, contactId: string): Promise<ConsentRow[]> {
  await getContact(db, organizationId, contactId);
  return db.any(
    `SELECT id, contact_id, channel, source, captured_at, revoked_at, created_at FROM contact_consents
      WHERE organization_id = $1 AND contact_id = $2 ORDER BY id DESC`, [organizationId, contactId]);
}

/** Revokes one consent record; 409 when it is already revoked. */
export async function revokeConsent(db: Db, organizationId: string, contactId: string, consentId: string,
  within?: WithinTx<ConsentRow>): Promise<ConsentRow> {
  await getContact(db, organizationId, contactId);
  const current = isUuid(consentId) ? await db.oneOrNone<ConsentRow>(
    'SELECT revoked_at FROM contact_consents WHERE id = $1 AND contact_id = $2 AND organization_id = $3',
    [consentId, contactId, organizationId]) : null;
  if (!current) throw notFound(`Consent ${consentId}`);
  const conflict = () => stateConflict('contact_consent', 'revoked', `Consent ${consentId} is already revoked.`);
  if (current.revoked_at) throw conflict();
  return writeWithin(db, within, async (q) => {
    const row = await q.oneOrNone<ConsentRow>(
      `UPDATE contact_consents SET revoked_at = now() WHERE id = $1 AND organization_id = $2 AND revoked_at IS NULL
       RETURNING id, contact_id, channel, source, captured_at, revoked_at, created_at`, [consentId, organizationId]);
    if (!row) throw conflict();
    return row;
  });
}
