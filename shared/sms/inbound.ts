// An inbound SMS to one of the organization's numbers (the sandbox's POST /v1/sandbox/sms/inbound; a real carrier
// would deliver it by webhook). It is stored (direction inbound, status received) and fires contact_replied in
// the same transaction. A message that is only a keyword (any case, trimmed) also acts, as the CTIA rules want:
//   STOP, UNSUBSCRIBE, CANCEL, END, QUIT  opt the sender out of SMS from the organization (opt_outs, channel sms)
//   START, UNSTOP                         opt the sender back in
//   HELP                                  nothing changes
// and each keyword gets its automatic reply, recorded as an outbound message and sent like any other (the STOP
// confirmation is sent even though the recipient just opted out).
import { contentScope, OPEN_SCOPE, smsWebhookBody, type ContentScope } from '../sub-entities/content-policy.ts';
import type { Db, WithinTx } from '../db.ts';
import { recordOptOut, revokeOptOut } from '../contacts/opt-outs.ts';
import { validationError } from '../errors.ts';
import { recordEvent, wakeRelay } from '../events/outbox.ts';
import { uuidv7 } from '../ids.ts';
import { isE164 } from '../phone/e164.ts';
import type { Queue } from 'bullmq';
import { enqueueSend, insertOutbound, measureBody, type MessageRow, type SendJob } from './messages.ts';
import { countSegments } from './segments.ts';

export type Keyword = 'stop' | 'start' | 'help';

const KEYWORDS: Record<string, Keyword> = {
  STOP: 'stop', UNSUBSCRIBE: 'stop', CANCEL: 'stop', END: 'stop', QUIT: 'stop',
  START: 'start', UNSTOP: 'start',
  HELP: 'help',
};

export const keywordOf = (body: string): Keyword | null => KEYWORDS[body.trim().toUpperCase()] ?? null;

export function autoReplyText(k: Keyword, orgName: string): string {
  switch (k) {
    case 'stop': return `${orgName}: You are unsubscribed and will receive no more messages. Reply START to resubscribe.`;
    case 'start': return `${orgName}: You are resubscribed to messages. Reply STOP to unsubscribe, HELP for help.`;
    case 'help': return `${orgName}: Reply STOP to unsubscribe, START to resubscribe. Msg & data rates may apply.`;
  }
}

export interface InboundInput { from_number: string; to_number: string; body: string }
export interface InboundResult { message: MessageRow; keyword: Keyword | null; reply: MessageRow | null }

/** The payload of contact_replied (the reference does not show it). A HIPAA-pinned message's carries body null and
 *  body_withheld true (the rule: shared/sub-entities/content-policy.ts smsWebhookBody). */
export function contactRepliedData(m: MessageRow, keyword: Keyword | null, content: ContentScope = OPEN_SCOPE) {
  return {
    id: m.id, phone_number: m.remote_number, from_number: m.remote_number, to_number: m.local_number, ...smsWebhookBody(content, m),
    direction: 'inbound', status: m.status, keyword, channel: 'sms', created_at: m.created_at.toISOString(),
  };
}

export async function receiveInbound(db: Db, q: Queue<SendJob>, organizationId: string, input: InboundInput,
  within?: WithinTx<InboundResult>): Promise<InboundResult> {
  const bad: Record<string, string> = {};
  if (!isE164(input.from_number)) bad.from_number = 'must be an E.164 number, e.g. +12125550187';
  if (!isE164(input.to_number)) bad.to_number = 'must be an E.164 number of your organization';
  if (Object.keys(bad).length) throw validationError(bad);
  const measured = measureBody(input.body);
  const keyword = keywordOf(input.body);

  const result = await db.tx('sms-inbound', async (tx) => {
    const to = await tx.oneOrNone<{ org_name: string }>(
      `SELECT o.name AS org_name FROM phone_numbers n JOIN organizations o ON o.id = n.organization_id
        WHERE n.organization_id = $1 AND n.phone_number = $2 AND n.status = 'ACTIVE'`, [organizationId, input.to_number]);
    if (!to) throw validationError({ to_number: 'is not an active number of your organization' });
    const id = uuidv7();
    const message = await tx.one<MessageRow>(
      `INSERT INTO sms_messages (id, organization_id, direction, local_number, remote_number, body, encoding, segments, status,
                                 provider, provider_id, keyword, sub_entity_id)
       VALUES ($1, $2, 'inbound', $3, $4, $5, $6, $7, 'received', 'sandbox', $8, $9, (SELECT sub_entity_id FROM phone_numbers WHERE organization_id = $2 AND phone_number = $3 AND status <> 'RELEASED')) RETURNING *`,
      [id, organizationId, input.to_number, input.from_number, input.body, measured.encoding, measured.segments,
        `SBXIN${id.replace(/-/g, '')}`, keyword]);
    await recordEvent(tx, { organizationId, eventType: 'contact_replied',
      data: contactRepliedData(message, keyword, await contentScope(tx, organizationId)) });
    // A STOP from an opted-out number, or a START from one that is not, changes nothing; either is still answered.
    const from = input.from_number;
    if (keyword === 'stop') await recordOptOut(tx, organizationId, from, 'sms', `sms_keyword:${input.body.trim().toUpperCase()}`);
    if (keyword === 'start') await revokeOptOut(tx, organizationId, from, 'sms');
    let reply: MessageRow | null = null;
    if (keyword) {
      const text = autoReplyText(keyword, to.org_name);
      const c = countSegments(text);
      reply = await insertOutbound(tx, { organizationId, local: input.to_number, remote: input.from_number, body: text,
        encoding: c.encoding, segments: c.segments, autoReplyTo: message.id, keyword });
    }
    const r: InboundResult = { message, keyword, reply };
    if (within) await within(tx, r);
    return r;
  });
  wakeRelay(db);
  if (result.reply) await enqueueSend(q, [result.reply.id]);
  return result;
}
