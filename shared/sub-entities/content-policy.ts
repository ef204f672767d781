// The one rule of what HIPAA mode withholds. Content is pinned to a compliance boundary when the organization's
// content_policy is 'hipaa' (admin CLI: org limits --content-policy) or when the resource's sub-entity has
// hipaa_mode on. Pinned content is never returned:
//   - call content (transcripts, recordings, their derived analysis): every call-content route answers
//     content_policy_forbidden (assertCallContent; shared/calls/store.ts callForContent is how routes get a call's
//     content), and a call record's recording_url is null (callContentWithheld, shared/calls/views.ts);
//   - call webhooks: their payloads (shared/calls/views.ts callEventPayload) carry no content for any call; the
//     fields a receiver must never see for a pinned call are CALL_CONTENT_FIELDS (test/sub-entities checks both);
//   - SMS bodies: null on list and read routes once the message is no longer queued (smsBodyWithheld);
//   - SMS webhooks (contact_replied; sms_sent, sms_delivered and sms_failed carry no body for any message): a pinned
//     message's payload carries body null and body_withheld true (smsWebhookBody);
//   - documents (GET /v1/documents/{id}/content): the bytes of a document whose sub-entity is in HIPAA mode answer
//     content_policy_forbidden (assertDocumentContent); its metadata stays. Only the sub-entity's mode pins a
//     document: the organization's content_policy is about call and message content and does not.
// Routes ask this module, never the columns themselves.
import type { Db, Tx } from '../db.ts';
import { DomainError } from '../errors.ts';

/** The fields of call content: what a pinned call's API answers and webhooks never carry with a value. */
export const CALL_CONTENT_FIELDS = ['transcript', 'turns', 'analysis', 'summary', 'recording_url', 'recording', 'keywords', 'sentiment'] as const;

/** What decides for many resources of one organization at once (a list): its policy and its HIPAA sub-entities. */
export interface ContentScope {
  organizationHipaa: boolean;
  hipaaSubEntities: ReadonlySet<string>;
}

/** Nothing is pinned (callers that show no content, e.g. a call record read without recordings:read). */
export const OPEN_SCOPE: ContentScope = { organizationHipaa: false, hipaaSubEntities: new Set() };

/** The organization's content scope, in one round trip. */
export async function contentScope(db: Db | Tx, organizationId: string): Promise<ContentScope> {
  const r = await db.one<{ content_policy: string; hipaa: string[] }>(
    `SELECT o.content_policy,
            COALESCE((SELECT array_agg(s.id::text) FROM sub_entities s WHERE s.organization_id = o.id AND s.hipaa_mode), '{}') AS hipaa
       FROM organizations o WHERE o.id = $1`, [organizationId]);
  return { organizationHipaa: r.content_policy === 'hipaa', hipaaSubEntities: new Set(r.hipaa) };
}

/** Whether the content of a resource of that sub-entity (or of none) is withheld. */
export const contentWithheld = (s: ContentScope, subEntityId: string | null): boolean =>
  s.organizationHipaa || (subEntityId !== null && s.hipaaSubEntities.has(subEntityId));

/** Call content (recording_url on a call record) is withheld for this call. */
export const callContentWithheld = (s: ContentScope, c: { sub_entity_id: string | null }) => contentWithheld(s, c.sub_entity_id);

/** An SMS body is withheld once the message left the queue (sent, delivered, undelivered, failed or received). */
export const smsBodyWithheld = (s: ContentScope, m: { sub_entity_id: string | null; status: string }) =>
  m.status !== 'queued' && contentWithheld(s, m.sub_entity_id);

/** The body an SMS webhook payload carries: null for a pinned message (its sub-entity in HIPAA mode, or the
 *  organization's content policy hipaa), whatever its status. */
export const smsWebhookBody = (s: ContentScope, m: { sub_entity_id: string | null; body: string }): { body: string | null; body_withheld: boolean } =>
  (contentWithheld(s, m.sub_entity_id) ? { body: null, body_withheld: true } : { body: m.body, body_withheld: false });

/** Throws content_policy_forbidden when the call's content is pinned (one round trip). */
export async function assertCallContent(db: Db | Tx, organizationId: string, c: { id: string; sub_entity_id: string | null }): Promise<void> {
  const r = await db.one<{ org: boolean; sub: boolean }>(
    `SELECT o.content_policy = 'hipaa' AS org,
            COALESCE((SELECT s.hipaa_mode FROM sub_entities s WHERE s.id = $2 AND s.organization_id = o.id), false) AS sub
       FROM organizations o WHERE o.id = $1`, [organizationId, c.sub_entity_id]);
  if (r.org) {
    throw new DomainError('content_policy_forbidden',
      'Your organization pins call content to a HIPAA boundary; transcripts, recordings and analysis are never returned.');
  }
  if (r.sub) {
    throw new DomainError('content_policy_forbidden', `Call ${c.id} belongs to sub-entity ${c.sub_entity_id}, which is in HIPAA `
      + 'mode: its transcripts, recordings and analysis are never returned.',
    { resolutionHint: 'Read the content inside your HIPAA boundary; HIPAA mode is changed only with compliance:write.' });
  }
}

/** Throws content_policy_forbidden when the document's sub-entity is in HIPAA mode (one round trip; none for a
 *  document of no sub-entity). */
export async function assertDocumentContent(db: Db | Tx, organizationId: string, d: { id: string; sub_entity_id: string | null }): Promise<void> {
  if (d.sub_entity_id === null) return;
  const r = await db.oneOrNone<{ hipaa_mode: boolean }>(
    'SELECT hipaa_mode FROM sub_entities WHERE id = $1 AND organization_id = $2', [d.sub_entity_id, organizationId]);
  if (r?.hipaa_mode) {
    throw new DomainError('content_policy_forbidden', `Document ${d.id} belongs to sub-entity ${d.sub_entity_id}, which is in `
      + 'HIPAA mode: its content is never returned (its metadata is).',
    { resolutionHint: 'Read the content inside your HIPAA boundary; HIPAA mode is changed only with compliance:write.' });
  }
}
