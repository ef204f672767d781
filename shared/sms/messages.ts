import type { Static } from '@sinclair/typebox';
import { OPEN_SCOPE, smsBodyWithheld, type ContentScope } from '../sub-entities/content-policy.ts';
import { assertSubEntityForNumber } from '../sub-entities/sub-entities.ts';
import { assertNumberWithinDb } from '../sub-entities/limit.ts';
import type { MessageResponse } from './schemas.ts';
// SMS message records and accepting a send (POST /v1/sms/send). Accepting checks, in this order, and writes
// nothing when one refuses:
//   1 validation        E.164 numbers, a body of at most MAX_SEGMENTS segments (400 validation_error)
//   2 credential bounds 403 forbidden (shared/tokens/bounds.ts, as on the call paths); a demo key texting outside
//                       the sandbox's 555 numbers: 403 destination_blocked
//   3 registration      403 texting_not_ready: a2p_registration_required | _pending | _rejected
//   4 sender            403 texting_not_ready no_sender: from_number is not an active, registered number of the
//                       organization
//   5 plan              402 no_active_subscription (shared/usage/plan.ts, the rule of every paid operation)
//   6 opt-out           403 recipient_opted_out (the recipient replied STOP to the organization)
// then inserts the message (queued) and puts it on the sms-send queue. Money is charged when the workers hand
// the message to the carrier (shared/sms/send.ts), where the opt-out is checked again under a lock.
import type { Queue } from 'bullmq';
import type { QueueRegistry } from '../queues/registry.ts';
import type { Principal } from '../accounts/principal.ts';
import { writeWithin, type Db, type Tx, type WithinTx } from '../db.ts';
import { DomainError, notFound, validationError } from '../errors.ts';
import { isUuid, uuidv7 } from '../ids.ts';
import { keysetClause, type PageParams } from '../pagination.ts';
import { isDemoDestination } from '../calls/destinations.ts';
import { isE164 } from '../phone/e164.ts';
import { assertWithinBounds } from '../tokens/bounds.ts';
import { subscriptionRefusal } from '../usage/plan.ts';
import type { RegistrationStatus } from './registration.ts';
import { countSegments, MAX_SEGMENTS, type Encoding } from './segments.ts';

export type MessageStatus = 'queued' | 'sent' | 'delivered' | 'undelivered' | 'failed' | 'received';
export type Direction = 'outbound' | 'inbound';

