import type { Static } from '@sinclair/typebox';
import type { InboxEntryResponse } from './schemas.ts';
import type { Db, Tx } from '../db.ts';

// The sandbox's stand-in for the outside world's phones: what the sandbox carrier "delivered" to an external
// number (today the speech of caller-ID verification calls). Each entry belongs to the organization whose action
// produced it, so one organization never reads what was said to another's numbers.

/** voice: what a call said; email: a message the platform mailed (invitations, resets) while SMTP_URL is unset. */
export type InboxChannel = 'voice' | 'email';

export interface InboxEntryRow {
  id: string;
  organization_id: string;
  phone_number: string;
  channel: InboxChannel;
  kind: string;
  text: string;
  subject: string | null;
  created_at: Date;
}

/** How many entries GET /v1/sandbox/inbox answers at most (newest first). */
export const INBOX_LIST_MAX = 50;

/** phoneNumber: the address delivered to (a number, or an email address for channel email). */
export async function deliverToInbox(q: Db | Tx, e: { organizationId: string; phoneNumber: string; channel: InboxChannel; kind: string; text: string; subject?: string }) {
  await q.none(
    `INSERT INTO sandbox_inbox (organization_id, phone_number, channel, kind, text, subject) VALUES ($1, $2, $3, $4, $5, $6)`,
    [e.organizationId, e.phoneNumber, e.channel, e.kind, e.text, e.subject ?? null]);
}

export async function readInbox(db: Db, organizationId: string, phoneNumber: string, limit = INBOX_LIST_MAX): Promise<InboxEntryRow[]> {
  return db.any(
    `SELECT * FROM sandbox_inbox WHERE organization_id = $1 AND phone_number = $2 ORDER BY id DESC LIMIT $3`,
    [organizationId, phoneNumber, limit]);
}

export async function readMailbox(db: Db, organizationId: string, email: string, limit = INBOX_LIST_MAX): Promise<InboxEntryRow[]> {
  return db.any(
    `SELECT * FROM sandbox_inbox WHERE organization_id = $1 AND channel = 'email' AND lower(phone_number) = lower($2) ORDER BY id DESC LIMIT $3`,
    [organizationId, email, limit]);
}

export const inboxEntryView = (r: InboxEntryRow): Static<typeof InboxEntryResponse> => r.channel === 'email'
  ? { id: Number(r.id), email: r.phone_number, channel: r.channel, kind: r.kind, subject: r.subject ?? '', text: r.text,
    created_at: r.created_at.toISOString() }
  : { id: Number(r.id), phone_number: r.phone_number, channel: r.channel, kind: r.kind, text: r.text, created_at: r.created_at.toISOString() };
