// Contacts: the organization's people, one live contact per phone number, with an optional IANA timezone (the
// calling window's local time, before the number's own zones) and tags. Creating one fires contact_created through
// the outbox in the same transaction. Deleting keeps the row (deleted_at): consent records refer to it.
import { assertSubEntityOf } from '../sub-entities/sub-entities.ts';
import type { Static } from '@sinclair/typebox';
import { writeWithin, type Db, type Tx, type WithinTx } from '../db.ts';
import { DomainError, notFound } from '../errors.ts';
import { recordEvent, wakeRelay } from '../events/outbox.ts';
import { isUuid, uuidv7 } from '../ids.ts';
import { keysetClause, type PageParams } from '../pagination.ts';
import type { OptOutRow } from './opt-outs.ts';
import type { ContactDetailResponse, ContactResponse } from './schemas.ts';

export interface ContactRow {
  id: string;
  organization_id: string;
  phone_number: string;
  name: string;
  timezone: string | null;
  tags: string[];
  /** The sub-entity the contact belongs to (migration 033); null: none. */
  sub_entity_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface ContactInput { phone_number: string; name?: string; timezone?: string | null; tags?: string[]; sub_entity_id?: string | null }

export const contactView = (c: ContactRow): Static<typeof ContactResponse> => ({
  id: c.id,
  phone_number: c.phone_number,
  name: c.name,
  timezone: c.timezone,
  tags: c.tags,
  sub_entity_id: c.sub_entity_id ?? null,
  created_at: c.created_at.toISOString(),
  updated_at: c.updated_at.toISOString(),
});

type ContactDetail = Static<typeof ContactDetailResponse>;

/** The contact with its call history counts, the number's live opt-outs (of all its opt-out records) and its DNC state. */
export const contactDetailView = (c: ContactRow, history: ContactDetail['call_history'], optOuts: OptOutRow[], onDnc: boolean): ContactDetail => {
  const live = (ch: OptOutRow['channel']) => optOuts.some((o) => o.channel === ch && !o.revoked_at);
  return { ...contactView(c), call_history: history, opted_out: { call: live('call'), sms: live('sms') }, on_dnc: onDnc };
};

const exists = (phone: string, id: string) => new DomainError('contact_exists', `A contact with phone_number ${phone} already exists.`,
  { fields: { phone_number: `is already the number of contact ${id}`, conflicts_with: id } });

async function liveWithNumber(q: Db | Tx, organizationId: string, phone: string): Promise<string | null> {
  const row = await q.oneOrNone<{ id: string }>(
    'SELECT id FROM contacts WHERE organization_id = $1 AND phone_number = $2 AND deleted_at IS NULL', [organizationId, phone]);
  return row?.id ?? null;
}

export async function createContact(db: Db, organizationId: string, c: ContactInput, within?: WithinTx<ContactRow>): Promise<ContactRow> {
  // The row and its event commit together (with the request's idempotency record when there is one).
  const row = await db.tx('contact-create', async (q) => {
    await assertSubEntityOf(q, organizationId, c.sub_entity_id);
    const taken = await liveWithNumber(q, organizationId, c.phone_number);
    if (taken) throw exists(c.phone_number, taken);
    const inserted = await q.oneOrNone<ContactRow>(
      `INSERT INTO contacts (id, organization_id, phone_number, name, timezone, tags, sub_entity_id) VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT DO NOTHING RETURNING *`,
      [uuidv7(), organizationId, c.phone_number, c.name ?? '', c.timezone ?? null, c.tags ?? [], c.sub_entity_id ?? null]);
    // A racing create of the same number won.
    if (!inserted) throw exists(c.phone_number, (await liveWithNumber(q, organizationId, c.phone_number)) ?? 'unknown');
    await recordEvent(q, { organizationId, eventType: 'contact_created', data: contactView(inserted) });
    if (within) await within(q, inserted);
    return inserted;
  });
  wakeRelay(db);
  return row;
}

export async function findContact(db: Db | Tx, organizationId: string, id: string): Promise<ContactRow | null> {
  if (!isUuid(id)) return null;
  return db.oneOrNone('SELECT * FROM contacts WHERE id = $1 AND organization_id = $2 AND deleted_at IS NULL', [id, organizationId]);
}

export async function getContact(db: Db | Tx, organizationId: string, id: string): Promise<ContactRow> {
  const row = await findContact(db, organizationId, id);
  if (!row) throw notFound(`Contact ${id}`);
  return row;
}

export async function updateContact(db: Db, organizationId: string, id: string, patch: Partial<ContactInput>,
  within?: WithinTx<ContactRow>): Promise<ContactRow> {
  await getContact(db, organizationId, id);
  await assertSubEntityOf(db, organizationId, patch.sub_entity_id);
  return writeWithin(db, within, async (q) => {
    if (patch.phone_number !== undefined) {
      const taken = await liveWithNumber(q, organizationId, patch.phone_number);
      if (taken && taken !== id) throw exists(patch.phone_number, taken);
    }
    const row = await q.oneOrNone<ContactRow>(
      `UPDATE contacts SET phone_number = COALESCE($3, phone_number), name = COALESCE($4, name),
              timezone = CASE WHEN $5 THEN $6 ELSE timezone END, tags = COALESCE($7, tags),
              sub_entity_id = CASE WHEN $8 THEN $9::uuid ELSE sub_entity_id END, updated_at = now()
        WHERE id = $1 AND organization_id = $2 AND deleted_at IS NULL RETURNING *`,
      [id, organizationId, patch.phone_number ?? null, patch.name ?? null, patch.timezone !== undefined, patch.timezone ?? null,
        patch.tags ?? null, patch.sub_entity_id !== undefined, patch.sub_entity_id ?? null]);
    if (!row) throw notFound(`Contact ${id}`);
    return row;
  });
}

export async function deleteContact(db: Db, organizationId: string, id: string, within?: WithinTx<void>): Promise<void> {
  await getContact(db, organizationId, id);
  await writeWithin(db, within, async (q) => {
    await q.none('UPDATE contacts SET deleted_at = now() WHERE id = $1 AND organization_id = $2 AND deleted_at IS NULL', [id, organizationId]);
  });
}

export interface ContactFilter { tag?: string; phone_number?: string; sub_entity_id?: string }

export async function listContacts(db: Db, organizationId: string, f: ContactFilter, p: PageParams): Promise<ContactRow[]> {
  const k = keysetClause('id', p, 5);
  return db.any(
    `SELECT * FROM contacts WHERE organization_id = $1 AND deleted_at IS NULL
        AND ($2::text IS NULL OR $2 = ANY(tags)) AND ($3::text IS NULL OR phone_number = $3)
        AND ($4::uuid IS NULL OR sub_entity_id = $4)${k.where}${k.tail}`,
    [organizationId, f.tag ?? null, f.phone_number ?? null, f.sub_entity_id ?? null, ...k.values]);
}

/** How often the organization called the contact's number, and when last. */
/** onlySubEntityId: count only that sub-entity's calls (a credential limited to it). */
export async function callHistory(db: Db, organizationId: string, phone: string, now = new Date(),
  onlySubEntityId: string | null = null): Promise<ContactDetail['call_history']> {
  const r = await db.one<{ total: number; answered: number; last_24h: number; last_30d: number; last: Date | null }>(
    `SELECT count(*)::int AS total, count(*) FILTER (WHERE picked_up)::int AS answered,
            count(*) FILTER (WHERE created_at > $3::timestamptz - interval '24 hours')::int AS last_24h,
            count(*) FILTER (WHERE created_at > $3::timestamptz - interval '30 days')::int AS last_30d,
            max(created_at) AS last
       FROM calls WHERE organization_id = $1 AND to_number = $2 AND ($4::uuid IS NULL OR sub_entity_id = $4)`,
    [organizationId, phone, now, onlySubEntityId]);
  return { total: r.total, answered: r.answered, last_24_hours: r.last_24h, last_30_days: r.last_30d,
    last_called_at: r.last ? r.last.toISOString() : null };
}