export interface MessageRow {
  id: string;
  organization_id: string;
  direction: Direction;
  local_number: string;
  remote_number: string;
  body: string;
  encoding: Encoding;
  segments: number;
  status: MessageStatus;
  provider: string;
  provider_id: string | null;
  error_message: string | null;
  auto_reply_to: string | null;
  keyword: string | null;
  created_at: Date;
  sent_at: Date | null;
  delivered_at: Date | null;
  updated_at: Date;
  /** The sub-entity of the message: its number's when sent or received (migration 033). */
  sub_entity_id: string | null;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** The message record of the read endpoints: the reference's fields plus what a reader needs. */
export function messageView(m: MessageRow, content: ContentScope = OPEN_SCOPE): Static<typeof MessageResponse> {
  const outbound = m.direction === 'outbound';
  const withheld = smsBodyWithheld(content, m);
  return {
    id: m.id,
    phone_number: m.remote_number,
    from_number: outbound ? m.local_number : m.remote_number,
    to_number: outbound ? m.remote_number : m.local_number,
    direction: m.direction,
    status: m.status,
    body: withheld ? null : m.body,
    body_withheld: withheld,
    sub_entity_id: m.sub_entity_id ?? null,
    encoding: m.encoding,
    segments: m.segments,
    provider_id: m.provider_id,
    error_message: m.error_message,
    auto_reply_to: m.auto_reply_to,
    channel: 'sms' as const,
    created_at: m.created_at.toISOString(),
    sent_at: iso(m.sent_at),
    delivered_at: iso(m.delivered_at),
    updated_at: m.updated_at.toISOString(),
  };
}

/** The payload of sms_sent, sms_delivered and sms_failed: exactly the reference's fields. */
export function messageEventData(m: MessageRow) {
  const v = messageView(m);
  return {
    id: v.id, phone_number: v.phone_number, from_number: v.from_number, direction: v.direction, status: v.status,
    provider_id: v.provider_id, error_message: v.error_message, channel: v.channel, created_at: v.created_at,
  };
}

// ---- the send queue -------------------------------------------------------------------------------------------

export const SMS_SEND_QUEUE = 'sms-send';
export interface SendJob { messageId: string; /** the reserved send slot (shared/sms/throughput.ts) */ slot?: number }

export const sendQueue = (queues: QueueRegistry): Queue<SendJob> => queues.get<SendJob>(SMS_SEND_QUEUE);

/** Idempotent per message (job id = message id). */
export async function enqueueSend(q: Queue<SendJob>, messageIds: string[]): Promise<void> {
  if (!messageIds.length) return;
  await q.addBulk(messageIds.map((messageId) => ({
    name: 'send', data: { messageId },
    opts: { jobId: messageId, attempts: 8, backoff: { type: 'exponential', delay: 200 },
      removeOnComplete: { age: 3600, count: 50_000 }, removeOnFail: { age: 7 * 86400 } },
  })));
}

/** Outbound messages still queued after `olderThanMs`: candidates for re-enqueueing (a job that exists already is
 *  left alone, since the job id is the message id). */
export async function staleQueued(db: Db, olderThanMs: number, limit = 1000): Promise<string[]> {
  const rows = await db.any<{ id: string }>(
    `SELECT id FROM sms_messages WHERE status = 'queued' AND created_at < now() - make_interval(secs => $1) ORDER BY created_at LIMIT $2`,
    [olderThanMs / 1000, limit]);
  return rows.map((r) => r.id);
}

// ---- accepting a send -----------------------------------------------------------------------------------------

export interface SendInput { from_number: string; to_number: string; body: string; sub_entity_id?: string | null }

type BlockReason = 'a2p_registration_required' | 'a2p_registration_pending' | 'a2p_registration_rejected' | 'no_sender';

const NOT_READY: Record<BlockReason, string> = {
  a2p_registration_required: 'Texting needs an approved A2P registration: submit one with POST /v1/sms/registration.',
  a2p_registration_pending: 'The A2P texting registration is still being vetted.',
  a2p_registration_rejected: 'The A2P texting registration was rejected; correct it and submit it again.',
  no_sender: 'from_number is not an active, texting-registered number of your organization.',
};

export function textingNotReady(reason: BlockReason, registrationStatus: RegistrationStatus): DomainError {
  return new DomainError('texting_not_ready', NOT_READY[reason], {
    fields: { reason, registration_status: registrationStatus },
    resolutionHint: reason === 'no_sender' ? 'Use one of your ACTIVE numbers (GET /v1/phone-numbers).' : 'See GET /v1/sms/registration.',
  });
}

/** Segments and encoding of a body, or validation_error when it is longer than MAX_SEGMENTS. */
export function measureBody(body: string, field = 'body') {
  const c = countSegments(body);
  if (c.segments > MAX_SEGMENTS) {
    throw validationError({ [field]: `is ${c.segments} segments (${c.encoding}); at most ${MAX_SEGMENTS} are sent` });
  }
  return c;
}

interface SendState {
  registration_status: RegistrationStatus | null; phone_status: string | null; texting_status: string | null; subscription_active: boolean; opted_out: boolean;
}

export async function acceptSend(db: Db, q: Queue<SendJob>, p: Principal, req: SendInput, within?: WithinTx<MessageRow>): Promise<MessageRow> {
  const bad: Record<string, string> = {};
  if (!isE164(req.from_number)) bad.from_number = 'must be an E.164 number, e.g. +14155550123';
  if (!isE164(req.to_number)) bad.to_number = 'must be an E.164 number, e.g. +12125550187';
  if (Object.keys(bad).length) throw validationError(bad);
  const measured = measureBody(req.body);
  await assertSubEntityForNumber(db, p.organizationId, req.sub_entity_id, req.from_number);
  // A credential limited to a sub-entity sends only from that sub-entity's numbers (so the message lands in it).
  await assertNumberWithinDb(db, p, req.from_number, 'from_number');
  assertWithinBounds(p, ['from_number', req.from_number], [['to_number', req.to_number]]);
  // Demo keys reach only the sandbox's 555 numbers, as on the call paths.
  if (p.isDemo && !isDemoDestination(req.to_number)) {
    throw new DomainError('destination_blocked', 'to_number is not on the demo allowlist (demo keys may only text the sandbox\'s 555 numbers).',
      { fields: { to_number: 'is not on the demo allowlist' }, resolutionHint: 'Use a sandbox number such as +14155550100, or a production key.' });
  }

  // One statement checks the registration, the sender, the plan and the opt-out and inserts the message when all allow it
  // (one round trip on the accept path); a refusal inserts nothing and says which check refused.
  const row = await writeWithin(db, within, async (q) => {
    const r = await q.one<SendState & Partial<MessageRow>>(
      `WITH s AS (
         SELECT r.status AS registration_status, n.status AS phone_status, n.texting_status, o.subscription_active, n.sub_entity_id AS number_sub_entity_id,
                EXISTS (SELECT 1 FROM opt_outs x WHERE x.organization_id = o.id AND x.phone_number = $3 AND x.channel = 'sms'
                           AND x.revoked_at IS NULL) AS opted_out
           FROM organizations o
           LEFT JOIN texting_registrations r ON r.organization_id = o.id
           LEFT JOIN phone_numbers n ON n.organization_id = o.id AND n.phone_number = $2 AND n.status <> 'RELEASED'
          WHERE o.id = $1),
       ins AS (
         INSERT INTO sms_messages (id, organization_id, direction, local_number, remote_number, body, encoding, segments, status, provider, sub_entity_id)
         SELECT $4, $1, 'outbound', $2, $3, $5, $6, $7, 'queued', 'sandbox', COALESCE(s.number_sub_entity_id, $8::uuid) FROM s
          WHERE s.registration_status = 'approved' AND s.phone_status = 'ACTIVE' AND s.texting_status = 'registered'
            AND s.subscription_active AND NOT s.opted_out
         RETURNING *)
       SELECT s.*, ins.* FROM s LEFT JOIN ins ON true`,
      [p.organizationId, req.from_number, req.to_number, uuidv7(), req.body, measured.encoding, measured.segments, req.sub_entity_id ?? null]);
    if (r.id) return r as MessageRow;
    const reg: RegistrationStatus = r.registration_status ?? 'none';
    if (reg !== 'approved') textingBlock(reg);
    if (r.phone_status !== 'ACTIVE' || r.texting_status !== 'registered') throw textingNotReady('no_sender', reg);
    const inactive = subscriptionRefusal(r.subscription_active);
    if (inactive) throw inactive;
    throw new DomainError('recipient_opted_out', `${req.to_number} opted out of SMS from your organization (replied STOP).`,
      { fields: { to_number: 'opted out of SMS from your organization; they can opt back in by replying START' } });
  });
  await enqueueSend(q, [row.id]);
  return row;
}

function textingBlock(reg: Exclude<RegistrationStatus, 'approved'>): never {
  throw textingNotReady(reg === 'none' ? 'a2p_registration_required' : reg === 'pending' ? 'a2p_registration_pending'
    : 'a2p_registration_rejected', reg);
}

export interface NewOutbound {
  organizationId: string; local: string; remote: string; body: string; encoding: Encoding; segments: number;
  autoReplyTo?: string; keyword?: string;
}

export async function insertOutbound(q: Db | Tx, m: NewOutbound): Promise<MessageRow> {
  return q.one(
    `INSERT INTO sms_messages (id, organization_id, direction, local_number, remote_number, body, encoding, segments, status,
                               provider, auto_reply_to, keyword, sub_entity_id)
     VALUES ($1, $2, 'outbound', $3, $4, $5, $6, $7, 'queued', 'sandbox', $8, $9, (SELECT sub_entity_id FROM phone_numbers WHERE organization_id = $2 AND phone_number = $3 AND status <> 'RELEASED')) RETURNING *`,
    [uuidv7(), m.organizationId, m.local, m.remote, m.body, m.encoding, m.segments, m.autoReplyTo ?? null, m.keyword ?? null]);
}

// ---- reading --------------------------------------------------------------------------------------------------

export async function getMessage(db: Db, organizationId: string, id: string): Promise<MessageRow> {
  const row = isUuid(id)
    ? await db.oneOrNone<MessageRow>('SELECT * FROM sms_messages WHERE id = $1 AND organization_id = $2', [id, organizationId])
    : null;
  if (!row) throw notFound(`Message ${id}`);
  return row;
}

export interface MessageFilters { direction?: Direction; status?: MessageStatus; phone_number?: string; local_number?: string; sub_entity_id?: string }

export async function listMessages(db: Db, organizationId: string, f: MessageFilters, p: PageParams): Promise<MessageRow[]> {
  const values: unknown[] = [organizationId];
  let where = 'organization_id = $1';
  const add = (col: string, v: unknown) => { values.push(v); where += ` AND ${col} = $${values.length}`; };
  if (f.direction) add('direction', f.direction);
  if (f.status) add('status', f.status);
  if (f.phone_number) add('remote_number', f.phone_number);
  if (f.local_number) add('local_number', f.local_number);
  if (f.sub_entity_id) add('sub_entity_id', f.sub_entity_id);
  const k = keysetClause('id', p, values.length + 1);
  return db.any(`SELECT * FROM sms_messages WHERE ${where}${k.where}${k.tail}`, [...values, ...k.values]);
}
